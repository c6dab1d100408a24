"""A fleet of three lab hosts, each its own machine booted from the converged image (tests/lab/fleet.py), rolled
by site.yml one host at a time as `ops` with sudo, with a change every host would take (a service variable):

- first, the README's "Your fleet in five steps" and its from-a-checkout lines, each command block run as written
  (issue 48): only the documented changes (the hosts' addresses, the vault password through --vault-password-file,
  /path/to/hosts.yml); the rolling settings in the copied rolling.yml: serial 1 rolls in three batches, serial 3 set
  there rolls in one. This is also the operator account's test (issue 14 items 1 and 2, once
  tests/lab/after/test_operator_account.py): the installed copy runs, not the checkout, as `ops` with sudo (sshd's
  own log), 0 changed, the fleet summary's line for a host (its JSON: the rolls below);

- a wrong variable on the last host is refused by the check play before the first batch: no host is changed;
- the middle host's CUDA 13.0 lost its curand headers (FlashInfer's sampling JIT needs them): the first host is
  converged and serving the change, the broken one fails with its reason and keeps serving its old state, the third
  is never reached and keeps serving its old state; the end-of-run summary says so line by line, and its JSON too."""

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request

import pytest
import testinfra
import yaml

from .. import fleet as lab_fleet
from .. import images
from ..conftest import LAB_DIR, LAB_INDEX, LAB_SUITE, ROOT, lab_env, wait_for_health, wait_for_the_ready_unit

DROPIN = "/etc/systemd/system/sglang-k26.service.d/50-blackwell-inference.conf"
CURAND = "/usr/local/cuda-13.0/targets/x86_64-linux/include"
STATE = "md5sum %s /etc/ansible/facts.d/*.fact; systemctl show -p MainPID -p ActiveState sglang-k26; readlink /opt/sglang/current" % DROPIN
CHANGE = {"sglang_service_environment": {"FLEET_ROLL": "1"}}


def health(idx):
    with urllib.request.urlopen("http://10.251.%d.2:30000/health" % idx, timeout=10) as resp:  # noqa: S310 - the lab's own veth
        return resp.status


@pytest.fixture(scope="module")
def fleet():
    """ct200 (this session's lab host) and ct201, ct202 from the same converged image; removed again afterwards."""
    hosts = lab_fleet.members(3, LAB_INDEX)
    lab_fleet.up(hosts, images.name("converged"), LAB_SUITE, env=lab_env())
    try:
        for name, idx in hosts:
            wait_for_health(idx)
            wait_for_the_ready_unit(host=name, ssh_config=os.path.join(LAB_DIR, "ssh_config." + name))  # the marker settled
        yield hosts
    finally:
        assert lab_fleet.down(hosts, env=lab_env()) == "", "a fleet host left something behind"


def on(name):
    host = testinfra.get_host("ssh://" + name, ssh_config=os.path.join(LAB_DIR, "ssh_config." + name))

    def _run(cmd):
        res = host.run(cmd)
        assert res.rc == 0, "%s: %s -> rc=%s\n%s\n%s" % (name, cmd, res.rc, res.stdout, res.stderr)
        return res.stdout

    return _run


def roll(tmp_path, hosts, host_vars=None):
    inv = lab_fleet.inventory(str(tmp_path / "fleet" / "hosts.yml"), hosts, LAB_DIR, user="ops", host_vars=host_vars)
    summary = tmp_path / "fleet.json"
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", inv, "site.yml", "-e", json.dumps(CHANGE)]
    cmd += ["-e", "blackwell_inference_summary_json=%s" % summary]
    proc = subprocess.run(cmd, cwd=ROOT, env=lab_env(), capture_output=True, text=True, check=False)
    out = proc.stdout + proc.stderr
    table = out[out.index("BLACKWELL INFERENCE FLEET SUMMARY") :].splitlines() if "BLACKWELL INFERENCE FLEET SUMMARY" in out else []
    lines = {line.split()[0]: line for line in table if re.match(r"ct20\d ", line)}
    return proc.returncode, out, lines, json.loads(summary.read_text())


def readme_blocks():
    """The command blocks (```sh) of the README's "Your fleet in five steps", its from-a-checkout lines included: the
    lines of each, as written."""
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        text = fh.read()
    part = text[text.index("## Your fleet in five steps") : text.index("## What a run finds")]
    return [[line.strip() for line in block.splitlines() if line.strip()] for block in re.findall(r"```sh\n(.*?)```", part, re.S)]


def as_documented(line, password, hosts_yml):
    """A README line with the documented changes only: the vault password from a file, your inventory's path."""
    line = line.replace("--ask-vault-pass", "--vault-password-file=%s" % password).replace("/path/to/hosts.yml", hosts_yml)
    return line.replace("ansible-vault create ", "ansible-vault create --vault-password-file=%s " % password)


def accepted_logins(run, since):
    return run("journalctl --since=@%d --no-pager -o cat _COMM=sshd | grep -o 'Accepted publickey for [a-z]*' | sort -u || true" % since)


def batches(out):
    return out.count("PLAY [Provision Blackwell inference hosts]")


def test_the_readmes_fleet_steps_run_as_written(fleet, tmp_path):
    ct200 = on("ct200")
    assert ct200("id -un ops && sudo -l -U ops | grep -c NOPASSWD").split() == ["ops", "1"]
    # the README's runs log in as ops (nothing else does; ssh's ControlPersist carries one login from run to run)
    since = int(ct200("date +%s"))
    blocks = readme_blocks()
    install, vault, dry_run, run_steps, checkout = blocks  # a step gone or added changes this test
    assert [len(b) for b in blocks] == [2, 2, 1, 3, 3], blocks
    project = tmp_path / "project"
    project.mkdir()
    env = dict(lab_env(), ANSIBLE_CONFIG=str(project / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=str(project / "collections"))
    password = tmp_path / "vault-password"
    password.write_text("not-the-example\n")
    # the operator's editor for `ansible-vault create`: writes the two secrets the README names
    editor = tmp_path / "editor"
    editor.write_text("#!/bin/sh\nprintf 'vault_become_password: unused-sudo-is-passwordless\\nvault_hf_token: hf_lab\\n' > \"$1\"\n")
    editor.chmod(0o755)
    env["EDITOR"] = str(editor)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env["PATH"]  # the control node's ansible
    took = {}

    def sh(line, cwd=project):
        cmd = as_documented(line, str(password), str(project / "inventories" / "example" / "hosts.yml"))
        argv = ["bash", "-c", cmd]
        if cmd.startswith("ansible-vault create"):  # it opens the editor only on a terminal, as the operator's
            argv = ["script", "-qec", cmd, "/dev/null"]
        started = time.monotonic()
        proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
        took[line] = round(time.monotonic() - started, 1)
        out = proc.stdout + proc.stderr
        assert proc.returncode == 0, "%s -> rc=%s\n%s" % (cmd, proc.returncode, out[-4000:])
        return out

    def converged(out, names):
        for name in names:
            assert re.search(r"^%s\s+:\s+ok=\d+\s+changed=0\s+unreachable=0\s+failed=0" % name, out, re.M), out[-4000:]

    # 1. Install: the collection's tarball built into dist/ as `make dist` builds it (README step 1), in the project;
    # then both lines as written
    build = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-galaxy"), "collection", "build", ROOT, "--output-path", str(project / "dist")],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    shutil.copy(os.path.join(ROOT, "requirements.yml"), project / "requirements.yml")
    for line in install:
        sh(line)
    installed = project / "collections" / "ansible_collections" / "blackwell" / "inference"
    # 2. Inventory: the example and its ansible.cfg copied from the installed collection; your hosts, your variables
    shutil.copytree(installed / "inventories" / "example", project / "inventories" / "example")
    shutil.copy(installed / "inventories" / "example" / "ansible.cfg", project / "ansible.cfg")
    example = project / "inventories" / "example"
    with open(lab_fleet.inventory(str(tmp_path / "lab" / "hosts.yml"), fleet, LAB_DIR, user="ops")) as fh:
        lab = yaml.safe_load(fh)["inference"]
    connection = {k: v for k, v in lab["vars"].items() if k.startswith("ansible_")}
    (example / "hosts.yml").write_text(yaml.safe_dump({"inference": {"hosts": lab["hosts"], "vars": connection}}))
    settings = {k: v for k, v in lab["vars"].items() if not k.startswith("ansible_")}
    settings["ansible_become_password"] = "{{ vault_become_password }}"  # noqa: S105 - from the vault, as the example's
    (example / "group_vars" / "inference" / "main.yml").write_text(yaml.safe_dump(settings))
    shutil.rmtree(example / "host_vars")  # the lab's variables are the same for every host
    assert yaml.safe_load((example / "rolling.yml").read_text())["blackwell_inference_serial"] == 1
    # 3. Vault: the example's replaced by your own (your password, your editor)
    for line in vault:
        sh(line)
    assert (example / "group_vars" / "inference" / "vault.yml").read_text().startswith("$ANSIBLE_VAULT;")
    # 4. Dry run over the fleet: nothing changes
    (line,) = dry_run
    assert "--check" in line
    converged(sh(line), ("ct200", "ct201", "ct202"))
    # 5. One host first, the fleet (serial 1 from rolling.yml: three batches), then verify with serial 3 set there
    one, whole, verify = run_steps
    assert "-l ct200" in one and "--tags verify" in verify
    out = sh(one)
    converged(out, ("ct200",))
    assert batches(out) == 1 and "1 of 1 hosts READY" in out, out[-3000:]
    # the installed copy ran, not the checkout; as ops (sshd's log: nothing else logs in as ops), escalating with sudo
    # (the roles' reads of root-only files passed: READY)
    assert str(project / "collections") in sh("ansible-playbook blackwell.inference.site --list-tasks")
    assert "Accepted publickey for ops" in accepted_logins(ct200, since)
    assert "READY: compiled, JIT cache warm (sampling)" in out
    # the fleet summary's line for a host
    line = next(x for x in out[out.index("BLACKWELL INFERENCE FLEET SUMMARY") :].splitlines() if x.startswith("ct200 "))
    assert "8x NVIDIA RTX PRO 6000 Blackwell Server Edition (CC 12.0)" in line and "13.0 (/usr/local/cuda-13.0)" in line, line
    assert re.search(r"0\.7\.4 ACCEPTED \(120a\) +sglang-k26\.service answering +READY +compiled, JIT cache warm \(sampling\)", line), line
    out = sh(whole)
    converged(out, ("ct200", "ct201", "ct202"))
    assert batches(out) == 3 and "3 of 3 hosts READY" in out, out[-3000:]
    (example / "rolling.yml").write_text("---\nblackwell_inference_serial: 3\n")
    out = sh(verify)
    assert batches(out) == 1 and "3 of 3 hosts READY" in out, out[-3000:]
    # From a checkout: the same, on your inventory, with the checkout's own ansible.cfg and .venv
    env["ANSIBLE_CONFIG"] = os.path.join(ROOT, "ansible.cfg")
    del env["ANSIBLE_COLLECTIONS_PATH"]
    for line in checkout:
        out = sh(line, cwd=ROOT)
        if "ansible-playbook" in line or "make demo" in line:
            converged(out, ("ct200",))
    print("README steps, seconds each: %s" % json.dumps(took, indent=1))


def test_a_wrong_variable_on_one_host_stops_the_run_before_any_host_changes(fleet, tmp_path):
    before = {name: on(name)(STATE) for name, _idx in fleet}
    rc, out, lines, doc = roll(tmp_path, fleet, host_vars={"ct202": {"sglang_service_port": 0}})
    assert rc == 2, out[-4000:]
    assert "PLAY [Check every host before the first batch]" in out and "PLAY [Provision Blackwell inference hosts]" not in out, out[-4000:]
    assert re.search(r"fatal: \[ct202\]: FAILED!.*sglang_service_port: 1-65535 \(got 0\)", out), out[-4000:]
    assert not re.search(r"fatal: \[ct20[01]\]", out), out[-4000:]
    assert set(lines) == {"ct200", "ct201", "ct202"}, out[-3000:]
    checked = r"  NOT READY +failed at '[^']*Check the host and the variables [^']*': Refused before any change\. "
    assert re.search(checked + r"sglang_service_port: 1-65535", lines["ct202"])
    for name in ("ct200", "ct201"):
        assert re.search(r"  NOT RUN +the roll stopped before its batch \(after ct202\)$", lines[name]), lines[name]
    assert {h["host"]: h["status"] for h in doc["rows"]} == {"ct200": "NOT RUN", "ct201": "NOT RUN", "ct202": "NOT READY"}
    assert {name: on(name)(STATE) for name, _idx in fleet} == before
    print("refused in the check play; no host changed:\n" + "\n".join(lines.values()))


def test_the_roll_converges_the_first_host_stops_at_the_broken_one_and_never_reaches_the_third(fleet, tmp_path):
    before = {name: on(name)(STATE) for name, _idx in fleet}
    ct201 = on("ct201")
    ct201("mkdir -p /root/curand.moved && mv %s/curand*.h /root/curand.moved/" % CURAND)
    assert ct201("ls /usr/local/cuda-13.0/include/ | grep -c '^curand' || true").strip() == "0"  # the fault hit
    assert "release 13.0" in ct201("/usr/local/cuda-13.0/bin/nvcc --version")  # nvcc itself still answers

    rc, out, lines, doc = roll(tmp_path, fleet)
    assert rc == 2, out[-4000:]
    assert set(lines) == {"ct200", "ct201", "ct202"}, out[-3000:]
    # ct200: converged with the change, restarted, answering
    assert re.search(r"  READY +", lines["ct200"]), lines["ct200"]
    assert "FLEET_ROLL=1" in on("ct200")("cat %s" % DROPIN)
    assert on("ct200")(STATE) != before["ct200"] and health(fleet[0][1]) == 200
    # ct201: failed with its reason; the service still serves its old state (never restarted, drop-in unchanged)
    assert re.search(r"  NOT READY +failed at \"[^\"]*Each toolkit wanted is there[^\"]*\": .*curand headers: False", lines["ct201"]), lines["ct201"]
    assert ct201(STATE) == before["ct201"] and health(fleet[1][1]) == 200
    # ct202: the roll stopped before its batch; untouched and serving
    assert re.search(r"  NOT RUN +the roll stopped before its batch \(after ct201\)$", lines["ct202"]), lines["ct202"]
    assert on("ct202")(STATE) == before["ct202"] and health(fleet[2][1]) == 200
    assert not re.search(r"(ok|changed|skipping|fatal): \[ct202\]", out.split("PLAY [Provision Blackwell inference hosts]", 1)[1]), out[-4000:]
    assert [(h["host"], h["status"], h["ready"]) for h in doc["rows"]] == [
        ("ct200", "READY", True),
        ("ct201", "NOT READY", False),
        ("ct202", "NOT RUN", False),
    ]
    print("\n".join(lines[h] for h in ("ct200", "ct201", "ct202")))
