"""Fault injection on ct200 after converge: the faults a fleet meets, and nothing may be lost.

Each test injects one fault, checks the answer is clear (no traceback) and that the service kept
serving its previous state, then removes the fault and checks the next run converges. Every test
leaves ct200 ready for the next one. The file starts from a fresh copy of the converged image; the kill -9
faults are in test_faults_kill.py.
"""

import json
import subprocess

import pytest

from ..conftest import ROOT, on_host_until, playbook, playbook_command, sampling_library

UNIT = "sglang-k26.service"
PKG = "libcurand-dev-13-0"
DOUBLE_CONFIG = "/etc/nvidia-smi-double.json"


def health(run):
    return json.loads(run("python3 -c \"import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:30000/health', timeout=5).read().decode())\""))


def wait_for_health(run):
    run(
        "for i in $(seq 60); do python3 -c \"import urllib.request; urllib.request.urlopen('http://127.0.0.1:30000/health', timeout=2)\" "
        "2>/dev/null && exit 0; sleep 1; done; exit 1"
    )


def serving(run):
    """The service answers and started without compiling (FlashInfer's build log)."""
    report = health(run)
    assert report["cuda_version"] == "13.0" and report["builds"] and not any(ld["compiled"] for ld in report["loads"]), report
    return report["pid"]


def marker(run):
    return json.loads(run("cat /etc/ansible/facts.d/blackwell_inference.fact"))


def installed(run, pkg=PKG):
    """Whether dpkg has the package installed (status abbreviation ii, or hi when held)."""
    return run("dpkg-query -W -f '${db:Status-Abbrev}' %s 2>/dev/null || true" % pkg)[1:2] == "i"


def no_traceback(out):
    assert "Traceback (most recent call last)" not in out, out[-4000:]


def converges(extra_vars=None):
    rc, out, recap = playbook(extra_vars=extra_vars)
    assert rc == 0, out[-4000:]
    return recap


def remove_pinned_package(run):
    run("apt-mark unhold %s >/dev/null && apt-get remove -y -q %s >/dev/null" % (PKG, PKG))
    assert not installed(run)


def back_and_held(run):
    assert installed(run) and PKG in run("apt-mark showhold").split()
    assert run("dpkg --audit").strip() == ""


LOCK_GATE = "/run/fault-dpkg-lock.release"


def hold_dpkg_lock(run):
    """Another apt/dpkg (e.g. unattended-upgrades) holding the frontend lock: a POSIX lock, as apt takes it, until the
    test lets go (touch LOCK_GATE): no fixed hold time."""
    run(
        'rm -f %s && systemd-run --unit=fault-dpkg-lock --collect python3 -c "import fcntl, os, time; '
        "f = open('/var/lib/dpkg/lock-frontend', 'w'); fcntl.lockf(f, fcntl.LOCK_EX); "
        "any(time.sleep(0.1) for _ in iter(lambda: os.path.exists('%s'), True))\"" % (LOCK_GATE, LOCK_GATE)
    )
    # the fault is in place once a non-blocking lock attempt fails
    on_host_until(
        run,
        "! python3 -c \"import fcntl; fcntl.lockf(open('/var/lib/dpkg/lock-frontend', 'w'), fcntl.LOCK_EX | fcntl.LOCK_NB)\" 2>/dev/null",
        "the dpkg lock held by fault-dpkg-lock",
    )


# -- the apt mirror ---------------------------------------------------------------------------------


def test_mirror_gone_mid_run_retries_then_fails_clearly_and_nothing_is_half_installed(run):
    pid = serving(run)
    remove_pinned_package(run)
    run("mount -t tmpfs -o size=1m,mode=0755 mirror-gone /srv/cuda-mirror")  # the mirror vanishes
    try:
        rc, out, _recap = playbook("--tags", "cuda_toolkit", extra_vars={"cuda_toolkit_apt_retries": 2, "cuda_toolkit_apt_retry_delay": 2})
        assert rc != 0 and out.count("FAILED - RETRYING: [ct200]: blackwell.inference.cuda_toolkit : Install the pinned components") == 2, out[-4000:]
        assert "Failed to fetch file:/srv/cuda-mirror" in out, out[-4000:]
        no_traceback(out)
        assert run("dpkg --audit").strip() == "" and not installed(run)
        assert run("readlink -f /usr/local/cuda").strip() == "/usr/local/cuda-12.8"
        assert serving(run) == pid
    finally:
        run("umount /srv/cuda-mirror")
    rc, out, _recap = playbook()
    # the reinstall (cuda_toolkit_installed; it notifies blackwell_inference runtime changed) revalidates the service
    assert rc == 0 and "needs a validation of sglang-k26.service: the toolkit changed in this run" in out and "state: validated and serving" in out, out[-4000:]
    back_and_held(run)
    serving(run)


def test_the_toolkit_role_in_a_play_of_its_own_installs_and_notifies_without_the_service_role(run):
    remove_pinned_package(run)  # the fault: a pinned package gone, so the role installs and notifies its topic
    rc, out, recap = playbook(play="tests/lab/plays/cuda_toolkit_alone.yml")
    no_traceback(out)
    assert rc == 0 and recap["changed"] > 0 and "was not found" not in out, out[-4000:]
    assert "RUNNING HANDLER [blackwell.inference.cuda_toolkit : Remember that the toolkit or the venv the services run on changed]" in out
    back_and_held(run)


# -- another apt/dpkg holding the lock --------------------------------------------------------------


def test_dpkg_lock_held_briefly_waits_then_proceeds(run):
    remove_pinned_package(run)
    hold_dpkg_lock(run)
    cmd, env = playbook_command("--tags", "cuda_toolkit")
    bg = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        # the install's apt-get runs while the lock is held: it is waiting for it (it cannot reach dpkg without it)
        on_host_until(run, "pgrep -f '[a]pt-get .*Lock::Timeout' >/dev/null", "the install waiting for the dpkg lock", timeout=300)
        assert not installed(run) and run("systemctl is-active fault-dpkg-lock").strip() == "active"
        run("touch " + LOCK_GATE)  # the other apt is done
        out = bg.communicate(timeout=600)[0]
    finally:
        bg.kill()
        run("touch %s; systemctl stop fault-dpkg-lock.service 2>/dev/null || true" % LOCK_GATE)
    assert bg.returncode == 0, out[-4000:]
    back_and_held(run)


def test_dpkg_lock_held_too_long_fails_clearly_then_the_next_run_converges(run):
    remove_pinned_package(run)
    hold_dpkg_lock(run)  # never let go: the install gives up after its lock timeout
    try:
        rc, out, _recap = playbook("--tags", "cuda_toolkit", extra_vars={"cuda_toolkit_apt_lock_timeout": 5, "cuda_toolkit_apt_retries": 0})
        failed = [ln for ln in out.split("Install the pinned components", 1)[-1].splitlines() if ln.startswith("fatal: [ct200]")]
        assert rc != 0 and failed and "lock" in failed[0].lower(), out[-4000:]  # the install's own failure names the lock
        no_traceback(out)
        assert not installed(run) and run("dpkg --audit").strip() == ""
    finally:
        run("systemctl stop fault-dpkg-lock.service || true")
    # the next toolkit run installs and holds it again (the service's revalidation after a reinstall is the mirror test's)
    rc, out, _recap = playbook("--tags", "cuda_toolkit")
    assert rc == 0, out[-4000:]
    back_and_held(run)


# -- the JIT cache ----------------------------------------------------------------------------------


def test_truncated_jit_module_is_found_and_rebuilt_by_the_smoke(run):
    pid = serving(run)
    run("truncate -s 4096 " + sampling_library(run))  # loading it now kills the loader with SIGBUS
    rc, out, recap = playbook("--tags", "verify")
    assert rc == 0 and recap["changed"] == 1, out[-4000:]  # the smoke, which rebuilt the library
    assert "(compiled into the cache)" in out
    assert run("stat -c %s " + sampling_library(run)).strip() != "4096"
    assert serving(run) == pid
    run("systemctl restart " + UNIT)  # and the service starts from it without compiling
    wait_for_health(run)
    serving(run)


def test_truncated_jit_module_is_rebuilt_at_boot_before_the_service_starts(run):
    run("truncate -s 4096 " + sampling_library(run))
    run("systemctl restart sglang-k26-validate.service")  # and the service with it (Requires=)
    m = marker(run)
    # validated, not ready: nobody has seen the restarted service answer yet
    assert not m["ready"] and m["phase"] == "validated" and m["source"] == "boot validation (sglang-k26.service)", m
    assert m["smoke"]["warm"]["modules"][0]["repaired"] == "killed by signal 7"
    wait_for_health(run)
    serving(run)
    # its ready unit (restarted with the service) saw the service answer and marked it ready
    on_host_until(run, "systemctl show -p SubState --value sglang-k26-ready.service | grep -Eqx 'exited|failed'", "the ready unit's end")
    m = marker(run)
    assert m["ready"] and m["phase"] == "serving" and m["smoke"]["warm"]["modules"][0]["repaired"] == "killed by signal 7", m


# -- the GPUs and the driver (nvidia-smi double) ----------------------------------------------------


@pytest.mark.parametrize(
    "config,expected",
    [
        # the messages of nvidia_smi.classify_failure / parse_query, each only said for its own fault
        ({"mode": "no_driver"}, "nvidia-smi cannot talk to the NVIDIA driver (module not loaded or version mismatch)"),
        ({"mode": "no_devices"}, "driver loaded but no NVIDIA GPU was found"),
        ({"mode": "garbage"}, "line 1 of nvidia-smi output has 1 fields, expected"),
    ],
)
def test_driver_faults_give_a_clear_answer_and_change_nothing(run, config, expected):
    pid, files = serving(run), run("md5sum /etc/systemd/system/sglang-k26.service.d/*.conf /etc/ansible/facts.d/*.fact")
    run("echo '%s' > %s" % (json.dumps(config), DOUBLE_CONFIG))
    try:
        rc, out, _recap = playbook("--tags", "verify")
        no_traceback(out)
        assert rc != 0 and expected in out, out[-4000:]
        assert serving(run) == pid and run("md5sum /etc/systemd/system/sglang-k26.service.d/*.conf /etc/ansible/facts.d/*.fact") == files
    finally:
        run("rm -f " + DOUBLE_CONFIG)


def test_mixed_host_is_reported_per_compute_capability_and_refused_before_any_change(run):
    pid, files = serving(run), run("md5sum /etc/systemd/system/sglang-k26.service.d/*.conf /etc/ansible/facts.d/*.fact")
    gpus = [{"name": "NVIDIA RTX PRO 6000 Blackwell Server Edition", "compute_cap": "12.0"}] * 4 + [{"name": "NVIDIA H100 80GB HBM3", "compute_cap": "9.0"}] * 4
    run("echo '%s' > %s" % (json.dumps({"gpus": gpus}), DOUBLE_CONFIG))
    try:
        rc, out, _recap = playbook("--tags", "verify")
        no_traceback(out)
        assert "4x NVIDIA RTX PRO 6000 Blackwell Server Edition (CC 12.0)" in out and "4x NVIDIA H100 80GB HBM3 (CC 9.0)" in out, out[-4000:]
        # SGLang sets 9.0a and 12.0a in its workers: no one unit environment lands both in the workspace the warm-up
        # fills, so one service over both kinds is refused (before any change), naming each worker's list and the fix
        flat = " ".join(out.split())
        sets = "its set_cuda_arch() sets FLASHINFER_CUDA_ARCH_LIST=9.0a on CC 9.0 and 12.0a on CC 12.0 in its workers"
        assert rc != 0 and "service over GPUs of CC 9.0 and 12.0: " + sets in flat, flat[-4000:]
        assert "Serve each GPU kind by its own service (CUDA_VISIBLE_DEVICES in sglang_service_environment" in flat
        assert serving(run) == pid and run("md5sum /etc/systemd/system/sglang-k26.service.d/*.conf /etc/ansible/facts.d/*.fact") == files
    finally:
        run("rm -f " + DOUBLE_CONFIG)
    rc, out, recap = playbook("--tags", "verify")
    assert rc == 0 and recap["changed"] == 0 and "READY: compiled" in out, out[-3000:]
