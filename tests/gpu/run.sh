#!/usr/bin/env bash
# GPU check (one command, a few minutes): on a machine with a real NVIDIA GPU and a CUDA toolkit, run
#   1. cuda_facts against the real nvidia-smi (one call) and the toolkits found,
#   2. jit_smoke: saxpy compiled for the GPU's own arch with the toolkit's nvcc and LAUNCHED (launch=always),
#   3. optionally (GPU_VENV=<venv with FlashInfer and a CUDA torch>) FlashInfer's JIT warm-up and a sampling run,
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

module() {  # module name, args JSON -> result JSON in $out/<name>.json
  printf '{"ANSIBLE_MODULE_ARGS": %s}' "$2" > "$out/$1.args"
  timeout 280 "$py" -m "ansible_collections.blackwell.inference.plugins.modules.$1" "$out/$1.args" > "$out/$1.json" 2> "$out/$1.err"
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
warm='[]'; [ -n "${GPU_VENV:-}" ] && warm='["sampling"]'
module jit_smoke "{\"environment\": $env_json, \"launch\": \"always\", \"warm\": $warm$venv_arg}"

"$py" - "$out" "$cuda_home" "$archs" <<'PY'
import json, os, sys
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
fi = f.get("flashinfer", {})
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
width = max(len(r[0]) for r in rows)
for name, ok, detail in rows:
    print("%-4s  %-*s  %s" % ("PASS" if ok else "FAIL", width, name, detail))
failed = sum(1 for r in rows if not r[1])
print("%d passed, %d failed" % (len(rows) - failed, failed))
sys.exit(1 if failed else 0)
PY
