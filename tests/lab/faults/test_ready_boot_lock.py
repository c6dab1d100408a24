"""READY is true (issue 11), continued: the boot path on a real cold boot of ct200 from its disk, and two plays against
the host at once. Each test starts from a fresh copy of the converged image and asserts its fault hit (the validation
really failed, the service really was silent, the first play really held the lock). A boot test's fault is done to the
disk before that boot (`labctl.sh reset NAME INDEX FAULT`: the fresh copy, the fault, then the boot), not by booting,
changing and power cycling: the boot units meet the fault as they would after a power cycle.
"""

import json
import subprocess

from prometheus_client.parser import text_string_to_metric_families

from ..conftest import LAB_HOST, LAB_INDEX, ROOT, _labctl, on_host_until, playbook, playbook_command, sampling_library
from .test_faults import marker, serving, wait_for_health
from .test_ready_rollback import NCCL, UNIT, VALIDATE, kill_play_at, verify_says_not_ready

LOCK = "/run/blackwell-inference/play.lock"
READY = "sglang-k26-ready.service"
# the service answers a while after it started (the stand-in's lab knob, a slow model load; a variable the role does not
# set, so not an override of its environment), so the marker can be read between the validation and the answer
SLOW = "/etc/systemd/system/sglang-k26.service.d/90-lab-slow-start.conf"


# node_exporter's textfile collector (the lab's sglang_service_textfile_dir), written wherever the marker is
TEXTFILE = "/var/lib/node_exporter/textfile_collector/blackwell_inference_sglang-k26.prom"


def textfile_says_what_the_marker_says(run, m):
    """The textfile, read as Prometheus reads it (prometheus_client's parser), says what the marker m says."""
    assert run("stat -c %a " + TEXTFILE).strip() == "644"
    got = {(s.name, tuple(sorted(s.labels.items()))): s.value for f in text_string_to_metric_families(run("cat " + TEXTFILE)) for s in f.samples}
    svc = ("service", "sglang-k26.service")
    assert got[("blackwell_inference_ready", (svc,))] == (1 if m["ready"] else 0), got
    assert {k[1][0][1]: v for k, v in got.items() if k[0] == "blackwell_inference_phase"}[m["phase"]] == 1, got
    assert sum(v for k, v in got.items() if k[0] == "blackwell_inference_phase") == 1, got
    info = {dict(k[1]).get("verdict"): dict(k[1]) for k in got if k[0] == "blackwell_inference_flashinfer_info"}
    assert info["ACCEPTED"]["version"] == m["versions"]["flashinfer-python"] and info["ACCEPTED"]["archs"] == m["archs"], got
    cuda = [dict(k[1]) for k in got if k[0] == "blackwell_inference_cuda_info"]
    assert cuda == [{"service": svc[1], "cuda_home": m["toolkit"]["cuda_home"], "version": m["toolkit"]["cuda_version"]}], got
    stamp = run("date -u -d %s +%%s" % m["validated_at"]).strip()
    assert got[("blackwell_inference_last_validation_timestamp_seconds", (svc,))] == float(stamp), got
    if m.get("answered_at"):
        stamp = run("date -u -d %s +%%s" % m["answered_at"]).strip()
        assert got[("blackwell_inference_last_answer_timestamp_seconds", (svc,))] == float(stamp), got
    return got


GATE = "/run/sglang-standin-loaded"  # /run: gone at each boot, so a power cycle starts with the load held


def slow_start(run):
    """The service's load lasts until the test opens the gate (open_gate): a slow model load, no fixed wait."""
    run("rm -f %s && printf '[Service]\\nEnvironment=SGLANG_STANDIN_START_GATE=%s\\n' > %s && systemctl daemon-reload" % (GATE, GATE, SLOW))


def open_gate(run):
    run("touch " + GATE)


ASKS = "python3 -c 'import urllib.request; urllib.request.urlopen(\"http://127.0.0.1:30000/health\", timeout=2)' 2>/dev/null"


def ended(run, unit, timeout=600):
    """The unit's process ended (the validator: oneshot; the ready unit: simple; both RemainAfterExit)."""
    on_host_until(run, "systemctl show -p SubState --value %s | grep -Eq '^(exited|failed)$'" % unit, "%s's end" % unit, timeout=timeout)


def cold_boot(lab, run, fault=None, wait_ready=True):
    """A cold boot of a fresh copy of the converged image, `fault` (a shell command) done to its disk first."""
    lab.fresh = False  # first: a reset that fails leaves no host the next test could take for fresh
    _labctl("reset", LAB_HOST, LAB_INDEX, *([fault] if fault else []))
    ended(run, VALIDATE)
    if wait_ready:
        ended(run, READY)  # the answer check after the service started (it ends at once when the validation failed)


def started_after_the_validation(run):
    """The service started after the validation ended (monotonic timestamps of this boot)."""
    done = int(run("systemctl show -p ExecMainExitTimestampMonotonic --value " + VALIDATE).strip())
    wait_for_health(run)
    started = int(run("systemctl show -p ExecMainStartTimestampMonotonic --value " + UNIT).strip())
    assert 0 < done <= started, (done, started)


def test_reboot_with_a_warm_cache_starts_after_the_validation_without_compiling(lab, run):
    cold_boot(lab, run)
    started_after_the_validation(run)
    m = marker(run)
    assert m["ready"] and m["source"] == "boot validation (sglang-k26.service)" and m["phase"] == "serving", m
    assert "answered after boot (sampled request answered" in m["reason"], m
    assert [w["compiled"] for w in m["smoke"]["warm"]["modules"]] == [False]  # 0 compiles in the validation
    serving(run)  # and 0 in the service's start (FlashInfer's build log)
    rc, out, recap = playbook("--tags", "verify")
    assert rc == 0 and "state: validated and serving" in out and recap["changed"] == 0, out[-4000:]


# the fault: the JIT cache lost the sampling module's library (its objects kept, so ninja links it again instead of four
# minutes of CUDA compiles: the validation's rebuild path is the same; a whole cold workspace is the scenario's converge)
LIBRARY_GONE = 'rm "/var/cache/sglang/jit/$(basename "$(readlink /opt/sglang/current)")/.cache/flashinfer/0.7.4/120a/cached_ops/sampling/sampling.so"'


def test_reboot_with_a_jit_library_gone_rebuilds_it_before_the_service_starts(lab, run):
    cold_boot(lab, run, LIBRARY_GONE)
    started_after_the_validation(run)
    assert run("test -e %s && echo warm" % sampling_library(run)).strip() == "warm"
    m = marker(run)
    assert m["ready"] and [w["compiled"] for w in m["smoke"]["warm"]["modules"]] == [True]  # the validation built it
    assert "sglang-k26.service: VALIDATED, waiting for its answer" in run("journalctl -u %s -b --no-pager -o cat" % VALIDATE)
    assert "sglang-k26.service: READY: serving" in run("journalctl -u %s -b --no-pager -o cat" % READY)
    serving(run)  # the service itself compiled nothing


def test_reboot_with_the_toolkit_broken_keeps_the_service_down_and_not_ready(lab, run):
    try:
        cold_boot(lab, run, "mv /usr/local/cuda-13.0/bin/nvcc /root/nvcc.away")
        assert run("test -e /usr/local/cuda-13.0/bin/nvcc || echo gone").strip() == "gone"  # the fault is on the disk
        assert run("systemctl show -p ActiveState --value " + VALIDATE).strip() == "failed"  # the fault hit the validation
        assert run("systemctl show -p ActiveState --value " + UNIT).strip() != "active"  # never started on it
        assert "sglang-k26.service: NOT READY (smoke failed" in run("journalctl -u %s -b --no-pager -o cat" % VALIDATE)
        m = marker(run)
        assert not m["ready"] and m["source"] == "boot validation (sglang-k26.service)", m
        assert m["last_good"]["venv"] == run("readlink /opt/sglang/current").strip(), m  # the last good state kept
        rc, out, _recap = playbook("--tags", "verify")
        assert rc != 0 and "/usr/local/cuda-13.0: nvcc reports" in out, out[-4000:]  # the toolkit's own check names it
    finally:
        run("test -e /usr/local/cuda-13.0/bin/nvcc || mv /root/nvcc.away /usr/local/cuda-13.0/bin/nvcc")
    verify_says_not_ready("not validated")  # the toolkit is whole again; the boot found it broken and nothing revalidated since


def test_a_power_cycle_is_ready_only_once_the_service_answers(lab, run):
    # the service's load held until the test opens the gate (GATE is in /run: not there at boot)
    cold_boot(lab, run, "printf '[Service]\\nEnvironment=SGLANG_STANDIN_START_GATE=%s\\n' > %s" % (GATE, SLOW), wait_ready=False)
    # validated, the service still starting: not ready, and the answer check is waiting for it
    m = marker(run)
    assert run("systemctl show -p ActiveState --value %s" % UNIT).strip() == "active", m  # started (Type=simple) ...
    assert run("%s || echo silent" % ASKS).strip() == "silent", m  # ... and the fault hit: it does not answer yet
    assert m["ready"] is False and m["phase"] == "validated" and m["reason"].endswith("waiting for the service to answer"), m
    assert run("systemctl show -p SubState --value %s" % READY).strip() == "running"  # the boot did not wait for it
    before = textfile_says_what_the_marker_says(run, m)  # the boot validator wrote it with the marker: not ready yet
    assert before[("blackwell_inference_ready", (("service", "sglang-k26.service"),))] == 0
    open_gate(run)  # the load ends
    ended(run, READY)
    m = marker(run)
    assert m["ready"] is True and m["phase"] == "serving" and run("systemctl show -p SubState --value %s" % READY).strip() == "exited", m
    after = textfile_says_what_the_marker_says(run, m)  # and the answer check with its marker: ready, answered this boot
    validated = float(run("date -u -d %s +%%s" % m["validated_at"]).strip())
    assert after[("blackwell_inference_last_answer_timestamp_seconds", (("service", "sglang-k26.service"),))] >= validated
    serving(run)


def test_a_play_killed_in_the_health_wait_after_the_validator_ran_again_is_not_ready_then_converges(fresh, run):
    m0 = marker(run)
    run("systemctl stop %s" % VALIDATE)  # inactive, as after a failed boot validation (the service stops with it)
    slow_start(run)
    kill_play_at(
        run,
        "blackwell.inference.sglang_service : Wait for the service to answer]",
        "systemctl is-active --quiet %s" % VALIDATE,  # the restart started the validator again (Requires=)
        "the validator run by the restart",
        "--tags",
        "sglang_service",
        extra_vars=NCCL,
    )
    m = marker(run)
    # the fault hit: the validator wrote this run's validation, and the service has not answered
    assert m["source"] == "boot validation (sglang-k26.service)" and m["phase"] == "validated", m
    assert m["ready"] is False and m["last_good"] == m0["last_good"], m
    assert run("%s || echo silent" % ASKS).strip() == "silent"
    run("rm -f %s && systemctl daemon-reload" % SLOW)
    rc, out, _recap = playbook("--tags", "sglang_service", extra_vars=NCCL)
    assert rc == 0 and "state: validated and serving" in out, out[-4000:]
    assert marker(run)["ready"] is True


# -- two plays against the same host at once ---------------------------------------------------------


def test_a_second_play_waits_for_the_first_or_refuses_naming_it_and_never_interleaves(fresh, run):
    cmd, env = playbook_command("--tags", "sglang_service", extra_vars=NCCL)  # a revalidation and a restart
    first = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    on_host_until(run, "grep -q '\"pid\": %d,' %s" % (first.pid, LOCK), "the first play holding the lock")  # the fault hits
    assert json.loads(run("cat " + LOCK))["play"] == "Provision Blackwell inference hosts"
    rc, out, recap = playbook(extra_vars={"blackwell_inference_lock_timeout": 3})
    assert rc != 0 and "ct200 is being provisioned by another play: root@" in out and "pid %d since" % first.pid in out, out[-4000:]
    assert recap["changed"] == 0
    rc, out, _recap = playbook("--tags", "verify", extra_vars=NCCL)  # started while the first is inside its change
    first_out = first.communicate()[0]
    assert first.returncode == 0, first_out[-4000:]
    # it waited: it read the host only after the first play's validation, restart and health check
    assert rc == 0 and "state: validated and serving" in out, out[-4000:]
    assert run("test -e %s && echo held || echo free" % LOCK).strip() == "free"  # given back


# -- READY kept true over time: the check timer -------------------------------------------------------------------

CHECK = "sglang-k26-check.service"
CHECK_TIMER = "sglang-k26-check.timer"


def test_the_check_timer_sees_a_hang_after_ready_and_the_answer_back(run):
    """Issue 57 item 5: a service that stops answering after READY reaches the marker and the textfile at the next look,
    and its answer back turns them ready again. The lab's period is an hour (its faults are not judged between a
    test's steps), so the test starts the check's own unit, as the timer does, instead of waiting for the period. It
    follows the two plays above, which leave the host validated and serving."""
    assert run("systemctl is-active %s; systemctl is-enabled %s" % (CHECK_TIMER, CHECK_TIMER)).split() == ["active", "enabled"]
    assert run("systemctl show -p TimersMonotonic --value %s" % CHECK_TIMER).count("OnUnitActiveUSec") == 1
    m0 = marker(run)
    assert m0["ready"] is True and m0["phase"] == "serving", m0
    pid = run("systemctl show -p MainPID --value %s" % UNIT).strip()
    run("kill -STOP %s" % pid)  # hung: it holds the port and answers nothing
    try:
        assert run("%s || echo silent" % ASKS).strip() == "silent"  # the fault hit
        run("systemctl start %s" % CHECK)  # one look, as the timer starts it
        m = marker(run)
        assert m["ready"] is False and m["phase"] == "not serving" and m["source"] == "check timer (sglang-k26.service)", m
        assert m["reason"].startswith("the service does not answer http://127.0.0.1:30000/health"), m
        assert m["inputs"] == m0["inputs"] and m["last_good"] == m0["last_good"], m  # what was validated is kept
        got = textfile_says_what_the_marker_says(run, m)
        assert got[("blackwell_inference_last_check_timestamp_seconds", (("service", "sglang-k26.service"),))] > 0, got
        assert "NOT READY" in run("journalctl -u %s --no-pager -o cat -n 5" % CHECK)
    finally:
        run("kill -CONT %s" % pid)
    wait_for_health(run)
    run("systemctl start %s" % CHECK)
    m = marker(run)
    assert m["ready"] is True and m["phase"] == "serving" and m["reason"].endswith("; answered (check timer)"), m
    assert run("systemctl show -p MainPID --value %s" % UNIT).strip() == pid  # the service itself was never touched
    textfile_says_what_the_marker_says(run, m)
