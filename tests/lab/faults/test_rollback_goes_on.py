"""Rollback goes on past its first error (issue 45 item 7), on the converged ct200.

Two faults at once: a change (NCCL_DEBUG, and a launch flag the server refuses) whose restarted service dies, so the
last good state is put back; and that state's snapshot has lost its copy of one file (the boot validator's settings),
so one restore step really fails. The rollback goes on: the other files are put back byte for byte, systemd is
reloaded, the last good state is restarted and answers again, and the marker says `ready: false, phase: failed`
naming the file that was not put back. The play's one failure names the cause, what was put back and the failed step.
"""

import json

from ..conftest import playbook
from .test_faults import marker, no_traceback, serving
from .test_ready_rollback import BAD_FLAG, NCCL, SNAPSHOT, UNIT, the_bad_flag_was_refused

DROPIN = "/etc/systemd/system/sglang-k26.service.d/50-blackwell-inference.conf"
VALIDATE_UNIT = "/etc/systemd/system/sglang-k26-validate.service"
SETTINGS = "/etc/blackwell-inference/sglang-k26-validate.json"


def test_a_restore_step_that_fails_does_not_stop_the_rollback(run):
    pid, m0 = serving(run), marker(run)
    before = {f: run("md5sum " + f).split()[0] for f in (DROPIN, VALIDATE_UNIT, SETTINGS)}
    manifest = json.loads(run("cat %s/manifest.json" % SNAPSHOT))
    blob = "%s/%s" % (SNAPSHOT, manifest["files"][SETTINGS]["blob"])
    run("rm %s && test ! -e %s" % (blob, blob))  # the snapshot's copy of the settings is gone
    rc, out, _recap = playbook("--tags", "sglang_service", extra_vars=dict(NCCL, **BAD_FLAG))
    no_traceback(out)
    flat = " ".join(out.split())
    # the first fault hit: the new state's server died of its flag, so the rollback ran
    assert the_bad_flag_was_refused(run), "the fault did not hit: the server never ran with the bad flag"
    assert rc != 0 and "ct200 is NOT READY: the restarted service did not answer" in flat, out[-4000:]
    # the second hit: the settings could not be put back (they are still the failed change's), and the failure says so
    failed = "put back the files: write %s: [Errno 2] No such file or directory" % SETTINGS
    assert "1 restore step failed (the others ran): - " + failed in flat, flat[-4000:]
    assert "restored the last good state of %s in part (" % manifest["time"] in flat and "write %s NOT put back" % SETTINGS in flat
    assert run("md5sum " + SETTINGS).split()[0] != before[SETTINGS]
    # and the rollback went on: the other files are back byte for byte, systemd reloaded them, the last good state
    # was restarted on them and answers again
    assert {f: run("md5sum " + f).split()[0] for f in (DROPIN, VALIDATE_UNIT)} == {f: before[f] for f in (DROPIN, VALIDATE_UNIT)}
    assert "write %s" % DROPIN in flat
    assert "NCCL_DEBUG" not in run("systemctl show -p Environment " + UNIT)  # the daemon-reload ran
    assert "--no-such-flag" not in run("systemctl show -p ExecStart " + UNIT)
    assert "the previous service answers again" in flat and serving(run) != pid, flat[-3000:]
    # the failed marker was written, naming the cause and the step that failed; the last good state stays last good
    m = marker(run)
    assert not m["ready"] and m["phase"] == "failed", m
    assert "did not answer" in m["reason"] and "restore steps that failed: " + failed in m["reason"], m["reason"]
    assert m["last_good"] == m0["last_good"]
    (row,) = [x for x in out[out.index("BLACKWELL INFERENCE FLEET SUMMARY") :].splitlines() if x.startswith("ct200 ")]
    assert " NOT READY " in row, row
