"""A failed service is explained (issue 12 item 7): the known causes are planted on ct200 for real, the service is
restarted into them and really fails (its unit failed, the cause's own line in its journal), and the summary (or
service_health, which reads the journal since the unit's last start) names the cause with its fix.

- the seeds' incident: CUDA 12.8 first and no arch list, so FlashInfer's GPU detection comes out empty ("requires
  GPUs with sm75 or higher"), through a real `--tags verify`;
- FlashInfer's SM 12.x gate: a bare arch list 12.1 with CUDA 12.8 (FlashInfer 0.7.4 refuses it at import);
  both without SGLang's layer (the stand-in's SGLANG_STANDIN_SGLANG_LAYER=off): the lab venv's SGLang 0.5.23 sets
  12.0a before FlashInfer's first build and FlashInfer 0.7.4 re-reads an empty detection there, so that pair never
  crashes this way; the seeds' pair (SGLang 0.5.10-0.5.21, FlashInfer 0.6.8-0.7.0) cannot be imported without a GPU;
- a JIT build without curand.h: the toolkit's cuRAND header moved aside and the sampling module's build with it;
- a unit systemd keeps restarting (Restart=on-failure) into the incident, asked while its newest run starts again:
  named from the run before.
Also SGLang's own rewrite of the arch list (its set_cuda_arch in the stand-in's worker) against a unit at 12.0f, and
a forgotten second FlashInfer service on CUDA 12.8, refused in the summary beside the READY managed one, then taken in
as a further service of the role (sglang_service_extra_services) and validated on its own.
Not planted here, their rows are in the unit table (tests/unit/.../test_service_journal.py): an OOM kill (systemd in the
lab host has no memory controller, so MemoryMax= does nothing there; a real OOM of this machine would hit everything on
it) and torch's "driver too old" (it needs a CUDA build of torch and a driver; the lab has neither).
The file leaves ct200 changed (the faults' drop-in, a failed unit): the next file starts from a fresh image.
"""

import json
import os
import re
import shlex
import subprocess

from ..conftest import INVENTORY, ROOT, on_host_until, playbook, playbook_command, workspace
from .test_faults import no_traceback

UNIT = "sglang-k26.service"
FAULT = "/etc/systemd/system/sglang-k26.service.d/90-lab-fault.conf"
CUDA128 = "/usr/local/cuda-12.8"
VENV_BIN = "/opt/sglang/current/bin"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
ON_128 = ["Environment=CUDA_HOME=%s" % CUDA128, "Environment=PATH=%s/bin:%s:%s" % (CUDA128, VENV_BIN, SYSTEM_PATH)]
# FlashInfer without SGLang's layer (the stand-in's fault knob, see the docstring above)
NO_SGLANG = "Environment=SGLANG_STANDIN_SGLANG_LAYER=off"
CURAND = "/usr/local/cuda-13.0/targets/x86_64-linux/include/curand.h"


def plant(run, *lines):
    """A drop-in after the role's own (90- sorts after 50-), so its lines win; then systemd reads it."""
    run("printf '%%s\\n' %s > %s && systemctl daemon-reload" % (shlex.quote("\n".join(["[Service]", *lines])), FAULT))


def fail(run):
    """Restart the service into the fault; the fault hit when the unit really failed after it started (Restart=no:
    it stays failed, with systemd's result). Returns (result, its journal since that start)."""
    run("systemctl restart %s" % UNIT)  # Type=simple: returns once started
    on_host_until(run, "systemctl is-failed --quiet %s" % UNIT, "%s failed" % UNIT, timeout=300)
    result = run("systemctl show -p Result --value %s" % UNIT).strip()
    since = run("systemctl show -p ExecMainStartTimestamp --value %s" % UNIT).strip()
    assert result != "success" and since, (result, since)
    return result, run("journalctl -u %s --no-pager -o cat --since %s" % (UNIT, shlex.quote(since)))


def signal_unit(sig):
    """Shell: SIG to every process of the unit $U - its main process first (a stopped one forks no more), then the rest
    of its cgroup (the lab's hybrid hierarchy: systemd's name=systemd one, else the unified one). What `systemctl kill`
    does; in the lab's nspawn machines systemd fails to signal a unit's other processes at times (EIO)."""
    return (
        'kill -%s "$(systemctl show -p MainPID --value $U)"; cg=$(systemctl show -p ControlGroup --value $U); '
        "for f in /sys/fs/cgroup/systemd$cg/cgroup.procs /sys/fs/cgroup/unified$cg/cgroup.procs /sys/fs/cgroup$cg/cgroup.procs; do "
        '[ -r "$f" ] && { xargs -r kill -%s < "$f"; break; }; done' % (sig, sig)
    )


def ask(cuda_version=None):
    """service_health as verify asks it (one look, no failure), with cuda_version as a caller may give it."""
    args = {"url": "http://127.0.0.1:30000/health", "unit": UNIT, "timeout": 0, "must_answer": False}
    if cuda_version:
        args["cuda_version"] = cuda_version
    cmd, env = playbook_command()
    cmd = [os.path.join(os.path.dirname(cmd[0]), "ansible"), "ct200", "-i", INVENTORY, "-m", "blackwell.inference.service_health", "-a", json.dumps(args)]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    res = json.loads(proc.stdout.split("=>", 1)[1])
    assert res["answered"] is False, res
    return res


def named(res, name):
    found = [c for c in res["causes"] if c["name"] == name]
    assert found, "cause %s not named: %s" % (name, res)
    return found[0]


EAGLE3 = "sglang-eagle3.service"
# A second SGLang deployment nobody moved: ct200's hand-built venv (FlashInfer 0.7.0, the strict band) on the 12.8 PATH
EAGLE3_UNIT = """[Unit]
Description=SGLang EAGLE-3 draft deployment (lab fault: left on CUDA 12.8)
[Service]
Type=simple
Environment=PATH=/usr/local/cuda/bin:/root/venv_sglang211/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ExecStart=/root/venv_sglang211/bin/python /usr/local/libexec/sglang-standin.py --tp 8 --port 30002
Restart=no
[Install]
WantedBy=multi-user.target
"""


def test_a_forgotten_flashinfer_service_beside_the_managed_one_is_refused_in_the_summary(run):
    run("printf '%%s' %s > /etc/systemd/system/%s && systemctl daemon-reload && systemctl enable --now %s" % (shlex.quote(EAGLE3_UNIT), EAGLE3, EAGLE3))
    try:
        # the fault hit: it ran and died (CUDA 12.8 and FlashInfer 0.7.0 in the lab, as on ct200; here without a GPU)
        on_host_until(run, "systemctl is-failed --quiet %s" % EAGLE3, "%s failed" % EAGLE3, timeout=120)
        assert run("systemctl show -p ExecMainStartTimestamp --value %s" % EAGLE3).strip()
        rc, out, _recap = playbook("--tags", "verify")
        no_traceback(out)
        # the managed service is READY (its own verdict); the forgotten one is listed, judged in its own environment
        assert rc == 0 and "READY: compiled, JIT cache warm" in out, out[-4000:]
        line = [x for x in out.splitlines() if "flashinfer service %s" % EAGLE3 in x]
        assert line, out[-4000:]
        assert "(failed): /root/venv_sglang211, flashinfer 0.7.0, CUDA 12.8 (home /usr/local/cuda)" in line[0], line[0]
        assert "REFUSED: SM 12.x requires CUDA >= 12.9; it would fail with: FlashInfer requires GPUs with sm75 or higher" in line[0], line[0]
        managed = [x for x in out.splitlines() if "flashinfer service %s (active, this role's)" % UNIT in x]
        assert managed and "flashinfer 0.7.4 sglang 0.5.23, CUDA 13.0 (home /usr/local/cuda-13.0)" in managed[0], out[-4000:]
        assert managed[0].rstrip('",').endswith(": ACCEPTED"), managed[0]
        # and the fleet table names it beside the host's verdict
        assert re.search(r"ct200 .*sglang-k26\.service answering; REFUSED beside it: sglang-eagle3\.service +READY", out), out[-3000:]
    finally:
        run("systemctl disable --now %s; rm -f /etc/systemd/system/%s; systemctl daemon-reload; systemctl reset-failed" % (EAGLE3, EAGLE3))


EAGLE3_MARKER = "/etc/ansible/facts.d/blackwell_inference_sglang_eagle3.fact"
TAKE_EAGLE3_IN = {"sglang_service_extra_services": [{"name": "sglang-eagle3", "mode": "dropin", "gpus": "4,5,6,7"}]}


def drop_eagle3(run):
    """The EAGLE-3 unit and everything the role made for it, gone."""
    run(
        "systemctl disable --now %s; rm -rf /etc/systemd/system/%s /etc/systemd/system/%s.d /etc/systemd/system/sglang-eagle3-validate.service"
        " /etc/blackwell-inference/sglang-eagle3* /var/lib/blackwell-inference/sglang-eagle3 %s; systemctl daemon-reload; systemctl reset-failed"
        % (EAGLE3, EAGLE3, EAGLE3, EAGLE3_MARKER)
    )


def test_a_second_service_is_taken_in_and_validated_on_its_own_beside_the_first(run):
    # issue 12 item 6: the forgotten EAGLE-3 deployment (on the 12.8 PATH, its hand-built venv, half the GPUs) named as
    # a further service of the role: its own drop-in, validation, restart and marker; the first service untouched
    unit = EAGLE3_UNIT.replace("--tp 8", "--tp 4")
    run("printf '%%s' %s > /etc/systemd/system/%s && systemctl daemon-reload && systemctl enable --now %s" % (shlex.quote(unit), EAGLE3, EAGLE3))
    try:
        on_host_until(run, "systemctl is-failed --quiet %s" % EAGLE3, "%s failed" % EAGLE3, timeout=120)  # the fault hit
        first_pid = run("systemctl show -p MainPID --value %s" % UNIT).strip()
        assert first_pid != "0"  # the first service is serving before the run
        rc, out, _recap = playbook(extra_vars=TAKE_EAGLE3_IN)
        no_traceback(out)
        assert rc == 0 and "needs a validation of %s" % EAGLE3 in out, out[-6000:]
        assert "needs a validation of %s" % UNIT not in out, out[-6000:]  # nothing of the first one changed
        assert run("systemctl show -p MainPID --value %s" % UNIT).strip() == first_pid  # and it was not restarted
        assert run("systemctl is-active %s" % EAGLE3).strip() == "active"
        # its own command (flags kept, interpreter moved), on its own GPUs with SGLang's arch list; nothing compiled
        get = "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:30002/health', timeout=5).read().decode())"
        report = json.loads(run("python3 -c %s" % shlex.quote(get)))
        assert report["argv"][0].startswith("/opt/sglang/current/bin/python") and report["argv"][-4:] == ["--tp", "4", "--port", "30002"], report["argv"]
        # the stand-in starts one worker per compute capability among its TP ranks' GPUs: rank 0 on GPU 4, the first it sees
        assert report["environment"]["CUDA_VISIBLE_DEVICES"] == "4,5,6,7" and report["workers"][0]["gpu"]["index"] == "4", report["workers"]
        assert report["environment"]["CUDA_HOME"] == "/usr/local/cuda-13.0" and report["flashinfer"] == "0.7.4"
        assert report["sglang"]["arch_list_after"] == "12.0a" and report["target_archs"] == ["120a"]
        assert report["builds"] and not any(ld["compiled"] for ld in report["loads"]), report["loads"]
        assert json.loads(run("cat %s" % EAGLE3_MARKER))["ready"] is True
        # the summary shows both, each READY, and the census line of the taken-in unit is the role's now
        assert out.count('"READY: ') == 2 and "NOT READY" not in out and "service: %s (dropin)" % EAGLE3 in out, out[-6000:]
        line = [x for x in out.splitlines() if "flashinfer service %s (active, this role's)" % EAGLE3 in x]
        assert line and line[0].rstrip('",').endswith(": ACCEPTED"), out[-6000:]
        rc, out, recap = playbook(extra_vars=TAKE_EAGLE3_IN)
        assert rc == 0 and recap["changed"] == 0, out[-6000:]
        # an only-verify run smokes and judges each one live, and changes nothing
        rc, out, recap = playbook("--tags", "verify", extra_vars=TAKE_EAGLE3_IN)
        assert rc == 0 and recap["changed"] == 0 and out.count("smoke (live (--tags verify))") == 2 and out.count('"READY: ') == 2, out[-6000:]
    finally:
        drop_eagle3(run)


def test_a_further_service_that_fails_its_validation_fails_the_host_and_leaves_the_first_serving(run):
    # validated one by one: the EAGLE-3 unit asks for 8 ranks on the 4 GPUs it is given, so it dies after its restart;
    # with no last good state of its own it is stopped, the host fails naming it, and sglang-k26 keeps serving
    run("printf '%%s' %s > /etc/systemd/system/%s && systemctl daemon-reload" % (shlex.quote(EAGLE3_UNIT), EAGLE3))
    try:
        first_pid = run("systemctl show -p MainPID --value %s" % UNIT).strip()
        assert first_pid != "0"
        rc, out, _recap = playbook(extra_vars=TAKE_EAGLE3_IN)
        no_traceback(out)
        # the fault hit: the restarted unit ran and died on the ranks it cannot have
        since = run("systemctl show -p ExecMainStartTimestamp --value %s" % EAGLE3).strip()
        assert since and "--tp 8 needs 8 GPUs, 4 visible" in run("journalctl -u %s --no-pager -o cat" % EAGLE3)
        assert rc != 0 and "ct200 is NOT READY: the restarted service" in out and EAGLE3 in out.split("ct200 is NOT READY: ", 1)[1][:600], out[-6000:]
        assert run("systemctl is-active %s || true" % EAGLE3).strip() in ("inactive", "failed")  # not left running
        marker = json.loads(run("cat %s" % EAGLE3_MARKER))
        assert marker["ready"] is False and marker["phase"] == "failed", marker
        assert run("systemctl show -p MainPID --value %s" % UNIT).strip() == first_pid  # the first one never moved
        assert json.loads(run("cat /etc/ansible/facts.d/blackwell_inference.fact"))["ready"] is True
        get = "import urllib.request; urllib.request.urlopen('http://127.0.0.1:30000/health', timeout=5)"
        on_host_until(run, "python3 -c %s" % shlex.quote(get), "%s answering" % UNIT, timeout=30)
    finally:
        drop_eagle3(run)


def test_sglang_moves_a_worker_off_a_unit_at_12_0f_into_the_workspace_of_its_own_list(run):
    # why the role writes SGLang's 12.0a: a unit at FlashInfer's own 12.0f (what the role wrote before issue 12) loses
    # its worker to SGLang's rewrite, so the workspace a converge warmed for 12.0f is not the one the worker uses
    plant(run, "Environment=FLASHINFER_CUDA_ARCH_LIST=12.0f")
    run("systemctl restart %s" % UNIT)
    get = "python3 -c \"import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:30000/health', timeout=5).read().decode())\""
    on_host_until(run, get + " >/dev/null 2>&1", "%s answering" % UNIT, timeout=180)
    report = json.loads(run(get))
    assert report["environment"]["FLASHINFER_CUDA_ARCH_LIST"] == "12.0f"  # the fault hit: the unit says 12.0f
    assert report["sglang"] == {"version": "0.5.23", "arch_list_before": "12.0f", "arch_list_after": "12.0a"}
    assert report["target_archs"] == ["120a"] and report["cache_dir"].endswith("/.cache/flashinfer/0.7.4/120a")
    # and verify's census says so: FlashInfer accepts the unit, but its workers land where the warm-up never was (no
    # modules to warm: the census is the subject, not a cold sampling build of the unit's 120f workspace)
    _rc, out, _recap = playbook("--tags", "verify", extra_vars={"sglang_service_jit_warm": []})
    no_traceback(out)
    line = [x for x in out.splitlines() if "flashinfer service %s (active, this role's)" % UNIT in x]
    assert line and "archs 120f (SGLang's workers: 120a): ACCEPTED; but SGLang 0.5.23's workers set FLASHINFER_CUDA_ARCH_LIST=12.0a" in line[0], out[-4000:]
    assert "/.cache/flashinfer/0.7.4/120a, not the one the unit's environment names" in line[0], line[0]


def test_the_seeds_incident_is_named_by_verify_with_its_fix(run):
    plant(run, *ON_128, "UnsetEnvironment=FLASHINFER_CUDA_ARCH_LIST", NO_SGLANG)
    assert run("systemctl show -p MainPID --value %s" % UNIT).strip() != "0"  # serving before the fault
    _result, journal = fail(run)
    assert "FlashInfer requires GPUs with sm75 or higher" in journal, journal[-3000:]
    rc, out, _recap = playbook("--tags", "verify")
    no_traceback(out)
    assert rc != 0 and "ct200 is NOT READY" in out, out[-4000:]
    assert "why the service fails (its journal since its last start): FlashInfer found no target arch" in out, out[-4000:]
    assert "requires GPUs with sm75 or higher" in out.split("why the service fails", 1)[1]
    assert "fix: point the unit at CUDA >= 12.9" in out


def test_flashinfers_cuda_gate_is_named_with_the_cuda_it_saw(run):
    plant(run, *ON_128, "Environment=FLASHINFER_CUDA_ARCH_LIST=12.1", NO_SGLANG)
    _result, journal = fail(run)
    assert "SM 12.1+ requires CUDA >= 12.9" in journal, journal[-3000:]
    cause = named(ask("12.8"), "flashinfer_cuda_gate")
    assert "refused CUDA 12.8" in cause["cause"] and "SM 12.1+ requires CUDA >= 12.9" in cause["line"]
    # nothing else is claimed: the gate is the one cause in that journal
    assert [c["name"] for c in ask()["causes"]] == ["flashinfer_cuda_gate"]


def test_a_jit_build_without_curand_headers_is_named(run):
    # the sampling module's build moved aside with the header: the start compiles it again, and nvcc cannot
    sampling = workspace(run) + "/.cache/flashinfer/0.7.4/120a/cached_ops/sampling"
    run(f"test -d {sampling} && mv {sampling} {sampling}.aside && mv {CURAND} {CURAND}.aside && rm -f {FAULT}")
    try:
        run("systemctl daemon-reload")
        _result, journal = fail(run)
        assert "curand.h" in journal, journal[-3000:]
        cause = named(ask(), "jit_missing_curand")
        assert "libcurand-dev" in cause["fix"]
    finally:
        run(f"rm -rf {sampling} && mv {sampling}.aside {sampling} && mv {CURAND}.aside {CURAND}")


def test_a_service_systemd_keeps_restarting_is_explained_from_the_run_before_while_it_loads_again(run):
    # Restart=on-failure into the seeds' incident: each run crashes, systemd starts the next one. On ct200 a run loads
    # the model for minutes before it could crash, so most of the time the run since the last start shows nothing yet.
    # Here the run systemd restarted the unit into is frozen as it starts (SIGSTOP to its whole cgroup), the same state.
    plant(run, *ON_128, "UnsetEnvironment=FLASHINFER_CUDA_ARCH_LIST", NO_SGLANG, "Restart=on-failure", "RestartSec=2")
    run("systemctl restart %s" % UNIT)
    wait = (
        "U=%s; inv=$(systemctl show -p InvocationID --value $U); "
        'until [ "$(systemctl show -p NRestarts --value $U)" -ge 1 ] && [ "$(systemctl show -p InvocationID --value $U)" != "$inv" ] '
        '&& [ "$(systemctl show -p ActiveState --value $U)" = active ]; do sleep 0.05; done; %s' % (UNIT, signal_unit("STOP"))
    )
    run("timeout 180 sh -c %s" % shlex.quote(wait))
    try:
        # the fault hit: a run crashed with the incident's error and systemd restarted the unit; the run now shows no cause
        since = run("systemctl show --timestamp=unix -p ExecMainStartTimestamp --value %s" % UNIT).strip()
        assert int(run("systemctl show -p NRestarts --value %s" % UNIT)) >= 1
        assert "requires GPUs with sm75 or higher" in run("journalctl -u %s --no-pager -o cat" % UNIT)
        assert "sm75" not in run("journalctl -u %s --no-pager -o cat --since %s" % (UNIT, since))
        res = ask()
        cause = named(res, "flashinfer_no_arch")
        assert cause["run"] == "previous" and "requires GPUs with sm75 or higher" in cause["line"], res
        assert "the run systemd restarted it from says why" in res["msg"] and "NRestarts=" in res["msg"], res["msg"]
    finally:
        run("U=%s; %s; rm -f %s; systemctl daemon-reload; systemctl stop $U; systemctl reset-failed $U || true" % (UNIT, signal_unit("CONT"), FAULT))
