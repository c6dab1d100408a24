#!/usr/bin/env bash
# GPU check (one command, a few minutes): on a machine with a real NVIDIA GPU and a CUDA toolkit, run
#   1. cuda_facts against the real nvidia-smi (one call) and the toolkits found,
#   2. jit_smoke: saxpy compiled for the GPU's own arch with the toolkit's nvcc and LAUNCHED (launch=always),
#   3. optionally (GPU_VENV=<venv with FlashInfer and a CUDA torch>) FlashInfer's JIT warm-up and a sampling run,
#      in the environment the service role writes (with SGLang in the venv: SGLang's arch list, from cuda_facts),
#   4. with SGLang in GPU_VENV, on every GPU (CUDA_VISIBLE_DEVICES=i) what SGLang's worker does: the real
#      set_cuda_arch(), then FlashInfer's sampling kernel run on the GPU; FlashInfer's build log must show 0 compiles,
# and print a pass/fail table. Needs no network: the modules run as plain Python with ansible-core's
# module_utils (from .venv after `make collection`, or any python3 that imports ansible).
# Usage: tests/gpu/run.sh            CUDA_HOME=/usr/local/cuda-13.0 GPU_VENV=/opt/sglang/current tests/gpu/run.sh
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$(mktemp -d)}
py=""
for p in "$root/.venv/bin/python" python3; do
  if "$p" -c 'import ansible.module_utils.basic' >/dev/null 2>&1; then py=$p; break; fi
done
[ -n "$py" ] || { echo "need a python with ansible-core importable (make collection, or pip install ansible-core)"; exit 2; }
# the collection, importable as ansible_collections.blackwell.inference
coll="$out/collections/ansible_collections/blackwell"
mkdir -p "$coll" && ln -sfn "$root" "$coll/inference"
export PYTHONPATH="$out/collections${PYTHONPATH:+:$PYTHONPATH}"
cuda_home=${CUDA_HOME:-}
if [ -z "$cuda_home" ]; then
  for d in /usr/local/cuda-13.* /usr/local/cuda-12.9 /usr/local/cuda; do [ -x "$d/bin/nvcc" ] && cuda_home=$d; done
fi

module() {  # module name, args JSON[, result name] -> result JSON in $out/<result name, default the module's>.json
  local name=${3:-$1}
  printf '{"ANSIBLE_MODULE_ARGS": %s}' "$2" > "$out/$name.args"
  timeout 280 "$py" -m "ansible_collections.blackwell.inference.plugins.modules.$1" "$out/$name.args" > "$out/$name.json" 2> "$out/$name.err"
}

env_json="{\"CUDA_HOME\": \"$cuda_home\", \"PATH\": \"$cuda_home/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\"}"
venv_arg=""; [ -n "${GPU_VENV:-}" ] && venv_arg=", \"venv\": \"$GPU_VENV\""
module cuda_facts "{\"environment\": $env_json, \"toolkit_root\": \"$(dirname "${cuda_home:-/usr/local/cuda}")\"$venv_arg}"
archs=$("$py" - "$out/cuda_facts.json" <<'PY'
import json, sys
f = json.load(open(sys.argv[1]))["ansible_facts"]["blackwell_cuda"]
print(" ".join(sorted(set(f["compute_capabilities"]))))
PY
)
# the service's FlashInfer inputs: SGLang's arch list when the venv has SGLang, one workspace and build log here
sglang_archs=$("$py" -c 'import json, sys; s = json.load(open(sys.argv[1]))["ansible_facts"]["blackwell_cuda"].get("sglang") or {}; print(s.get("arch_list") or "")' "$out/cuda_facts.json" 2>/dev/null)
svc_env="\"FLASHINFER_WORKSPACE_BASE\": \"$out/jit\", \"FLASHINFER_JIT_BUILD_LOG\": \"$out/jit-builds.jsonl\""
[ -n "$sglang_archs" ] && svc_env="$svc_env, \"FLASHINFER_CUDA_ARCH_LIST\": \"$sglang_archs\""
env_json="{\"CUDA_HOME\": \"$cuda_home\", \"PATH\": \"$cuda_home/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\", $svc_env}"
# FlashInfer's and SGLang's answers in that environment (the one the service runs in)
module cuda_facts "{\"environment\": $env_json, \"toolkit_root\": \"$(dirname "${cuda_home:-/usr/local/cuda}")\"$venv_arg}" service_facts
warm='[]'; [ -n "${GPU_VENV:-}" ] && warm='["sampling"]'
module jit_smoke "{\"environment\": $env_json, \"launch\": \"always\", \"warm\": $warm$venv_arg}"

# 4. SGLang's worker on each GPU: set_cuda_arch() first, FlashInfer's sampling after it (as SGLang's sampler imports it)
if [ -n "$sglang_archs" ]; then
  n=$("$py" -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["ansible_facts"]["blackwell_cuda"]["gpus"]))' "$out/cuda_facts.json")
  for i in $(seq 0 $((n - 1))); do
    CUDA_VISIBLE_DEVICES=$i CUDA_HOME=$cuda_home PATH="$cuda_home/bin:$PATH" FLASHINFER_WORKSPACE_BASE="$out/jit" \
      FLASHINFER_JIT_BUILD_LOG="$out/jit-builds.jsonl" FLASHINFER_CUDA_ARCH_LIST="$sglang_archs" \
      timeout 280 "$GPU_VENV/bin/python" - "$i" > "$out/sglang-gpu$i.json" 2> "$out/sglang-gpu$i.err" <<'PY'
import json, os, sys, time
from sglang.srt.utils import common
common.set_cuda_arch()
import torch
from flashinfer import sampling
from flashinfer.jit import env as jit_env
probs = torch.softmax(torch.randn(4, 32000, device="cuda"), dim=-1)
ids = sampling.top_k_top_p_sampling_from_probs(probs, top_k=50, top_p=0.9)
torch.cuda.synchronize()
log = os.environ["FLASHINFER_JIT_BUILD_LOG"]
builds = [r for r in map(json.loads, filter(str.strip, open(log))) if r.get("pid") == os.getpid()] if os.path.exists(log) else []
print(json.dumps({"gpu": sys.argv[1], "arch_list": os.environ.get("FLASHINFER_CUDA_ARCH_LIST"), "workspace": str(jit_env.FLASHINFER_WORKSPACE_DIR),
                  "ids": ids.tolist(), "compiles": [b for b in builds if b.get("seconds", 0) >= 1.0]}))
PY
  done
fi

"$py" - "$out" "$cuda_home" "$archs" <<'PY'
import glob, json, os, sys
out, cuda_home, archs = sys.argv[1:4]
rows = []
def load(name):
    try:
        return json.load(open(os.path.join(out, name + ".json")))
    except (OSError, ValueError):
        return {"failed": True, "msg": open(os.path.join(out, name + ".err")).read().strip()[-500:] or "no output"}
facts = load("cuda_facts")
f = facts.get("ansible_facts", {}).get("blackwell_cuda", {})
gpus = f.get("gpus", [])
rows.append(("nvidia-smi (one query)", bool(gpus) and not facts.get("failed"),
             ", ".join(sorted({"%s CC %s" % (g["name"], g["compute_capability"]) for g in gpus})) or facts.get("msg", "no GPU")))
drv = f.get("driver", {})
rows.append(("driver", bool(drv.get("present")), "%s (CUDA <= %s, open kernel module: %s)" % (drv.get("version"), drv.get("cuda_version"), drv.get("open_kernel_module"))))
tk = [t for t in f.get("toolkits", []) if t["path"] == cuda_home or os.path.realpath(t["path"]) == os.path.realpath(cuda_home or "/nonexistent")]
rows.append(("toolkit " + (cuda_home or "(none found)"), bool(tk and tk[0].get("version")), tk[0].get("release") if tk else "no nvcc"))
svc = load("service_facts").get("ansible_facts", {}).get("blackwell_cuda", {})
fi = svc.get("flashinfer", {})
if fi.get("version"):
    rows.append(("FlashInfer %s prediction" % fi["version"], bool(fi.get("accepted")), "CUDA %s, archs %s %s" % (fi.get("cuda_version"), fi.get("target_archs"), fi.get("error") or "")))
smoke = load("jit_smoke")
steps = smoke.get("steps", {})
c = steps.get("compile", {})
rows.append(("compile saxpy " + " ".join(c.get("archs", [])), bool(c.get("ok")), "%s s %s" % (c.get("seconds"), "" if c.get("ok") else smoke.get("stderr", smoke.get("msg", ""))[-300:])))
la = steps.get("launch", {})
rows.append(("launch on the GPU (CC %s)" % archs, bool(la.get("launched") and la.get("ok")), la.get("detail") or la.get("reason") or smoke.get("msg", "")))
if "warm" in steps:
    w = steps["warm"]
    rows.append(("FlashInfer warm-up + sampling", not w.get("error") and bool((w.get("gpu_run") or {}).get("ok")), "%s s %s" % (w.get("seconds"), w.get("error") or w.get("gpu_run"))))
sg = svc.get("sglang") or {}
if sg.get("version"):
    rows.append(("SGLang %s: one workspace for both import orders" % sg["version"], bool(sg.get("orders_agree")), "arch list %s" % sg.get("arch_list")))
for path in sorted(glob.glob(os.path.join(out, "sglang-gpu*.json"))):
    gpu = path.rsplit("gpu", 1)[1][:-5]
    try:
        r = json.load(open(path))
        rows.append(("GPU %s: set_cuda_arch, sampling, 0 compiles" % gpu, not r["compiles"], "%s %s %s" % (r["arch_list"], r["workspace"], r["compiles"] or "")))
    except (OSError, ValueError, KeyError):
        rows.append(("GPU %s: set_cuda_arch, sampling, 0 compiles" % gpu, False, open(path[:-5] + ".err").read().strip()[-300:]))
width = max(len(r[0]) for r in rows)
for name, ok, detail in rows:
    print("%-4s  %-*s  %s" % ("PASS" if ok else "FAIL", width, name, detail))
failed = sum(1 for r in rows if not r[1])
print("%d passed, %d failed" % (len(rows) - failed, failed))
sys.exit(1 if failed else 0)
PY
