#!/usr/bin/env python
"""Where the CPU of a `make test` run goes, from Linux process accounting (the acct package), lab hosts included
(an nspawn machine's processes are accounted in the host's file too).

    apt-get install acct; accton /var/log/bw-test.acct
    make test
    accton off; python3 tools/cpu_breakdown.py /var/log/bw-test.acct

The suite is CPU-bound on 2 cores, so its wall time is about this total over 2: a change that does not lower one of
these lines does not make `make test` faster. Categories go by command name (16 characters, as the kernel keeps it);
a venv's `python` (the lab's service, smoke, pip, checks) is told apart by its own CPU time.
"""

import collections
import subprocess
import sys

ANSIBLE = {"ansible-playboo", "ansible", "ansible-doc", "ansible-lint", "ansible-test", "ansible-galaxy", "ansible-config", "molecule"}
NVCC = {"cicc", "cc1plus", "ptxas", "cudafe++", "fatbinary", "nvcc", "nvlink", "gcc", "g++", "cc1", "as", "ld", "collect2", "ninja"}
APT = {"dpkg", "dpkg-deb", "dpkg-query", "dpkg-split", "apt-get", "apt-mark", "apt-config", "http", "gpgv", "store", "file", "debootstrap"}
# a venv python that ran longer than this is a pip install; one between IMPORT and PIP, an import of torch + FlashInfer
PIP_S, IMPORT_S = 20.0, 3.5


def category(comm, cpu):
    if comm in ANSIBLE:
        return "Ansible on the controller (plays, workers, ansible-doc/-lint/-test)"
    if comm == "python3":
        return "python3: Ansible's modules on the lab hosts, and scripts"
    if comm == "python":
        if cpu >= PIP_S:
            return "venv python: pip installs"
        if cpu >= IMPORT_S:
            return "venv python: torch + FlashInfer imports (service starts, smokes, checks, probes)"
        return "venv python: other"
    if comm in NVCC:
        return "nvcc and its compilers (JIT modules, smoke kernels)"
    if comm in APT:
        return "apt, dpkg, debootstrap"
    if comm in ("ssh", "sshd"):
        return "ssh"
    return "other"


def main(path):
    out = subprocess.run(["dump-acct", path], capture_output=True, text=True, check=True).stdout
    cpu, count = collections.Counter(), collections.Counter()
    for line in out.splitlines():
        fields = [f.strip() for f in line.split("|")]
        if len(fields) < 5:
            continue
        seconds = (float(fields[2]) + float(fields[3])) / 100.0  # user + system, in clock ticks of 1/100 s
        key = category(fields[0], seconds)
        cpu[key] += seconds
        count[key] += 1
    total = sum(cpu.values())
    print("%.1f CPU-minutes in all" % (total / 60))
    for key, seconds in cpu.most_common():
        print("%7.1f min  %5.1f %%  %7d processes  %s" % (seconds / 60, 100 * seconds / total, count[key], key))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/var/log/account/pacct")
