"""READY is true (issue 11): READY only after the restarted service answered; a failed smoke or health check
puts the whole last good state back (every file byte for byte, the venv link) and the host fails NOT READY;
a play killed at any step of the chain leaves a truthful marker and its last good state. Each fault is
asserted to have hit (the server really refused its flag, the smoke really failed, the play really was in
the step it was killed in). Each test starts from a fresh copy of the converged image (`fresh`).
"""

import json
import os
import re
import signal
import subprocess

import pytest

from ..conftest import ROOT, on_host_until, playbook, playbook_command, workspace
from .test_faults import marker, no_traceback, serving, wait_for_health

pytestmark = pytest.mark.usefixtures("fresh")

UNIT = "sglang-k26.service"
VALIDATE = "sglang-k26-validate.service"
SNAPSHOT = "/var/lib/blackwell-inference/sglang-k26/last-good"
# every file of the service's state (the marker is the record, checked on its own)
STATE_FILES = (
    "/etc/systemd/system/sglang-k26.service.d/50-blackwell-inference.conf",
    "/etc/systemd/system/sglang-k26-validate.service",
    "/etc/blackwell-inference/sglang-k26-validate.json",
)
LAB_COMMAND = ["/opt/sglang/current/bin/python", "/usr/local/libexec/sglang-standin.py", "--host", "0.0.0.0", "--port", "30000"]  # noqa: S104 - the lab's own
# a launch flag the server refuses (argparse exits 2): the smoke passes, the restarted service dies at once (ct200's
# unit has Restart=no), so the health wait ends on the unit's failure, not at its timeout
BAD_FLAG = {"sglang_service_command": [*LAB_COMMAND, "--no-such-flag"], "sglang_service_health_timeout": 600}
# a server that starts and never answers (a hung model load): the health wait runs until its timeout
HANG = {"sglang_service_command": ["/opt/sglang/current/bin/python", "-c", "import time; time.sleep(86400)"], "sglang_service_health_timeout": 120}
NCCL = {"sglang_service_environment": {"NCCL_DEBUG": "WARN"}}
# FlashInfer + torch (no SGLang layer) and one more pin: another venv, built and checked. Its smoke warms FlashInfer's
# quantization module into B's own workspace (a cold build of about a minute of CPU; the server dies of its flag before it would
# load anything), so the rollout really builds into B's workspace without a second cold sampling build in the suite. Without
# bytecode: the server never runs on B, and its check and smoke write what they import (a third of the pip time).
PINS_B = {
    "sglang_venv_packages": ["flashinfer-python==0.7.4", "torch==2.13.0", "tabulate==0.9.0"],
    "sglang_venv_packages_no_deps": [],
    "sglang_venv_check_imports": ["flashinfer", "torch"],
    "sglang_venv_bytecode": False,
    "sglang_service_jit_warm": ["quantization"],
}
CURAND = "/usr/local/cuda-13.0/targets/x86_64-linux/include/curand.h"


def files(run):
    """Checksums of the state files, the venv link, the drop-in directory's listing."""
    return (
        run("md5sum " + " ".join(STATE_FILES)),
        run("readlink /opt/sglang/current"),
        run("ls -A /etc/systemd/system/sglang-k26.service.d/"),
    )


def the_bad_flag_was_refused(run):
    """The fault hit: the restarted server died of the flag (its own argparse message in the journal)."""
    return "unrecognized arguments: --no-such-flag" in run("journalctl -u %s --no-pager -o cat | tail -n 50" % UNIT)


def verify_says_not_ready(state):
    rc, out, _recap = playbook("--tags", "verify")
    no_traceback(out)
    assert rc != 0 and "ct200 is NOT READY (%s)" % state in out, out[-4000:]
    return out


def nothing_lost(run, last_good):
    """The last good state is still complete: its snapshot and its venv."""
    assert run("test -e %s/manifest.json && test -x %s/bin/python && echo y" % (SNAPSHOT, last_good["venv"])).strip() == "y"


def test_health_failure_puts_every_file_and_the_venv_back_and_prune_keeps_the_last_good_venv(run):
    pid, before, m0 = serving(run), files(run), marker(run)
    good = m0["last_good"]["venv"]
    assert m0["ready"] and before[1].strip() == good
    nothing_lost(run, m0["last_good"])
    # issue 57 item 3: the new venv B with a value the service role refuses (an arch list the GPUs are not in). The
    # venv role builds B and moves current onto it; the service role refuses before any change of the service, and
    # puts current back on the venv that serves (the venv role's rollback entry) before it stops
    rc, out, _recap = playbook("--tags", "sglang_venv,sglang_service", extra_vars=dict(PINS_B, sglang_service_arch_list="9.0a"))
    no_traceback(out)
    assert rc != 0 and "sglang_service_arch_list" in out and "The venv link /opt/sglang/current is back on %s." % good in out, out[-4000:]
    # the fault hit: B was built and current moved onto it, then the venv role's rollback entry moved it back
    assert len(run("ls /opt/sglang/venvs").split()) == 2
    assert "sglang venv rolled back: /opt/sglang/current -> %s" % good in run("journalctl -t blackwell-inference --no-pager -o cat")
    assert run("readlink /opt/sglang/current").strip() == good and files(run) == before and serving(run) == pid
    # a new venv B (passes its own check) and a launch flag the server refuses: the smoke passes, health does not
    rc, out, _recap = playbook("--tags", "sglang_venv,sglang_service", extra_vars=dict(BAD_FLAG, **PINS_B))
    no_traceback(out)
    assert the_bad_flag_was_refused(run), "the fault did not hit: the server never ran with the bad flag"
    flat = " ".join(out.split())
    cause = "ct200 is NOT READY: the restarted service did not answer http://127.0.0.1:30000/health: the unit is failed and will not be restarted after"
    assert rc != 0 and cause in flat and "ActiveState=failed SubState=failed Result=exit-code ExecMainStatus=2" in flat, out[-4000:]
    # the fleet summary at the end of the run names the host NOT READY with the same cause
    (row,) = [x for x in out[out.index("BLACKWELL INFERENCE FLEET SUMMARY") :].splitlines() if x.startswith("ct200 ")]
    assert re.search(r" NOT READY +failed at .*did not answer http://127\.0\.0\.1:30000/health", row), row
    waited = re.search(r"will not be restarted after (\d+) s", flat)
    assert int(waited.group(1)) < BAD_FLAG["sglang_service_health_timeout"], "the wait ended on its timeout: " + flat[-2000:]
    # the journal since that start was read (argparse's message is there) and names no known cause for a flag error
    assert "its journal says why" not in flat
    assert "restored the last good state of" in out and "link /opt/sglang/current -> %s" % good in out
    # the venv role's own rollback entry moved the link back (its journal line), not the service role
    assert "sglang venv rolled back: /opt/sglang/current -> %s" % good in run("journalctl -t blackwell-inference --no-pager -o cat")
    # B warmed its own JIT workspace: the last good venv's stayed warm, so the rollback compiles nothing
    assert "its JIT cache re-warmed (nothing to compile); the previous service answers again" in flat, flat[-3000:]
    ws_good = "/var/cache/sglang/jit/" + os.path.basename(good)
    assert workspace(run) == ws_good  # the link is back on the last good venv, and with it its workspace
    assert files(run) == before  # the drop-in, validate unit, its settings and the venv link: byte for byte
    assert serving(run) != pid  # the previous state was restarted, answers, and its start compiled nothing
    m = marker(run)
    assert not m["ready"] and m["phase"] == "failed" and "did not answer" in m["reason"] and "answers again" in m["reason"]
    assert m["last_good"] == m0["last_good"]
    out = verify_says_not_ready("not validated")
    assert "state: not validated (last good state: %s of %s)" % (good, m0["last_good"]["time"]) in out
    # prune after the failed rollout, keep 2, towards a third venv C (a small one: its own check is all it needs to
    # pass): C and the last good one stay, B goes. Through a symlinked sglang_venv_root (issue 47 item 3): the role
    # lists the venvs as /srv/sglang-link/venvs/x while the link and the marker's last good name /opt/sglang/venvs/x
    # (the old prune compared the two spellings, kept C and B, and removed the last good venv)
    pins_c = {"sglang_venv_packages": ["tabulate==0.9.0"], "sglang_venv_packages_no_deps": [], "sglang_venv_check_imports": ["tabulate"], "sglang_venv_keep": 2}
    venvs = run("ls /opt/sglang/venvs").split()
    assert len(venvs) == 2 and os.path.basename(good) in venvs
    workspaces = run("ls /var/cache/sglang/jit").split()
    assert sorted(workspaces) == sorted(venvs), (workspaces, venvs)  # one JIT workspace per venv, B's too
    (b_name,) = set(venvs) - {os.path.basename(good)}
    assert run("ls /var/cache/sglang/jit/%s/.cache/flashinfer/0.7.4/*/cached_ops/quantization/quantization.so" % b_name).strip()  # B's smoke built into it
    run("ln -sfn /opt/sglang /srv/sglang-link")
    rc, out, _recap = playbook("--tags", "sglang_venv", extra_vars=dict(pins_c, sglang_venv_root="/srv/sglang-link"))
    assert rc == 0 and run("readlink /opt/sglang/current").strip().startswith("/srv/sglang-link/venvs/"), out[-4000:]
    left = run("ls /opt/sglang/venvs").split()
    assert os.path.basename(good) in left and len(left) == 2 and not set(venvs) - {os.path.basename(good)} & set(left), (venvs, left)
    # the service role's account phase (for the last good venv; no venv switch, no validation) removes B's workspace
    tags = "sglang_service_preflight,sglang_service_facts,sglang_service_account"
    rc, out, _recap = playbook("--tags", tags, extra_vars={"sglang_service_venv": good})
    assert rc == 0 and "Remove the JIT workspaces of venvs that are gone" in out, out[-4000:]
    assert run("ls /var/cache/sglang/jit").split() == [os.path.basename(good)]
    assert run("test -e %s/.cache/flashinfer/0.7.4/120a/cached_ops/sampling/sampling.so && echo warm" % ws_good).strip() == "warm"
    # (a rerun of a host marked not ready revalidates and is READY: test_ready_boot_lock.py's killed play, and
    # test_foreign_dropin.py once the operator's file is gone)
    # the last good state is whole after the prune: its snapshot, and its venv that the link can go back to (the rollback
    # onto it is the first half of this test)
    nothing_lost(run, m0["last_good"])
    assert run("readlink -f /opt/sglang/current").strip() != good and run("test -x %s/bin/python && echo y" % good).strip() == "y"


def test_smoke_failure_with_changed_units_leaves_every_file_byte_identical(run):
    pid, before = serving(run), files(run)
    run("mv %s /root/curand.h.away" % CURAND)
    try:
        changed = dict(NCCL, sglang_service_smoke_timeout=1700)  # the drop-in, the validate unit and its settings
        rc, out, _recap = playbook("--tags", "sglang_service", extra_vars=changed)
        assert "curand.h: No such file or directory" in out, out[-4000:]  # the fault hit the smoke
        assert rc != 0 and "ct200 is NOT READY: smoke failed" in out and "restored the last good state of" in out
        assert "write /etc/systemd/system/sglang-k26-validate.service" in out
        assert files(run) == before and serving(run) == pid  # never restarted onto it
        assert "NCCL_DEBUG" not in run("systemctl show -p Environment " + UNIT)
        assert "TimeoutStartUSec=1h 30min" in run("systemctl show -p TimeoutStartUSec " + VALIDATE)  # the old unit is loaded
        assert not marker(run)["ready"]
    finally:
        run("test -e %s || mv /root/curand.h.away %s" % (CURAND, CURAND))
    verify_says_not_ready("not validated")  # the toolkit is whole again; the failed change is still not vouched for


def test_a_last_good_venv_that_is_gone_is_not_pointed_at_and_the_failure_says_so(run):
    pid, before = serving(run), files(run)
    current, gone = before[1].strip(), "/opt/sglang/venvs/0000000000000000"
    # the fault: the last good snapshot names a venv that is no longer there (as after an operator removed it by hand)
    run("python3 -c \"import json; p = '%s/manifest.json'; m = json.load(open(p)); m['link']['target'] = '%s'; json.dump(m, open(p, 'w'))\"" % (SNAPSHOT, gone))
    assert json.loads(run("cat %s/manifest.json" % SNAPSHOT))["link"]["target"] == gone and run("test -e %s || echo gone" % gone).strip() == "gone"
    rc, out, _recap = playbook("--tags", "sglang_service", extra_vars=BAD_FLAG)
    no_traceback(out)
    assert the_bad_flag_was_refused(run), "the fault did not hit: the server never ran with the bad flag"
    flat = " ".join(out.split())
    assert rc != 0 and "link /opt/sglang/current NOT put back: the venv %s is gone" % gone in flat, out[-4000:]
    # the venv role's rollback entry left the link on a venv that is there (never a dangling link), and logged nothing
    assert run("readlink /opt/sglang/current").strip() == current and run("test -x /opt/sglang/current/bin/python && echo y").strip() == "y"
    assert "sglang venv rolled back" not in run("journalctl -t blackwell-inference --no-pager -o cat")
    # the files were put back and the previous state answers again on the venv it ran from
    assert "the previous service answers again" in flat, flat[-3000:]
    assert files(run) == before and serving(run) != pid


def kill_play_at(run, task, condition, what, *args, extra_vars=None):
    """Start site.yml; when `task` starts and `condition` (a shell test on the host) holds, SIGKILL the play."""
    cmd, env = playbook_command(*args, extra_vars=extra_vars)
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if task in line:
            on_host_until(run, condition, what)
            os.killpg(proc.pid, signal.SIGKILL)
            break
    proc.wait()
    out = "".join(seen)
    assert task in out and proc.returncode == -signal.SIGKILL, out[-3000:]
    return out


def test_play_killed_after_the_restart_then_the_next_run_is_ready(run):
    pid, m0 = serving(run), marker(run)
    kill_play_at(
        run,
        "blackwell.inference.sglang_service : Wait for the service to answer]",
        'test "$(systemctl show -p MainPID --value %s)" != %s' % (UNIT, pid),
        "the restart",
        "--tags",
        "sglang_service",
        extra_vars=NCCL,
    )
    wait_for_health(run)  # it serves, but no run saw it answer: not ready until one does
    verify_says_not_ready("not validated")
    nothing_lost(run, m0["last_good"])
    assert run("systemctl is-active sglang-k26-rollback.timer || true").strip() == "active"  # the killed run's, armed
    new_pid = run("systemctl show -p MainPID --value %s" % UNIT).strip()
    # issue 57 item 5: the next run finds the validation served by the unit's own process, started after it, and
    # confirms it (the last good state, the marker, the armed rollback stopped) instead of restarting a healthy service
    rc, out, _recap = playbook("--tags", "sglang_service", extra_vars=NCCL)
    assert rc == 0 and "state: validated and serving" in out and "needs a validation" not in out, out[-4000:]
    assert "Confirm a validation the service now serves" in out and "Disarm the host's own rollback (this run confirms" in out, out[-4000:]
    assert run("systemctl show -p MainPID --value %s" % UNIT).strip() == new_pid  # not restarted
    m = marker(run)
    assert m["phase"] == "serving" and m["reason"].endswith("answered (confirmed by a run)"), m
    assert m["last_good"]["inputs"] == m["inputs"] != m0["inputs"], m  # this state is the last good one now
    assert run("systemctl is-active sglang-k26-rollback.timer || true").strip() == "inactive"


def test_play_killed_during_the_health_wait_of_a_state_that_never_answers_is_rolled_back_by_the_host(run):
    """The dead-man switch (issue 57): the play arms the host's own rollback before its restart and is killed in the
    health wait of a state that never answers; nobody runs another play. The host puts the last good state back by
    itself when the armed time runs out, restarts it, and marks the host not ready with what it did."""
    before, m0 = files(run), marker(run)
    kill_play_at(
        run,
        "blackwell.inference.sglang_service : Wait for the service to answer]",
        "pgrep -f '[t]ime[.]sleep[(]86400' >/dev/null && systemctl is-active --quiet %s" % UNIT,
        "the restarted server running without answering",
        "--tags",
        "sglang_service",
        extra_vars=dict(HANG, sglang_service_rollback_after=20),
    )
    # the fault hit: the new state ran without answering and no play was left to confirm it; the armed timer fired
    on_host_until(run, 'grep -q \'"source": "armed rollback\' /etc/ansible/facts.d/blackwell_inference.fact', "the host's own rollback", timeout=90)
    assert "NOT READY: the play did not confirm" in run("journalctl -u sglang-k26-rollback.service --no-pager -o cat")
    m = marker(run)
    assert not m["ready"] and m["phase"] == "failed" and m["last_good"] == m0["last_good"], m
    assert m["reason"].startswith("the play did not confirm the restarted service within 20 s"), m
    assert "the host put back the last good state of " in m["reason"] and "and restarted it" in m["reason"], m
    assert files(run) == before and not run("pgrep -f '[t]ime[.]sleep[(]86400' || true").strip()
    wait_for_health(run)
    serving(run)  # the last good state serves again, compiling nothing
    nothing_lost(run, m0["last_good"])


def test_a_sampled_request_that_fails_after_health_answers_rolls_back_and_the_off_switch_skips_it(run):
    """/health is greedy: a state whose sampled request fails is not ready, even though its health endpoint answers.
    The fault: the sampled request goes to a path the restarted server does not serve (its own HTTP 404 comes back,
    so the request reached it), with a changed environment so that the run validates and restarts. The request is
    this run's, so the previous state, put back and restarted, is asked the same and fails it too: the host stays
    NOT READY with both answers named, its files back as they were."""
    pid, before, m0 = serving(run), files(run), marker(run)
    rc, out, _recap = playbook("--tags", "sglang_service", extra_vars=dict(NCCL, sglang_service_sample_path="/v1/none"))
    no_traceback(out)
    flat = " ".join(out.split())
    # the fault hit: the restarted server answered its health endpoint, and its own 404 for the sampled request came back
    cause = "answered http://127.0.0.1:30000/health but its sampled request to http://127.0.0.1:30000/v1/none failed"
    assert rc != 0 and "ct200 is NOT READY" in flat and cause in flat and "HTTP 404" in flat, out[-4000:]
    assert "restored the last good state of" in out and "the previous service does NOT answer either: it " + cause in flat, flat[-3000:]
    assert files(run) == before and "NCCL_DEBUG" not in run("systemctl show -p Environment " + UNIT)
    assert serving(run) != pid  # the previous state was restarted (twice: onto the new state, then back) and answers
    m = marker(run)
    assert not m["ready"] and m["phase"] == "failed" and "sampled request" in m["reason"] and m["last_good"] == m0["last_good"]
    verify_says_not_ready("not validated")
    # the off switch ({}): the same change validates on /health alone, and no sampled request is sent
    pid = serving(run)
    rc, out, _recap = playbook("--tags", "sglang_service", extra_vars=dict(NCCL, sglang_service_sample_path="/v1/none", sglang_service_sample_request={}))
    assert rc == 0 and "state: validated and serving" in out, out[-4000:]
    wait = out[out.index("sglang_service : Wait for the service to answer]") :]
    wait = wait[: wait.index("TASK [", 1)]
    assert "/v1/none" not in wait and "sampled request ok" not in out, wait  # asked /health only
    assert "NCCL_DEBUG=WARN" in run("systemctl show -p Environment " + UNIT) and serving(run) != pid
    assert marker(run)["ready"]
