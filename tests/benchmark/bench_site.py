#!/usr/bin/env python
"""Benchmark site.yml on the lab host against a baseline play in the same run. Not a test: it prints numbers.

Needs ct200 up and converged (make demo). Each measurement is the median of BENCH_RUNS runs of
ansible-playbook against ct200 over SSH:
  baseline   a play with gather_facts (subset min, as site.yml) and one ansible.builtin.ping
  no-op      site.yml on a converged host (0 changed: no pip, no apt change, no smoke)
  verify     site.yml --tags verify (read-only checks plus the live JIT smoke on a warm cache)
and prints each one's ratio to the baseline, and fails if a run does not report 0 changed.
"""

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
INVENTORY = os.path.join(ROOT, "inventories", "lab", "hosts.yml")
RUNS = int(os.environ.get("BENCH_RUNS", "5"))
BASELINE = """---
- name: Baseline - facts and a ping
  hosts: ct200
  gather_facts: true
  gather_subset: [min]
  tasks:
    - name: Ping
      ansible.builtin.ping:
"""


def timed(args):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_FORCE_COLOR="0", NO_COLOR="1")
    samples = []
    for _run in range(RUNS):
        start = time.perf_counter()
        proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", INVENTORY, *args], env=env, cwd=ROOT, capture_output=True, text=True, check=False)
        samples.append(time.perf_counter() - start)
        recap = re.search(r"^ct200\s+:.*changed=(\d+).*failed=(\d+)", proc.stdout, re.M)
        if proc.returncode != 0 or not recap or recap.group(1) != "0":
            sys.exit("%s: rc=%s, recap %s\n%s" % (" ".join(args), proc.returncode, recap and recap.group(0), proc.stdout[-3000:]))
    return statistics.median(samples)


def main():
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as fh:
        fh.write(BASELINE)
    try:
        base = timed([fh.name])
        noop = timed(["site.yml", "-l", "ct200"])
        verify = timed(["site.yml", "-l", "ct200", "--tags", "verify"])
    finally:
        os.unlink(fh.name)
    print("runs per measurement (median): %d" % RUNS)
    print("baseline (gather_facts min + ping): %.2f s" % base)
    print("site.yml no-op rerun:              %.2f s  ratio %.1f" % (noop, noop / base))
    print("site.yml --tags verify:            %.2f s  ratio %.1f" % (verify, verify / base))


if __name__ == "__main__":
    main()
