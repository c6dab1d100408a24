"""READY is true (issue 11): a service that does not come back is never reported ready, every failure puts the
whole last good state back, and the boot path validates before the service starts. Each test asserts its fault
really hit (the unit really failed, the play really was inside the step it was killed in), then that the next
run tells the truth. The file starts from a fresh copy of the converged image and leaves ct200 ready.
"""

import json
import os
import signal
import subprocess

from ..conftest import LAB_HOST, LAB_INDEX, ROOT, _labctl, on_host_until, playbook, playbook_command
from .test_faults import marker, no_traceback, serving, wait_for_health

UNIT = "sglang-k26.service"
VALIDATE = "sglang-k26-validate.service"
SNAPSHOT = "/var/lib/blackwell-inference/sglang-k26/last-good"
# every file of the service's state (the marker is the record, checked on its own)
STATE_FILES = (
    "/etc/systemd/system/sglang-k26.service.d/50-blackwell-inference.conf",
    "/etc/systemd/system/sglang-k26-validate.service",
    "/etc/blackwell-inference/sglang-k26-validate.json",
)
LAB_COMMAND = ["/opt/sglang/current/bin/python", "/usr/local/libexec/sglang-standin.py", "--host", "0.0.0.0", "--port", "30000"]  # noqa: S104 - the lab inventory's own
# a launch flag the server refuses (argparse exits 2): the smoke passes, the restarted service never answers
BAD_FLAG = {"sglang_service_command": [*LAB_COMMAND, "--no-such-flag"], "sglang_service_health_timeout": 20}
CURAND = "/usr/local/cuda-13.0/targets/x86_64-linux/include/curand.h"
SAMPLING = "/var/cache/sglang/.cache/flashinfer/0.7.4/120f/cached_ops/sampling/sampling.so"


def files(run):
    """Checksums of the state files and the snapshot, the venv link, the drop-in directory's listing."""
    return (
        run("md5sum " + " ".join(STATE_FILES)),
        run("readlink /opt/sglang/current"),
        run("ls -A /etc/systemd/system/sglang-k26.service.d/"),
    )


def the_bad_flag_was_refused(run):
    """The fault hit: the restarted server died of the flag (its own argparse message in the journal)."""
    return "unrecognized arguments: --no-such-flag" in run("journalctl -u %s --no-pager -o cat | tail -n 50" % UNIT)


def ready_again(run):
    rc, out, _recap = playbook()
    assert rc == 0 and "state: validated and serving" in out, out[-4000:]
    m = marker(run)
    assert m["ready"] and m["phase"] == "serving"
    serving(run)
    return m


def verify_says_not_ready(state):
    rc, out, _recap = playbook("--tags", "verify")
    no_traceback(out)
    assert rc != 0 and "ct200 is NOT READY (%s)" % state in out, out[-4000:]
    return out


def test_health_failure_after_the_restart_puts_the_previous_state_back(run):
    pid, before, m0 = serving(run), files(run), marker(run)
    assert m0["ready"] and m0["last_good"] and run("test -e %s/manifest.json && echo y" % SNAPSHOT).strip() == "y"
    rc, out, _recap = playbook(extra_vars=BAD_FLAG)
    no_traceback(out)
    assert the_bad_flag_was_refused(run), "the fault did not hit: the server never ran with the bad flag"
    assert rc != 0 and "ct200 is NOT READY: the restarted service did not answer http://127.0.0.1:30000/health within 20 s" in out, out[-4000:]
    assert "restored the last good state of" in out and "the previous service answers again" in out
    assert files(run) == before  # the drop-in, validate unit, its settings and the venv link: byte for byte
    assert serving(run) != pid  # the previous state was restarted and answers
    m = marker(run)
    assert not m["ready"] and m["phase"] == "failed" and "did not answer" in m["reason"]
    assert m["last_good"] == m0["last_good"]
    out = verify_says_not_ready("not validated")
    assert "state: not validated (last good state: %s of %s)" % (m0["last_good"]["venv"], m0["last_good"]["time"]) in out
    m1 = ready_again(run)  # the cause removed: a plain run revalidates, restarts and is READY
    assert m1["last_good"]["time"] > m0["last_good"]["time"]
    rc, out, recap = playbook()
    assert rc == 0 and recap["changed"] == 0, out[-4000:]


def test_smoke_failure_with_changed_units_leaves_every_file_byte_identical(run):
    pid, before = serving(run), files(run)
    run("mv %s /root/curand.h.away" % CURAND)
    try:
        changed = {"sglang_service_environment": {"NCCL_DEBUG": "WARN"}, "sglang_service_smoke_timeout": 1700}  # drop-in, validate unit, settings
        rc, out, _recap = playbook("--tags", "sglang_service", extra_vars=changed)
        assert "curand.h: No such file or directory" in out, out[-4000:]  # the fault hit the smoke
        assert rc != 0 and "ct200 is NOT READY: smoke failed" in out and "restored the last good state of" in out
        assert "write /etc/systemd/system/sglang-k26-validate.service" in out
        assert files(run) == before and serving(run) == pid  # never restarted onto it
        assert "NCCL_DEBUG" not in run("systemctl show -p Environment " + UNIT)
        assert "TimeoutStartUSec=1h 30min" in run("systemctl show -p TimeoutStartUSec " + VALIDATE)  # the old value is loaded
        rc, out, _recap = playbook("--tags", "verify")
        assert rc != 0 and "curand headers: False" in out, out[-4000:]  # the toolkit's own check names it first
    finally:
        run("test -e %s || mv /root/curand.h.away %s" % (CURAND, CURAND))
    verify_says_not_ready("not validated")  # the toolkit is whole again, the failed change is still not vouched for
    ready_again(run)


def kill_play_at(run, task, condition, what, extra_vars=None):
    """Start site.yml; when `task` starts and `condition` (a shell test on the host) holds, SIGKILL the play."""
    cmd, env = playbook_command(extra_vars=extra_vars)
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


def test_play_killed_after_the_validation_marker(run):
    m0 = marker(run)
    kill_play_at(
        run,
        "blackwell.inference.sglang_service : Restart the service on the validated state]",
        'grep -q \'"phase": "validated"\' /etc/ansible/facts.d/blackwell_inference.fact',
        "the marker of the validation",
        extra_vars={"sglang_service_environment": {"NCCL_DEBUG": "WARN"}},
    )
    m = marker(run)
    assert not m["ready"] and m["phase"] == "validated" and m["last_good"] == m0["last_good"]  # validated is not ready
    verify_says_not_ready("not validated")
    assert run("test -e %s/manifest.json && echo y" % SNAPSHOT).strip() == "y"  # the last good state is still there
    ready_again(run)


def test_play_killed_during_the_health_wait_of_a_failing_state(run):
    m0 = marker(run)
    kill_play_at(
        run,
        "blackwell.inference.sglang_service : Wait for the service to answer]",
        "journalctl -u %s --no-pager -o cat | grep -q 'unrecognized arguments: --no-such-flag'" % UNIT,
        "the restarted server refusing its flag",
        extra_vars=dict(BAD_FLAG, sglang_service_health_timeout=120),
    )
    m = marker(run)
    assert not m["ready"] and m["last_good"] == m0["last_good"]
    verify_says_not_ready("not validated")  # the new state is running (and failing), nothing vouches for it
    ready_again(run)  # the next plain run puts the wanted state in place, validates it and is READY


def test_play_killed_after_the_restart_of_a_good_state(run):
    pid = serving(run)
    kill_play_at(
        run,
        "blackwell.inference.sglang_service : Wait for the service to answer]",
        'test "$(systemctl show -p MainPID --value %s)" != %s' % (UNIT, pid),
        "the restart",
        extra_vars={"sglang_service_environment": {"NCCL_DEBUG": "WARN"}},
    )
    wait_for_health(run)  # it serves, but no run saw it answer: not ready until one does
    verify_says_not_ready("not validated")
    rc, out, _recap = playbook(extra_vars={"sglang_service_environment": {"NCCL_DEBUG": "WARN"}})
    assert rc == 0 and "needs a validation: marked not ready" in out and "state: validated and serving" in out, out[-4000:]
    ready_again(run)


def test_prune_after_a_failed_rollout_keeps_the_last_good_venv(run):
    good = marker(run)["last_good"]["venv"]
    pins_b = {"sglang_venv_packages": ["flashinfer-python==0.7.4", "torch==2.13.0", "tabulate==0.9.0"]}
    rc, out, _recap = playbook(extra_vars=dict(BAD_FLAG, **pins_b))  # a new venv B that passes its check, then fails health
    assert rc != 0 and "restored the last good state of" in out and the_bad_flag_was_refused(run), out[-4000:]
    assert run("readlink /opt/sglang/current").strip() == good
    # a venv-only run to a third venv C with keep 2: C and B are the two newest; the last good one stays
    pins_c = {"sglang_venv_packages": ["tabulate==0.9.0", "flashinfer-python==0.7.4", "torch==2.13.0"], "sglang_venv_keep": 2}
    rc, out, _recap = playbook("--tags", "sglang_venv", extra_vars=pins_c)
    assert rc == 0, out[-4000:]
    venvs = run("ls /opt/sglang/venvs").split()
    assert os.path.basename(good) in venvs and len(venvs) == 2, venvs  # B removed, not the last good A
    rc, out, _recap = playbook(extra_vars={"sglang_venv_keep": 1})
    assert rc != 0 and "sglang_venv_keep: >= 2" in out, out[-4000:]
    ready_again(run)
    assert run("readlink /opt/sglang/current").strip() == good


# -- two plays against the same host at once ---------------------------------------------------------

LOCK = "/run/blackwell-inference/play.lock"
NCCL = {"sglang_service_environment": {"NCCL_DEBUG": "WARN"}}


def start_play(extra_vars):
    cmd, env = playbook_command(extra_vars=extra_vars)
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def held_by(run, proc):
    """The fault hit: the first play (this very process) holds the host's lock."""
    on_host_until(run, "grep -q '\"pid\": %d,' %s" % (proc.pid, LOCK), "the first play holding the lock")
    return json.loads(run("cat " + LOCK))


def test_a_second_play_waits_for_the_first_and_never_interleaves(run):
    first = start_play(NCCL)  # a revalidation and a restart
    holder = held_by(run, first)
    assert holder["play"] == "Provision Blackwell inference hosts"
    rc, out, _recap = playbook("--tags", "verify", extra_vars=NCCL)  # started while the first is inside its change
    first_out = first.communicate()[0]
    assert first.returncode == 0, first_out[-4000:]
    # it waited: it read the host only after the first play's validation, restart and health check
    assert rc == 0 and "ct200 is ready (validated and serving)" in out, out[-4000:]
    assert run("test -e %s && echo held || echo free" % LOCK).strip() == "free"  # both gave it back
    ready_again(run)


def test_a_second_play_that_cannot_wait_refuses_naming_the_first(run):
    first = start_play(NCCL)
    held_by(run, first)
    rc, out, recap = playbook(extra_vars={"blackwell_inference_lock_timeout": 3})
    assert rc != 0 and "ct200 is being provisioned by another play: root@" in out and "pid %d since" % first.pid in out, out[-4000:]
    assert recap["changed"] == 0
    first_out = first.communicate()[0]
    assert first.returncode == 0 and marker(run)["ready"], first_out[-4000:]  # the first was not disturbed
    ready_again(run)


# -- the boot path: a real power cycle of ct200 (the disk is kept) -----------------------------------


def reboot(run):
    _labctl("reboot", LAB_HOST, LAB_INDEX)
    on_host_until(run, "systemctl show -p ActiveState --value %s | grep -Eq '^(active|failed)$'" % VALIDATE, "the boot validation ending", timeout=600)


def started_after_validation(run):
    """The service's start came after the validation ended (monotonic timestamps of this boot)."""
    done = int(run("systemctl show -p ExecMainExitTimestampMonotonic --value " + VALIDATE).strip())
    wait_for_health(run)
    started = int(run("systemctl show -p ExecMainStartTimestampMonotonic --value " + UNIT).strip())
    assert 0 < done <= started, (done, started)


def test_reboot_with_a_warm_cache_starts_after_the_validation_without_compiling(run):
    boot_id = run("cat /proc/sys/kernel/random/boot_id")
    reboot(run)
    assert run("cat /proc/sys/kernel/random/boot_id") != boot_id  # a real power cycle
    started_after_validation(run)
    m = marker(run)
    assert m["ready"] and m["source"] == "boot validation (sglang-k26.service)"
    assert [w["compiled"] for w in m["smoke"]["warm"]["modules"]] == [False]  # 0 compiles in the validation
    serving(run)  # and 0 in the service's start (FlashInfer's build log)
    rc, out, recap = playbook("--tags", "verify")
    assert rc == 0 and "state: validated and serving" in out and recap["changed"] == 0, out[-4000:]


def test_reboot_with_the_jit_cache_wiped_rewarms_before_the_service_starts(run):
    run("rm -rf /var/cache/sglang/.cache")
    reboot(run)
    started_after_validation(run)
    assert run("test -e %s && echo warm" % SAMPLING).strip() == "warm"
    m = marker(run)
    assert m["ready"] and [w["compiled"] for w in m["smoke"]["warm"]["modules"]] == [True]  # the validation built it
    serving(run)  # the service itself compiled nothing


def test_reboot_with_the_toolkit_broken_keeps_the_service_down_and_not_ready(run):
    run("mv /usr/local/cuda-13.0/bin/nvcc /root/nvcc.away")
    try:
        reboot(run)
        assert run("systemctl show -p ActiveState --value " + VALIDATE).strip() == "failed"  # the fault hit the validation
        assert run("systemctl show -p ActiveState --value " + UNIT).strip() != "active"  # never started on it
        assert "sglang-k26.service: NOT READY" in run("journalctl -u %s -b --no-pager -o cat" % VALIDATE)
        m = marker(run)
        assert not m["ready"] and m["source"] == "boot validation (sglang-k26.service)"
        rc, out, _recap = playbook("--tags", "verify")
        assert rc != 0 and "NOT READY" in out, out[-4000:]
    finally:
        run("test -e /usr/local/cuda-13.0/bin/nvcc || mv /root/nvcc.away /usr/local/cuda-13.0/bin/nvcc")
    ready_again(run)
