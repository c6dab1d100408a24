"""A failed service is explained (issue 12 item 7): the known causes are planted on ct200 for real, the service is
restarted into them and really fails (its unit failed, the cause's own line in its journal), and the summary (or
service_health, which reads the journal since the unit's last start) names the cause with its fix.

- the seeds' incident: CUDA 12.8 first and no arch list, so FlashInfer's GPU detection comes out empty ("requires
  GPUs with sm75 or higher"), through a real `--tags verify`;
- FlashInfer's SM 12.x gate: a bare arch list 12.1 with CUDA 12.8 (FlashInfer 0.7.4 refuses it at import);
  both without SGLang's layer (the stand-in's SGLANG_STANDIN_SGLANG_LAYER=off): the lab venv's SGLang 0.5.23 sets
  12.0a before FlashInfer's first build and FlashInfer 0.7.4 re-reads an empty detection there, so that pair never
  crashes this way; the seeds' pair (SGLang 0.5.10-0.5.21, FlashInfer 0.6.8-0.7.0) cannot be imported without a GPU;
- a JIT build without curand.h: the toolkit's cuRAND header moved aside and the sampling module's build with it.
Also SGLang's own rewrite of the arch list (its set_cuda_arch in the stand-in's worker) against a unit at 12.0f, and
a forgotten second FlashInfer service on CUDA 12.8, refused in the summary beside the READY managed one.
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
