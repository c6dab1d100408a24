# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure pieces of the JIT smoke: which archs, the saxpy kernel, the FlashInfer warm-up script.

Also imported by the boot-time validator on the host, with cuda_arch beside it (stdlib only, no Ansible).
"""

from __future__ import annotations

import json
import re

from ansible_collections.blackwell.inference.plugins.module_utils.cuda import arch as cuda_arch

GPU_DEVICE = "/dev/nvidia0"

# A real kernel with a checkable result: y = a*x + y over 1M floats, verified on the host.
SAXPY_CU = r"""
#include <cstdio>
#include <cmath>
#include <cuda_runtime.h>
__global__ void saxpy(int n, float a, const float *x, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
int main() {
  const int n = 1 << 20;
  float *x, *y;
  if (cudaMallocManaged(&x, n * sizeof(float)) != cudaSuccess || cudaMallocManaged(&y, n * sizeof(float)) != cudaSuccess) {
    printf("cuda error: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 2;
  }
  for (int i = 0; i < n; i++) { x[i] = 1.0f; y[i] = 2.0f; }
  saxpy<<<(n + 255) / 256, 256>>>(n, 2.0f, x, y);
  cudaError_t err = cudaDeviceSynchronize();
  if (err != cudaSuccess) { printf("cuda error: %s\n", cudaGetErrorString(err)); return 2; }
  float max_error = 0.0f;
  for (int i = 0; i < n; i++) max_error = fmaxf(max_error, fabsf(y[i] - 4.0f));
  printf("max_error=%g\n", max_error);
  return max_error == 0.0f ? 0 : 3;
}
"""

# Runs as `env -i <public env> <venv>/bin/python -c WARM_SCRIPT MODULE...` with the rest of the
# service environment as JSON on stdin, so the build sees exactly the service's environment (any
# difference would make ninja rebuild at service start).
WARM_SCRIPT = r"""
import json, os, sys, time
os.environ.update(json.load(sys.stdin))
GENS = {"sampling": "flashinfer.jit.sampling:gen_sampling_module", "quantization": "flashinfer.jit.quantization:gen_quantization_module"}
# Loading runs in a forked child: a damaged library (e.g. truncated) kills the loader with SIGBUS, not
# this process; the fork shares the imports already made (no second torch import).
def loads(name):
    sys.stdout.flush()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        code = 0
        try:
            mod, func = GENS[name].split(":")
            spec = getattr(__import__(mod, fromlist=[func]), func)()
            (spec.load if hasattr(spec, "load") else spec.build_and_load)()
        except BaseException as exc:
            os.write(w, ("%s: %s" % (type(exc).__name__, exc)).encode()[-2000:])
            code = 1
        os._exit(code)
    os.close(w)
    chunks = []
    while True:
        chunk = os.read(r, 4096)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(r)
    status = os.waitpid(pid, 0)[1]
    if os.WIFSIGNALED(status):
        return "killed by signal %d" % os.WTERMSIG(status)
    if os.WEXITSTATUS(status) == 0:
        return None
    return b"".join(chunks).decode(errors="replace").strip() or "the loader exited with %d" % os.WEXITSTATUS(status)
out = {"modules": [], "error": None, "gpu_run": None}
try:
    import flashinfer
    from flashinfer.jit import env as jit_env
    out["cache_dir"] = str(jit_env.FLASHINFER_WORKSPACE_DIR)
    for name in sys.argv[1:]:
        mod, func = GENS[name].split(":")
        spec = getattr(__import__(mod, fromlist=[func]), func)()
        lib = spec.jit_library_path
        before = lib.stat().st_mtime if lib.exists() else None
        start = time.monotonic()
        spec.build()
        entry = {"name": name, "library": str(lib)}
        broken = loads(name)
        if broken:  # ninja saw nothing to do, but the library does not load: rebuild it
            entry["repaired"] = broken
            lib.unlink()
            spec.build()
            broken = loads(name)
            if broken:
                raise RuntimeError("%s does not load after a rebuild: %s" % (lib, broken))
        after = lib.stat().st_mtime if lib.exists() else None
        entry.update({"seconds": round(time.monotonic() - start, 2), "compiled": before != after, "exists": after is not None, "loads": True})
        out["modules"].append(entry)
    import torch
    if torch.cuda.is_available() and "sampling" in sys.argv[1:]:
        probs = torch.softmax(torch.randn(4, 32, device="cuda"), dim=-1)
        samples = flashinfer.sampling.sampling_from_probs(probs)
        out["gpu_run"] = {"samples": samples.tolist(), "ok": bool(((samples >= 0) & (samples < 32)).all())}
except BaseException as exc:
    out["error"] = "%s: %s" % (type(exc).__name__, exc)
print(json.dumps(out))
sys.exit(1 if out["error"] else 0)
"""

# FlashInfer JIT modules the warm-up knows: sampling (SGLang's sampler; a cold build is minutes of CPU) and
# quantization (packbits, which FlashInfer's attention wrappers load for custom masks; about a minute of CPU)
WARMABLE = ("sampling", "quantization")


def nvcc_arch(entry):
    """'12.0a' / '12.0' / '9.0' / '8.9' -> 'sm_120a' / 'sm_120a' / 'sm_90a' / 'sm_89' (cuda_arch.nvcc_for_entry)."""
    return cuda_arch.nvcc_for_entry(entry)


def archs_for(env, compute_capabilities):
    """What to compile for: the service's FLASHINFER_CUDA_ARCH_LIST, else the GPUs' CCs."""
    listed = env.get("FLASHINFER_CUDA_ARCH_LIST")
    entries = listed.split() if listed else list(compute_capabilities)
    return sorted({nvcc_arch(e) for e in entries}, key=lambda a: (len(a), a))


def saxpy_compile_argv(nvcc, archs, source, binary):
    """nvcc's argument list for the saxpy kernel: one -gencode per arch (sm_120a -> compute_120a, sm_120a)."""
    return [nvcc, *("-gencode=arch=compute_%s,code=%s" % (a[3:], a) for a in archs), "-o", binary, source]


def launch_result(rc, stdout, stderr):
    """(ok, detail) from the saxpy binary's exit and output."""
    m = re.search(r"max_error=(\S+)", stdout or "")
    if rc == 0 and m:
        return True, "max_error=" + m.group(1)
    return False, ((stdout or "") + (stderr or "")).strip() or "exit %s" % rc


def warm_result(rc, stdout, stderr, seconds):
    """(ok, the warm step) from the warm-up script's run: its last JSON line, or why there is none."""
    lines = [ln for ln in (stdout or "").splitlines() if ln.strip().startswith("{")]
    try:
        warm = json.loads(lines[-1]) if lines else None
    except ValueError:
        warm = None
    if not isinstance(warm, dict):
        warm = {"error": ((stderr or "").strip() or "the warm-up printed no result")[-2000:]}
    warm["seconds"] = seconds
    return not warm.get("error") and rc == 0, warm


def run_steps(compile_saxpy, launch_saxpy, warm, launch="auto", gpu_present=True):
    """The smoke's steps in one order, for the jit_smoke module and the boot validator: (failure or None, steps, the
    failed step's command output or None).

    compile_saxpy() and launch_saxpy() run their step: (ok, step, output). warm is None, or the wait for FlashInfer's
    warm-up that the caller started before this (it needs nothing from the saxpy steps, so it runs beside them):
    warm() -> (ok, step, output). A failed saxpy step ends the smoke before the warm-up is judged (the caller stops
    it). launch: auto (on a GPU host), always (a host without a GPU fails), never."""
    steps = {}
    ok, steps["compile"], output = compile_saxpy()
    if not ok:
        return "the saxpy kernel does not compile with %s for %s" % (steps["compile"]["nvcc"], " ".join(steps["compile"]["archs"])), steps, output
    if launch == "never":
        steps["launch"] = {"launched": False, "ok": None, "reason": "launch=never"}
    elif not gpu_present:
        steps["launch"] = {"launched": False, "ok": None, "reason": "no GPU device node (%s)" % GPU_DEVICE}
        if launch == "always":
            return "launch=always but this host has no GPU device node (%s)" % GPU_DEVICE, steps, None
    else:
        ok, steps["launch"], output = launch_saxpy()
        if not ok:
            return "the saxpy kernel ran but failed: %s" % steps["launch"]["detail"], steps, output
    if warm is not None:
        ok, steps["warm"], output = warm()
        if not ok:
            return "FlashInfer's JIT warm-up failed in the service environment: %s" % steps["warm"].get("error"), steps, output
        if steps["warm"].get("gpu_run") and not steps["warm"]["gpu_run"]["ok"]:
            return "FlashInfer sampling ran on the GPU but returned bad samples", steps, None
    return None, steps, None
