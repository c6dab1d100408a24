#!/usr/bin/env bash
# GPU check (one command, a few minutes): on a machine with a real NVIDIA GPU and a CUDA toolkit, run
#   1. cuda_facts against the real nvidia-smi (one call) and the toolkits found,
#   2. jit_smoke: saxpy compiled for the GPU's own arch with the toolkit's nvcc and LAUNCHED (launch=always),
#   3. optionally (GPU_VENV=<venv with FlashInfer and a CUDA torch>) FlashInfer's JIT warm-up and a sampling run,
#      in the environment the service role writes (with SGLang in the venv: SGLang's arch list, from cuda_facts),
#   4. on every GPU, what SGLang's worker does: the real set_cuda_arch() from GPU_VENV, then FlashInfer's sampling
#      kernel on that GPU alone (CUDA_VISIBLE_DEVICES=<its UUID>: nvidia-smi's index i is not CUDA's i under
#      CUDA's default FASTEST_FIRST order); the list must be the same before and after set_cuda_arch() and FlashInfer's
#      build log (and the workspace's files) must show 0 compiles. This step is what issue 12 asks of a GPU run:
#      without GPU_VENV, or without SGLang in it, its row is a FAIL (reason given), never a silent skip.
#   5. the units' DeviceAllow= rules (module_utils/cuda/devices.py, what both unit templates render) resolved the
#      way systemd does against this machine's /proc/devices and its /dev/nvidia* nodes: every node CUDA opens must be
#      allowed; and, where systemd is PID 1, nvidia-smi -L and the jit_smoke launch as transient units with those rules
#      (systemd-run -p DevicePolicy=closed -p DeviceAllow=... -p NoNewPrivileges=yes -p ProtectKernelModules=yes and the
#      units' sandbox, RestrictNamespaces=yes SystemCallFilter=@system-service ProtectProc=invisible, as the units
#      run). Without systemd as PID 1 those two rows are a FAIL that says so.
#   6. the saxpy launch on every GPU alone (CUDA_VISIBLE_DEVICES=<its UUID>), in a transient unit with those rules where
#      systemd is PID 1 (as the boot validator runs on ct200), else as a plain process; one row per GPU.
# A host whose GPUs are of more than one kind (CC 9.0 and 12.0) is checked as the service role serves it: one
# service per GPU kind (the role refuses one service over both, module_utils/sglang_rules.mixed_refusal), each with
# its own CUDA_VISIBLE_DEVICES, SGLang's list for that kind, its own warm-up, then the per-GPU step.
# Prints a pass/fail table. Needs no network: the modules run as plain Python with ansible-core's module_utils (from
# .venv after `make collection`, or any python3 that imports ansible).
#
# Why step 4 does not start the real SGLang server on a small model, as issue 12 asks first: no package on PyPI is
# known to ship a checkpoint SGLang can load offline (config.json, safetensors and a tokenizer of an architecture it
# supports). The package lists searched (names tiny*/toy*/mini*) hold course placeholders, toy trainers and libraries
# that fetch weights from a model hub at run time; the hub's tiny random-weight models are not packages. What it would
# take without a package: write a random-weight model with the venv's own transformers (an SGLang dependency, works
# offline), e.g. LlamaForCausalLM(LlamaConfig(hidden_size=256, num_attention_heads=4 (head_dim 64, a size FlashInfer's
# kernels take), num_hidden_layers=2, intermediate_size=512, vocab_size=1024)).save_pretrained(dir), start
# `python -m sglang.launch_server --model-path dir --skip-tokenizer-init --sampling-backend flashinfer` in the
# service's environment on each GPU kind, POST /generate with input_ids and temperature > 0, top_p < 1, top_k, and
# read FlashInfer's build log. Not written: it must be proven on a GPU first, and none was at hand for this change;
# until then step 4 is the fallback the issue allows (set_cuda_arch + the sampling kernel on every GPU, 0 compiles).
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
  # the newest versioned toolkit with an nvcc: the highest cuda-13.*, then 12.9; /usr/local/cuda (often 12.8) last
  mapfile -t candidates < <(printf '%s\n' /usr/local/cuda-13.* | sort -rV)
  for d in "${candidates[@]}" /usr/local/cuda-12.9 /usr/local/cuda; do
    if [ -x "$d/bin/nvcc" ]; then cuda_home=$d; break; fi
  done
fi
toolkit_root=$(dirname "${cuda_home:-/usr/local/cuda}")
sys_path="$cuda_home/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

module() {  # module name, args JSON[, result name] -> result JSON in $out/<result name, default the module's>.json
  local name=${3:-$1}
  printf '{"ANSIBLE_MODULE_ARGS": %s}' "$2" > "$out/$name.args"
  timeout 280 "$py" -m "ansible_collections.blackwell.inference.plugins.modules.$1" "$out/$name.args" > "$out/$name.json" 2> "$out/$name.err" < /dev/null
}  # (stdin closed: called in a loop that reads groups.tsv)

cp /proc/devices "$out/proc-devices.start" 2>/dev/null  # before any CUDA process here loads nvidia-uvm
venv_arg=""; [ -n "${GPU_VENV:-}" ] && venv_arg=", \"venv\": \"$GPU_VENV\""
module cuda_facts "{\"environment\": {\"CUDA_HOME\": \"$cuda_home\", \"PATH\": \"$sys_path\"}, \"toolkit_root\": \"$toolkit_root\"$venv_arg}"

# The services to check, as the role would plan them: one over every GPU, or, where SGLang's workers set different
# lists on different GPU kinds, one per kind. One line each, fields split by "|" (read keeps empty ones): name,
# CUDA_VISIBLE_DEVICES (UUIDs, empty: all), FLASHINFER_CUDA_ARCH_LIST (SGLang's for those GPUs, empty: FlashInfer's
# own), then "index=uuid" per GPU, separated by spaces.
"$py" - "$out/cuda_facts.json" > "$out/groups.tsv" 2> "$out/groups.err" <<'PY'
import json, sys
from ansible_collections.blackwell.inference.plugins.module_utils.sglang import rules as sglang_rules
f = json.load(open(sys.argv[1]))["ansible_facts"]["blackwell_cuda"]
gpus = sorted(f.get("gpus") or [], key=lambda g: g["index"])
sg = f.get("sglang") or {}
per_cc = {w["compute_capability"]: w["arch_list"] for w in sg.get("workers") or []}
if sglang_rules.mixed_refusal(sg):
    for cc in sorted({g["compute_capability"] for g in gpus}, key=lambda c: tuple(int(x) for x in c.split("."))):
        kind = [g for g in gpus if g["compute_capability"] == cc]
        print("|".join(["cc" + cc, ",".join(g["uuid"] for g in kind), per_cc.get(cc, ""), " ".join("%d=%s" % (g["index"], g["uuid"]) for g in kind)]))
elif gpus:
    print("|".join(["all", "", sg.get("arch_list") or "", " ".join("%d=%s" % (g["index"], g["uuid"]) for g in gpus)]))
PY
has_sglang=$("$py" -c 'import json, sys; s = json.load(open(sys.argv[1]))["ansible_facts"]["blackwell_cuda"].get("sglang") or {}; print(s.get("version") or "")' "$out/cuda_facts.json" 2>/dev/null)
warm='[]'; [ -n "${GPU_VENV:-}" ] && warm='["sampling"]'

while IFS='|' read -r name visible archs gpu_list; do
  # the service's FlashInfer inputs: its GPUs, SGLang's arch list for them, one workspace base and build log here
  svc_env="\"FLASHINFER_WORKSPACE_BASE\": \"$out/jit\", \"FLASHINFER_JIT_BUILD_LOG\": \"$out/jit-builds.jsonl\""
  [ -n "$archs" ] && svc_env="$svc_env, \"FLASHINFER_CUDA_ARCH_LIST\": \"$archs\""
  [ -n "$visible" ] && svc_env="$svc_env, \"CUDA_VISIBLE_DEVICES\": \"$visible\""
  env_json="{\"CUDA_HOME\": \"$cuda_home\", \"PATH\": \"$sys_path\", $svc_env}"
  # FlashInfer's and SGLang's answers in that environment (the one the service runs in), then the smoke there
  module cuda_facts "{\"environment\": $env_json, \"toolkit_root\": \"$toolkit_root\"$venv_arg}" "service_facts-$name"
  module jit_smoke "{\"environment\": $env_json, \"launch\": \"always\", \"warm\": $warm$venv_arg}" "jit_smoke-$name"
  # 4. SGLang's worker on each of its GPUs: set_cuda_arch() first, FlashInfer's sampling after it (as SGLang's sampler
  # imports it); not run without SGLang in GPU_VENV (the table says so)
  [ -n "$has_sglang" ] || continue
  for pair in $gpu_list; do
    i=${pair%%=*} uuid=${pair#*=}
    (
      export CUDA_VISIBLE_DEVICES=$uuid CUDA_HOME=$cuda_home PATH="$cuda_home/bin:$PATH" FLASHINFER_WORKSPACE_BASE="$out/jit" \
        FLASHINFER_JIT_BUILD_LOG="$out/jit-builds.jsonl"
      if [ -n "$archs" ]; then export FLASHINFER_CUDA_ARCH_LIST=$archs; else unset FLASHINFER_CUDA_ARCH_LIST; fi
      timeout 280 "${GPU_VENV:-}/bin/python" - "$i" "$name" > "$out/sglang-gpu$i.json" 2> "$out/sglang-gpu$i.err" <<'PY'
import glob, json, os, sys, time
start = time.time()
before = os.environ.get("FLASHINFER_CUDA_ARCH_LIST")
try:
    from sglang.srt.utils import common
except ImportError:  # before 0.5.3
    from sglang.srt import utils as common
common.set_cuda_arch()
after = os.environ.get("FLASHINFER_CUDA_ARCH_LIST")
import torch
from flashinfer import sampling
from flashinfer.jit import env as jit_env
probs = torch.softmax(torch.randn(4, 32000, device="cuda"), dim=-1)
ids = sampling.top_k_top_p_sampling_from_probs(probs, top_k=50, top_p=0.9)
torch.cuda.synchronize()
log = os.environ["FLASHINFER_JIT_BUILD_LOG"]
builds = [r for r in map(json.loads, filter(str.strip, open(log))) if r.get("pid") == os.getpid()] if os.path.exists(log) else []
workspace = str(jit_env.FLASHINFER_WORKSPACE_DIR)
# a second witness, for a FlashInfer that logs nothing: a library in the workspace written since this worker started
written = [p for p in glob.glob(os.path.join(workspace, "cached_ops", "**", "*.so"), recursive=True) if os.path.getmtime(p) >= start]
print(json.dumps({"gpu": sys.argv[1], "service": sys.argv[2], "cc": "%d.%d" % torch.cuda.get_device_capability(), "before": before,
                  "arch_list": after, "workspace": workspace, "ids": ids.tolist(),
                  "compiles": [b for b in builds if b.get("seconds", 0) >= 1.0], "written": written}))
PY
    )
  done
done < "$out/groups.tsv"

# 5. The units' DeviceAllow= rules against this machine: resolved as systemd does (this /proc/devices, these nodes),
# then, where systemd is PID 1, run under them as transient units.
"$py" - "$out" > "$out/device_allow.json" 2> "$out/device_allow.err" <<'PY'
import glob, json, os, re, stat, sys
from ansible_collections.blackwell.inference.plugins.module_utils.cuda import devices as sd
out = sys.argv[1]
text = open(sd.PROC_DEVICES).read()
nodes = {}
for path in glob.glob("/dev/nvidia*"):
    st = os.stat(path)
    if stat.S_ISCHR(st.st_mode):
        nodes[path] = ("c", os.major(st.st_rdev), os.minor(st.st_rdev))
minors = sorted(nodes[p][2] for p in nodes if re.fullmatch(r"/dev/nvidia\d+", p))
required = sd.required_nodes(text, minors)
rules = sd.resolve(sd.allow_entries(), text)
# the real node (its own major:minor) where it exists, else what /proc/devices says it would be
denied = sorted(p for p, node in required.items() if not sd.allows(rules, nodes.get(p, node)))
missing = sorted(p for p in required if p not in nodes)
try:
    uvm_at_start = sd.UVM in sd.nvidia_majors(open(os.path.join(out, "proc-devices.start")).read())
except OSError:
    uvm_at_start = None
print(json.dumps({"majors": sd.nvidia_majors(text), "gpu_nodes": len(minors), "denied": denied, "missing": missing,
                  "uvm_at_start": uvm_at_start, "rules": sd.allow_entries()}))
PY
mapfile -t allow < <("$py" -c 'from ansible_collections.blackwell.inference.plugins.module_utils.cuda import devices as sd
print("\n".join(sd.allow_entries()))' 2>/dev/null)
# and the units' system-call and process sandbox (module_utils/service/settings.py: SANDBOX): CUDA's own system calls
# (the driver's ioctls and mappings, its memory policy) pass the filter only where a GPU answers them
mapfile -t sandbox < <("$py" -c 'from ansible_collections.blackwell.inference.plugins.module_utils.service import settings
print("\n".join("%s=%s" % kv for kv in settings.SANDBOX))' 2>/dev/null)
props=(-p DevicePolicy=closed -p NoNewPrivileges=yes -p ProtectKernelModules=yes -p SystemCallArchitectures=native)
for rule in "${allow[@]}"; do props+=(-p "DeviceAllow=$rule"); done
for setting in "${sandbox[@]}"; do props+=(-p "$setting"); done
if [ "$(cat /proc/1/comm 2>/dev/null)" = systemd ] && [ "${#allow[@]}" -gt 0 ] && [ "${#sandbox[@]}" -gt 0 ]; then
  nvsmi=$(command -v nvidia-smi || echo nvidia-smi)
  timeout 120 systemd-run --wait --pipe --quiet --collect "${props[@]}" "$nvsmi" -L > "$out/unit-nvidia-smi.out" 2>&1 < /dev/null
  echo $? > "$out/unit-nvidia-smi.rc"
  printf '{"ANSIBLE_MODULE_ARGS": {"environment": {"CUDA_HOME": "%s", "PATH": "%s"}, "launch": "always"}}' "$cuda_home" "$sys_path" \
    > "$out/unit-jit_smoke.args"
  timeout 300 systemd-run --wait --pipe --quiet --collect "${props[@]}" -p "Environment=PYTHONPATH=$PYTHONPATH" \
    "$(command -v "$py")" -m ansible_collections.blackwell.inference.plugins.modules.jit_smoke "$out/unit-jit_smoke.args" \
    > "$out/unit-jit_smoke.json" 2> "$out/unit-jit_smoke.err" < /dev/null
else
  echo "not run: systemd is not PID 1 here ($(cat /proc/1/comm 2>/dev/null || echo unknown)), or the rules or the sandbox could not be read" \
    > "$out/unit-not-run"
fi

# 6. The saxpy launch on every GPU, each alone (CUDA_VISIBLE_DEVICES=<its UUID>), where systemd is PID 1 in a transient
# unit with the units' device rules (what the boot validator does on ct200), else as a plain process.
mapfile -t uuids < <("$py" -c 'import json, sys
f = json.load(open(sys.argv[1])).get("ansible_facts", {}).get("blackwell_cuda", {})
print("\n".join(g["uuid"] for g in sorted(f.get("gpus") or [], key=lambda g: g["index"])))' "$out/cuda_facts.json" 2>/dev/null)
for i in "${!uuids[@]}"; do
  launch_args=$(printf '{"environment": {"CUDA_HOME": "%s", "PATH": "%s", "CUDA_VISIBLE_DEVICES": "%s"}, "launch": "always"}' \
    "$cuda_home" "$sys_path" "${uuids[$i]}")
  if [ ! -e "$out/unit-not-run" ]; then
    printf '{"ANSIBLE_MODULE_ARGS": %s}' "$launch_args" > "$out/gpu-launch-$i.args"
    timeout 300 systemd-run --wait --pipe --quiet --collect "${props[@]}" -p "Environment=PYTHONPATH=$PYTHONPATH" \
      "$(command -v "$py")" -m ansible_collections.blackwell.inference.plugins.modules.jit_smoke "$out/gpu-launch-$i.args" \
      > "$out/gpu-launch-$i.json" 2> "$out/gpu-launch-$i.err" < /dev/null
  else
    module jit_smoke "$launch_args" "gpu-launch-$i"
  fi
done

"$py" - "$out" "$cuda_home" "${GPU_VENV:-}" "$has_sglang" <<'PY'
import json, os, sys
from ansible_collections.blackwell.inference.plugins.module_utils.service import plan as service_plan
from ansible_collections.blackwell.inference.plugins.module_utils.sglang import rules as sglang_rules
out, cuda_home, gpu_venv, has_sglang = sys.argv[1:5]
rows = []
def load(name):
    try:
        return json.load(open(os.path.join(out, name + ".json")))
    except (OSError, ValueError):
        try:
            err = open(os.path.join(out, name + ".err")).read().strip()[-500:]
        except OSError:
            err = ""
        return {"failed": True, "msg": err or "no output"}
def cuda(result):
    return result.get("ansible_facts", {}).get("blackwell_cuda", {})
facts = load("cuda_facts")
f = cuda(facts)
gpus = f.get("gpus", [])
rows.append(("nvidia-smi (one query)", bool(gpus) and not facts.get("failed"),
             ", ".join(sorted({"%s CC %s" % (g["name"], g["compute_capability"]) for g in gpus})) or facts.get("msg", "no GPU")))
drv = f.get("driver", {})
rows.append(("driver", bool(drv.get("present")), "%s (CUDA <= %s, open kernel module: %s)" % (drv.get("version"), drv.get("cuda_version"), drv.get("open_kernel_module"))))
tk = [t for t in f.get("toolkits", []) if t["path"] == cuda_home or os.path.realpath(t["path"]) == os.path.realpath(cuda_home or "/nonexistent")]
rows.append(("toolkit " + (cuda_home or "(none found)"), bool(tk and tk[0].get("version")), tk[0].get("release") if tk else "no nvcc"))
try:
    groups = [line.rstrip("\n").split("|") for line in open(os.path.join(out, "groups.tsv")) if line.strip()]
except OSError:
    groups = []
mixed = sglang_rules.mixed_refusal(f.get("sglang"))
if mixed:  # what the role answers for one service over every GPU; each kind is checked below as its own service
    rows.append(("one service over every GPU: refused", True, mixed[: mixed.find(". ") + 1]))
for name, visible, archs, pairs in groups:
    pairs = pairs.split()
    label = "" if name == "all" else " [%s: CUDA_VISIBLE_DEVICES=%s]" % (name, ",".join(p.split("=", 1)[0] for p in pairs))
    svc = cuda(load("service_facts-" + name))
    fi, sg = svc.get("flashinfer", {}), svc.get("sglang") or {}
    if fi.get("version"):
        rows.append(("FlashInfer %s prediction%s" % (fi["version"], label), bool(fi.get("accepted")), "CUDA %s, archs %s %s" % (fi.get("cuda_version"), fi.get("target_archs"), fi.get("error") or "")))
        choice = service_plan.arch_choice(fi.get("target_archs") or [], sg or None, "")
        rows.append(("the role's arch list%s" % label, not choice["error"] and choice["archs"] == (archs or choice["archs"]),
                     "%s (%s) %s" % (choice["archs"], choice["source"], choice["error"] or "")))
    smoke = load("jit_smoke-" + name)
    steps = smoke.get("steps", {})
    c = steps.get("compile", {})
    rows.append(("compile saxpy%s%s" % ("".join(" " + a for a in c.get("archs", [])), label), bool(c.get("ok")), "%s s %s" % (c.get("seconds"), "" if c.get("ok") else smoke.get("stderr", smoke.get("msg", ""))[-300:])))
    la = steps.get("launch", {})
    ccs = " ".join(sorted({g["compute_capability"] for g in gpus if not visible or g["uuid"] in visible.split(",")}))
    rows.append(("launch on the GPU (CC %s)%s" % (ccs, label), bool(la.get("launched") and la.get("ok")), la.get("detail") or la.get("reason") or smoke.get("msg", "")))
    if "warm" in steps:
        w = steps["warm"]
        rows.append(("FlashInfer warm-up + sampling%s" % label, not w.get("error") and bool((w.get("gpu_run") or {}).get("ok")), "%s s %s" % (w.get("seconds"), w.get("error") or w.get("gpu_run"))))
    if sg.get("version"):
        rows.append(("SGLang %s: one workspace for both import orders%s" % (sg["version"], label), bool(sg.get("orders_agree")), "arch list %s" % sg.get("arch_list")))
    # 4. SGLang's worker on every GPU: a result for each, or a FAIL that says why there is none
    why_not = ("GPU_VENV not given (a venv with SGLang, FlashInfer and a CUDA torch)" if not gpu_venv
               else "no SGLang in %s" % gpu_venv if not has_sglang else None)
    for pair in pairs:
        gpu = pair.split("=", 1)[0]
        title = "GPU %s: set_cuda_arch, sampling, 0 compiles" % gpu
        if why_not:
            rows.append((title, False, "not run: " + why_not))
            continue
        try:
            r = json.load(open(os.path.join(out, "sglang-gpu%s.json" % gpu)))
            ok = not r["compiles"] and not r["written"] and r["before"] == r["arch_list"]
            rows.append((title, ok, "CC %s, list %s -> %s, %s %s" % (r["cc"], r["before"], r["arch_list"], r["workspace"], r["compiles"] or r["written"] or "")))
        except (OSError, ValueError, KeyError):
            try:
                err = open(os.path.join(out, "sglang-gpu%s.err" % gpu)).read().strip()[-300:]
            except OSError:
                err = "not run"
            rows.append((title, False, err or "no output"))
# 5. the units' DeviceAllow= rules on this machine, resolved and run
dev = load("device_allow")
if dev.get("failed"):
    rows.append(("units' DeviceAllow= vs /proc/devices here", False, dev.get("msg")))
else:
    note = "" if dev["uvm_at_start"] is not False else "; nvidia-uvm was not loaded when this script started: load it before the units at boot"
    needed = set(dev["missing"]) - {"/dev/nvidia-uvm-tools"}  # profiling only; nvidia-modprobe makes it with nvidia-uvm
    rows.append(("units' DeviceAllow= vs /proc/devices here", not dev["denied"] and not needed and dev["gpu_nodes"] == len(gpus) > 0,
                 "majors %s, %d /dev/nvidiaN for %d GPUs, denied %s, missing %s%s" % (dev["majors"], dev["gpu_nodes"], len(gpus), dev["denied"],
                                                                                  dev["missing"], note)))
not_run = os.path.join(out, "unit-not-run")
for title in ("nvidia-smi -L in a transient unit with the units' device rules", "jit_smoke launch in a transient unit with the units' device rules"):
    if os.path.exists(not_run):
        rows.append((title, False, open(not_run).read().strip()))
    elif title.startswith("nvidia-smi"):
        try:
            rc, text = open(os.path.join(out, "unit-nvidia-smi.rc")).read().strip(), open(os.path.join(out, "unit-nvidia-smi.out")).read()
        except OSError:
            rc, text = "?", "no output"
        listed = sum(1 for line in text.splitlines() if line.startswith("GPU "))
        rows.append((title, rc == "0" and listed == len(gpus) and listed > 0, "rc %s, %d of %d GPUs listed %s" % (rc, listed, len(gpus), "" if rc == "0" else text.strip()[-300:])))
    else:
        r = load("unit-jit_smoke")
        la = r.get("steps", {}).get("launch", {})
        rows.append((title, bool(la.get("launched") and la.get("ok")), la.get("detail") or la.get("reason") or r.get("msg", "")))
# 6. the saxpy launch on every GPU, each alone
where = "a plain process (systemd is not PID 1)" if os.path.exists(os.path.join(out, "unit-not-run")) else "a transient unit with the units' device rules"
for i, g in enumerate(sorted(gpus, key=lambda g: g["index"])):
    r = load("gpu-launch-%d" % i)
    la = r.get("steps", {}).get("launch", {})
    rows.append(("saxpy launch on GPU %s alone, in %s" % (g["index"], where), bool(la.get("launched") and la.get("ok")),
                 la.get("detail") or la.get("reason") or r.get("msg", "no output")))
if not gpus:
    rows.append(("saxpy launch on every GPU", False, "not run: no GPU found"))
if not groups:
    try:
        why = open(os.path.join(out, "groups.err")).read().strip()[-300:]
    except OSError:
        why = ""
    rows.append(("every GPU: set_cuda_arch, sampling, 0 compiles", False, "not run: no GPU found %s" % why))
width = max(len(r[0]) for r in rows)
for name, ok, detail in rows:
    print("%-4s  %-*s  %s" % ("PASS" if ok else "FAIL", width, name, detail))
failed = sum(1 for r in rows if not r[1])
print("%d passed, %d failed" % (len(rows) - failed, failed))
sys.exit(1 if failed else 0)
PY
