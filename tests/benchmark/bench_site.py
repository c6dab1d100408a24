#!/usr/bin/env python
"""Benchmark site.yml on the lab host against baseline plays in the same run. Not a test: it prints numbers and
exits 1 when a ratio is over its target (issue 15's targets).

Needs ct200 up and converged (make demo). Each measurement is the median of BENCH_RUNS runs of ansible-playbook
against ct200 over SSH, the runs of all measurements interleaved (run 1 of each, then run 2 of each, ...), so a
slower minute of the machine hits them all alike:

  baseline      a play with gather_facts (subset min, as site.yml) and one ansible.builtin.ping
  baseline+fi   the baseline and one FlashInfer import in the service's venv (the floor of a live smoke)
  pings x5      the baseline and five more pings
  facts x5      the baseline and five cuda_facts calls (no probe): a call's cost beyond a ping's
  no-op         site.yml on a converged host (0 changed: no pip, no apt change, no smoke)
  verify        site.yml --tags verify (read-only checks plus the live JIT smoke on a warm cache)
  builtins      tests/benchmark/builtins_site.yml: the no-op's steps in plain ansible.builtin modules (the pinned
                packages and holds, pip, the drop-in, the service, its health endpoint), its inputs read from the host

With BENCH_AGAINST=<another checkout> (its .collections link made), its site.yml's no-op and --tags verify run too,
with its own ansible.cfg, interleaved with the rest on the same host: an A/B of two commits (issue 46 measured the
removal of the preload callback this way).

The plays run against a copy of the inventory whose templated host variables (the lab's SSH key path, a lookup of
LAB_DIR) are worked out once, as literal values: a fleet's inventory names its key file, and a lookup in a connection
variable is evaluated again in every task (about 0.1 s over a no-op's 55 tasks, 2 ms over the baseline's two).

Targets: no-op <= 3.0x baseline, verify <= 2.0x baseline+fi, cuda_facts < 0.2 s per call beyond a ping.

With BENCH_CONVERGE=1 it first boots ct200 from the `before` image and times the first converge, with the share of
it that is apt (the toolkit packages), pip (the venv's packages) and nvcc (the toolkit's kernel check and the JIT
warm-up), from the per-task times of ansible.posix.profile_tasks; then it measures on the converged host. After the
timed runs, one more no-op with profile_tasks prints how many tasks it ran, their sum and the slowest.

  BENCH_RUNS=5 BENCH_INVENTORY=inventories/lab/hosts.yml BENCH_HOST=ct200 python tests/benchmark/bench_site.py

BENCH_EXTRA_VARS names a vars file given to every site.yml run (-e @file), to measure another configuration on a host
converged with it first: the role's default apt source (deb822) on the lab, for one, after `dpkg --purge cuda-keyring`
on the host and one converge with

  cuda_toolkit_repo_source: deb822
  cuda_toolkit_repo_key_url: file:/srv/lab-key.asc   # the mirror's key, armored (tests/lab/before/test_cuda_repo_trust.py)
  cuda_toolkit_repo_key_fingerprint: <the mirror key's fingerprint>
"""

import base64
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
INVENTORY = os.environ.get("BENCH_INVENTORY", os.path.join(ROOT, "inventories", "lab", "hosts.yml"))
HOST = os.environ.get("BENCH_HOST", "ct200")
RUNS = int(os.environ.get("BENCH_RUNS", "5"))
VENV = os.environ.get("BENCH_VENV", "/opt/sglang/current")
AGAINST = os.environ.get("BENCH_AGAINST")
EXTRA_VARS = ["-e", "@" + os.path.abspath(os.environ["BENCH_EXTRA_VARS"])] if os.environ.get("BENCH_EXTRA_VARS") else []
TARGETS = {"no-op": 3.0, "verify": 2.0, "facts": 0.2}

PLAY = """---
- name: Baseline - facts and a ping{extra_name}
  hosts: {host}
  gather_facts: true
  gather_subset: [min]
  tasks:
    - name: Ping
      ansible.builtin.ping:
{extra}"""
FI_IMPORT = """    - name: One FlashInfer import in the service's venv
      ansible.builtin.command:
        argv: [{venv}/bin/python, -c, import flashinfer]
      changed_when: false
"""
PINGS = """    - name: Ping {i}
      ansible.builtin.ping:
"""
FACTS = """    - name: cuda_facts {i}
      blackwell.inference.cuda_facts:
        nvidia_smi: nvidia-smi
"""
# per-task shares of the first converge, by task name (profile_tasks' lines)
SHARES = {
    "apt": re.compile(r"cuda_toolkit : (Install the pinned components|Install the checked package|Refresh the apt cache)"),
    "pip": re.compile(r"sglang_venv : (Install the pinned packages|Install the packages that come without|Create the venv)"),
    "nvcc": re.compile(r"(cuda_toolkit : Each toolkit compiles a kernel|sglang_service : Run the JIT smoke)"),
}


def env():
    return dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_FORCE_COLOR="0", NO_COLOR="1", BLACKWELL_INFERENCE_HEARTBEAT="0")


def configured_callbacks():
    """ansible.cfg's callbacks_enabled, as a list."""
    with open(os.path.join(ROOT, "ansible.cfg"), encoding="utf-8") as fh:
        line = re.search(r"^callbacks_enabled\s*=\s*(.*)$", fh.read(), re.M)
    return [n.strip() for n in (line.group(1) if line else "").split(",") if n.strip()]


def literal_inventory(tmp, inventory=INVENTORY):
    """A copy of the inventory (YAML) in tmp with each templated variable of HOST's replaced by its value, as
    ansible's debug module works them out; the path of the copy."""
    with open(inventory, encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    found = []

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "hosts" and isinstance(value, dict) and isinstance(value.get(HOST), dict):
                    found.append(value[HOST])
                walk(value)

    walk(data)
    for host_vars in found:
        for key, value in list(host_vars.items()):
            if isinstance(value, str) and "{{" in value:
                proc = subprocess.run(
                    [os.path.join(BIN, "ansible"), "-i", inventory, HOST, "-m", "ansible.builtin.debug", "-a", "var=" + key, "-o"],
                    env=env(),
                    cwd=ROOT,
                    capture_output=True,
                    text=True,
                    check=True,
                )
                host_vars[key] = json.loads(proc.stdout.split("=>", 1)[1])[key]
    path = os.path.join(tmp, "inventory.yml")
    with open(path, "w", encoding="utf-8") as fh:
        yaml.safe_dump(data, fh)
    # the inventory's host_vars and group_vars directories, next to the copy
    for sub in ("host_vars", "group_vars"):
        src = os.path.join(os.path.dirname(os.path.abspath(inventory)), sub)
        if os.path.isdir(src):
            os.symlink(src, os.path.join(tmp, sub))
    return path


def once(args, extra_env=None, root=ROOT):
    start = time.perf_counter()
    cmd = [os.path.join(BIN, "ansible-playbook"), "-i", INVENTORY, *args]
    proc_env = dict(env(), ANSIBLE_CONFIG=os.path.join(root, "ansible.cfg"), **(extra_env or {}))
    proc = subprocess.run(cmd, env=proc_env, cwd=root, capture_output=True, text=True, check=False)
    took = time.perf_counter() - start
    recap = re.search(r"^%s\s+:.*changed=(\d+).*failed=(\d+)" % re.escape(HOST), proc.stdout, re.M)
    if proc.returncode != 0 or not recap or recap.group(1) != "0":
        sys.exit("%s: rc=%s, recap %s\n%s" % (" ".join(args), proc.returncode, recap and recap.group(0), proc.stdout[-3000:]))
    return took, proc.stdout


def on_host(module, args):
    """The result of an ad-hoc call of module on HOST (through the literal inventory), as a dict."""
    argv = [os.path.join(BIN, "ansible"), "-i", INVENTORY, HOST, "-m", module, "-a", args]
    json_env = dict(env(), ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.posix.json")
    proc = subprocess.run(argv, env=json_env, cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"][HOST]


def builtins_vars(tmp):
    """The inputs of builtins_site.yml, as the converged host and its host_vars have them: the held packages at
    their versions, the venv's pins and the service's drop-in (read back from the host); a vars file's path."""
    with open(os.path.join(os.path.dirname(os.path.abspath(INVENTORY)), "host_vars", HOST + ".yml"), encoding="utf-8") as fh:
        hv = yaml.safe_load(fh)
    unit = hv["sglang_service_name"]
    dropin = "/etc/systemd/system/%s.service.d/50-blackwell-inference.conf" % unit
    pins = on_host("ansible.builtin.shell", "apt-mark showhold | xargs dpkg-query -W -f '${Package}=${Version} '")["stdout"].split()
    pip_args = " ".join((["--no-index"] if hv.get("sglang_venv_no_index") else []) + ["--find-links=" + d for d in hv.get("sglang_venv_find_links", [])])
    doc = {
        "bench_host": HOST,
        "bench_apt_pins": pins,
        "bench_pip_pins": hv["sglang_venv_packages"],
        "bench_pip_no_deps": hv.get("sglang_venv_packages_no_deps", []),
        "bench_pip_args": pip_args,
        "bench_venv": VENV,
        "bench_unit": unit + ".service",
        "bench_dropin_path": dropin,
        "bench_dropin_content": base64.b64decode(on_host("ansible.builtin.slurp", "src=" + dropin)["content"]).decode(),
        "bench_health_url": "http://127.0.0.1:%s/health" % hv.get("sglang_service_port", 30000),
    }
    path = os.path.join(tmp, "builtins-vars.yml")
    with open(path, "w", encoding="utf-8") as fh:
        yaml.safe_dump(doc, fh)
    return path


def write_play(tmp, name, extra="", extra_name=""):
    path = os.path.join(tmp, name + ".yml")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(PLAY.format(host=HOST, extra=extra, extra_name=extra_name))
    return path


def profiled():
    """What makes a run as ansible.cfg configures it print profile_tasks' per-task times for every task."""
    return {"ANSIBLE_CALLBACKS_ENABLED": ",".join([*configured_callbacks(), "ansible.posix.profile_tasks"]), "PROFILE_TASKS_TASK_OUTPUT_LIMIT": "all"}


def task_times(stdout):
    """[(task name, seconds)] from profile_tasks' closing table."""
    out = []
    for line in stdout.splitlines():
        m = re.match(r"^(.*?) -+ (\d+\.\d+)s$", line.strip())
        if m:
            out.append((m.group(1), float(m.group(2))))
    return out


def noop_profile():
    """One more no-op, with per-task times: how many tasks, their sum, the slowest."""
    _took, stdout = once(["site.yml", "-l", HOST, *EXTRA_VARS], profiled())
    return task_times(stdout)


def first_converge():
    """Boot ct200 from the before image, converge it once, and return (seconds, {share: seconds})."""
    sys.path.insert(0, ROOT)
    from tests.lab import images  # only for BENCH_CONVERGE

    index = os.environ.get("LAB_INDEX", "0")
    subprocess.run([images.LABCTL, "up", HOST, index, os.environ.get("LAB_SUITE", "bookworm"), images.name("before")], check=True, capture_output=True)
    start = time.perf_counter()
    proc = subprocess.run(
        [os.path.join(BIN, "ansible-playbook"), "-i", INVENTORY, "site.yml", "-l", HOST],
        env=dict(env(), **profiled()),
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    took = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit("the first converge failed:\n" + proc.stdout[-3000:])
    shares = {}
    for name, seconds in task_times(proc.stdout):
        for share, pattern in SHARES.items():
            if pattern.search(name):
                shares[share] = shares.get(share, 0.0) + seconds
                break
    return took, shares


def main():
    global INVENTORY  # noqa: PLW0603 - every run after the converge uses the literal copy
    converge = first_converge() if os.environ.get("BENCH_CONVERGE") == "1" else None
    with tempfile.TemporaryDirectory() as tmp:
        INVENTORY = literal_inventory(tmp)
        plays = {
            "baseline": [write_play(tmp, "baseline")],
            "baseline+fi": [write_play(tmp, "fi", FI_IMPORT.format(venv=VENV), " and a FlashInfer import")],
            "pings x5": [write_play(tmp, "pings", "".join(PINGS.format(i=i) for i in range(5)), " and five more pings")],
            "facts x5": [write_play(tmp, "facts", "".join(FACTS.format(i=i) for i in range(5)), " and five cuda_facts calls")],
            "no-op": ["site.yml", "-l", HOST, *EXTRA_VARS],
            "verify": ["site.yml", "-l", HOST, "--tags", "verify", *EXTRA_VARS],
            "builtins": [os.path.join(ROOT, "tests", "benchmark", "builtins_site.yml"), "-e", "@" + builtins_vars(tmp)],
        }
        roots = dict.fromkeys(plays, ROOT)
        if AGAINST:
            for name in ("no-op", "verify"):
                plays[name + " @against"], roots[name + " @against"] = plays[name], os.path.abspath(AGAINST)
        once(plays["no-op"])  # warm: the first run after a boot pays for cold caches on both sides
        if AGAINST:
            once(plays["no-op"], root=roots["no-op @against"])
        samples = {name: [] for name in plays}
        for _run in range(RUNS):
            for name, args in plays.items():
                samples[name].append(once(args, root=roots[name])[0])
        profile = noop_profile()
    med = {name: statistics.median(values) for name, values in samples.items()}
    noop = med["no-op"] / med["baseline"]
    verify = med["verify"] / med["baseline+fi"]
    facts = (med["facts x5"] - med["pings x5"]) / 5
    over = []
    print("runs per measurement (median of %d, interleaved):" % RUNS)
    for name, value in med.items():
        print("  %-16s %6.2f s" % (name, value))
    rows = [
        ("site.yml no-op / baseline", noop, TARGETS["no-op"], "x"),
        ("--tags verify / baseline+fi", verify, TARGETS["verify"], "x"),
        ("cuda_facts per call beyond a ping", facts, TARGETS["facts"], " s"),
    ]
    print("%-36s %6.2fx" % ("builtins play / baseline", med["builtins"] / med["baseline"]))
    if AGAINST:
        print("%-36s %6.2fx" % ("no-op @against / baseline", med["no-op @against"] / med["baseline"]))
        print("%-36s %6.2fx" % ("verify @against / baseline+fi", med["verify @against"] / med["baseline+fi"]))
    for label, value, target, unit in rows:
        verdict = "ok" if value <= target else "OVER"
        if verdict == "OVER":
            over.append(label)
        print("%-36s %6.2f%s  (target <= %.1f%s)  %s" % (label, value, unit, target, unit, verdict))
    print("no-op profile (one more run, profile_tasks): %d tasks, %.2f s in tasks; the slowest:" % (len(profile), sum(t for _n, t in profile)))
    for name, seconds in sorted(profile, key=lambda row: -row[1])[:8]:
        print("  %5.2f s  %s" % (seconds, name[:100]))
    if converge:
        took, shares = converge
        print("first converge from the before image: %.0f s" % took)
        for share in SHARES:
            seconds = float(shares.get(share, 0.0))
            print("  %-5s %6.0f s  %3.0f%%" % (share, seconds, 100 * seconds / took))
        print("  other %6.0f s  %3.0f%%" % (took - sum(shares.values()), 100 * (took - sum(shares.values())) / took))
    if over:
        print("over target: " + ", ".join(over))
        sys.exit(1)


if __name__ == "__main__":
    main()
