# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Boot-time revalidation of an SGLang service (installed by blackwell.inference.sglang_service).

Run by <service>-validate.service, a oneshot the service requires and starts after, with the service's
environment. Same steps and verdict as the jit_smoke module (its kernel and warm-up script are the
collection's module_utils, installed next to this file): compile saxpy for FLASHINFER_CUDA_ARCH_LIST with
$CUDA_HOME/bin/nvcc, launch it as the service user when a GPU device node exists, build FlashInfer's JIT
modules into the cache as the service user. Updates the ready marker; exits 1 when not ready, so systemd
does not start the service on a state that would fail.
Usage: boot_validate.py SETTINGS.json
"""

import datetime
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jit_smoke
import sglang_service

GPU_DEVICE = "/dev/nvidia0"
# At boot the driver may still be loading (nvidia-persistenced, udev): wait this long for the device node
# before a host that must launch a kernel is judged without one.
DEVICE_WAIT = 120


def run(argv, timeout, user=None, data=None):
    if user:
        argv = ["setpriv", "--reuid=%d" % user.pw_uid, "--regid=%d" % user.pw_gid, "--init-groups", "--", *argv]
    start = time.monotonic()
    try:
        res = subprocess.run(argv, input=data, capture_output=True, text=True, timeout=timeout, check=False)
        rc, out, err = res.returncode, res.stdout, res.stderr
    except (OSError, subprocess.TimeoutExpired) as exc:
        rc, out, err = -1, "", str(exc)
    return rc, out, err, round(time.monotonic() - start, 2)


def smoke(cfg, user):
    """(failure message or None, steps)"""
    steps = {}
    cuda_home = os.environ.get("CUDA_HOME", "")
    nvcc = os.path.join(cuda_home, "bin", "nvcc")
    try:
        archs = jit_smoke.archs_for(os.environ, cfg.get("archs", "").split())
    except ValueError as exc:
        return "archs: %s" % exc, steps
    work = tempfile.mkdtemp(prefix="blackwell-boot-smoke-")
    try:
        os.chmod(work, 0o755)  # noqa: S103 - the binary is launched as the service user
        src, binary = os.path.join(work, "saxpy.cu"), os.path.join(work, "saxpy")
        with open(src, "w") as fh:
            fh.write(jit_smoke.SAXPY_CU)
        rc, out, err, secs = run(jit_smoke.saxpy_compile_argv(nvcc, archs, src, binary), cfg["timeout"])
        steps["compile"] = {"ok": rc == 0, "seconds": secs, "archs": archs, "nvcc": nvcc, "cuda_home": cuda_home}
        if rc != 0:
            return "the saxpy kernel does not compile with %s: %s" % (nvcc, (err or out).strip()[-2000:]), steps
        if not os.path.exists(GPU_DEVICE):
            steps["launch"] = {"launched": False, "ok": None, "reason": "no GPU device node (%s)" % GPU_DEVICE}
        else:
            rc, out, err, secs = run([binary], cfg["timeout"], user)
            ok, detail = jit_smoke.launch_result(rc, out, err)
            steps["launch"] = {"launched": True, "ok": ok, "detail": detail, "seconds": secs}
            if not ok:
                return "the saxpy kernel ran but failed: %s" % detail, steps
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if cfg["warm"]:
        python = os.path.join(cfg["venv"], "bin", "python")
        rc, out, err, secs = run([python, "-c", jit_smoke.WARM_SCRIPT, *cfg["warm"]], cfg["timeout"], user, data="{}")
        lines = [ln for ln in out.splitlines() if ln.startswith("{")]
        warm = json.loads(lines[-1]) if lines else {"error": (err or "the warm-up printed no result").strip()[-2000:]}
        warm["seconds"] = secs
        steps["warm"] = warm
        if warm.get("error") or rc != 0:
            return "FlashInfer's JIT warm-up failed: %s" % warm.get("error"), steps
    return None, steps


def wait_for_device(seconds):
    deadline = time.monotonic() + seconds
    while not os.path.exists(GPU_DEVICE) and time.monotonic() < deadline:
        time.sleep(1)
    return os.path.exists(GPU_DEVICE)


def main(path):
    with open(path) as fh:
        cfg = json.load(fh)
    if not cfg["ready_without_launch"] and not wait_for_device(DEVICE_WAIT):
        print("%s: no %s after %d s; the driver is not loaded" % (cfg["service"], GPU_DEVICE, DEVICE_WAIT), flush=True)
    user = None
    if cfg.get("user") and cfg["user"] != "root":
        user = pwd.getpwnam(cfg["user"])
        os.environ.setdefault("HOME", user.pw_dir)
    failure, steps = smoke(cfg, user)
    ready, reason = sglang_service.verdict(failure is not None, {"steps": steps, "msg": failure}, cfg["ready_without_launch"])
    previous = {}
    if os.path.exists(cfg["marker"]):
        with open(cfg["marker"]) as fh:
            previous = json.load(fh)
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    marker = sglang_service.marker(
        ready,
        reason,
        now,
        cfg["inputs"],
        os.path.realpath(cfg["venv"]),
        cfg["toolkit"],
        cfg["archs"],
        previous.get("versions"),
        {"steps": steps},
        previous,
        source="boot validation (%s)" % cfg["service"],
        phase="validated" if ready else "failed",
        vouched=cfg.get("vouched"),
    )
    tmp = cfg["marker"] + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(marker, fh, indent=4, sort_keys=True)
        fh.write("\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, cfg["marker"])
    print("%s: %s (%s)" % (cfg["service"], "READY" if ready else "NOT READY", reason), flush=True)
    return 0 if ready else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
