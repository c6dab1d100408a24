#!/usr/bin/env python
"""Benchmark cuda_facts (no probe) against a baseline in the same run. Not a test: it prints numbers.

1. module alone: the module file run directly with its JSON args (no Ansible around it),
   against `python -c pass` with the same interpreter as the baseline;
2. through Ansible: `ansible localhost -m blackwell.inference.cuda_facts` against
   `ansible localhost -m ansible.builtin.ping`.
Both with the nvidia-smi double answering for 8x RTX PRO 6000.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
DOUBLE = os.path.join(ROOT, "tests", "fixtures", "bin", "nvidia-smi")
MODULE = os.path.join(ROOT, "plugins", "modules", "cuda_facts.py")
RUNS = int(os.environ.get("BENCH_RUNS", "7"))


def timed(cmd, env=None):
    samples = []
    for _run in range(RUNS):
        start = time.perf_counter()
        subprocess.run(cmd, env=env, cwd=ROOT, check=True, capture_output=True)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main():
    args = {"ANSIBLE_MODULE_ARGS": {"nvidia_smi": DOUBLE, "flashinfer_version": "0.7.2.post1", "environment": {"CUDA_HOME": "/usr/local/cuda-13.0"}}}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(args, fh)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, ".collections"), ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))
    out = json.loads(subprocess.run([sys.executable, MODULE, fh.name], env=env, check=True, capture_output=True).stdout)
    assert len(out["ansible_facts"]["blackwell_cuda"]["gpus"]) == 8, out
    base = timed([sys.executable, "-c", "import ansible.module_utils.basic"], env)
    mod = timed([sys.executable, MODULE, fh.name], env)
    smi = timed([DOUBLE, "--query-gpu=index,name,uuid,compute_cap,driver_version,memory.total", "--format=csv,noheader,nounits"])
    adhoc = [os.path.join(BIN, "ansible"), "localhost", "-i", "localhost,", "-c", "local", "-e", "ansible_python_interpreter=" + sys.executable]
    ping = timed([*adhoc, "-m", "ansible.builtin.ping"], env)
    facts = timed([*adhoc, "-m", "blackwell.inference.cuda_facts", "-a", json.dumps(args["ANSIBLE_MODULE_ARGS"])], env)
    os.unlink(fh.name)
    print("runs per measurement (median): %d" % RUNS)
    print("module alone:        %.3f s   (baseline: python importing AnsibleModule %.3f s; module's own work %.3f s)" % (mod, base, mod - base))
    print("  of which the nvidia-smi double (a Python script here; the real tool differs): %.3f s" % smi)
    print("through ansible:     %.3f s   (baseline: ansible.builtin.ping %.3f s; ratio %.2f)" % (facts, ping, facts / ping))


if __name__ == "__main__":
    main()
