"""Fleets are run from an operator account with sudo, from the installed collection, with an inventory laid out like
inventories/example (issue 14 items 1 and 2): on the converged ct200, `ansible-playbook blackwell.inference.site`
from the built tarball installed into an empty collections path, with the example's ansible.cfg, its group_vars and an
ansible-vault file (the sudo password as a vault_ variable), as `ops`, changes nothing and ends with the fleet
summary table and its JSON; a verify-only run from the checkout with only `-e ansible_user=ops` passes. The lab's
`ops` account has sudo without a password and the lab key (tests/fixtures/lab/build_rootfs.sh, labctl.sh); every
other lab test connects as root.
"""

import json
import os
import re
import secrets
import shutil
import subprocess
import sys

import yaml

from ..conftest import INVENTORY, ROOT, lab_env, playbook

LAB_READ_ONLY = True  # asserts that its runs changed nothing

OPS = {"ansible_user": "ops"}
BIN = os.path.dirname(sys.executable)


def accepted_logins(run, since):
    return run("journalctl --since=@%d --no-pager -o cat _COMM=sshd | grep -o 'Accepted publickey for [a-z]*' | sort -u || true" % since)


def tool(*argv, cwd, env):
    proc = subprocess.run([os.path.join(BIN, argv[0]), *argv[1:]], cwd=cwd, env=env, capture_output=True, text=True, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def operator_project(tmp):
    """A project as an operator sets it up: the collection installed from its tarball, the example's ansible.cfg, and
    an inventory in the example's layout for ct200 (the lab's variables as group_vars, the sudo password in a vault)."""
    env = dict(lab_env(), ANSIBLE_CONFIG=str(tmp / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=str(tmp / "collections"))
    rc, out = tool("ansible-galaxy", "collection", "build", ROOT, "--output-path", str(tmp / "dist"), cwd=str(tmp), env=env)
    assert rc == 0, out
    (tarball,) = (tmp / "dist").iterdir()
    # ansible.posix and community.general come from the `ansible` package (Galaxy is unreachable here)
    rc, out = tool("ansible-galaxy", "collection", "install", str(tarball), "-p", str(tmp / "collections"), "--no-deps", cwd=str(tmp), env=env)
    assert rc == 0, out
    shutil.copy(os.path.join(ROOT, "inventories", "example", "ansible.cfg"), tmp / "ansible.cfg")
    inv = tmp / "inventories" / "example"
    (inv / "group_vars" / "inference").mkdir(parents=True)
    with open(INVENTORY) as fh:
        ct200 = yaml.safe_load(fh)["inference"]["hosts"]["ct200"]
    ct200.pop("ansible_user")
    (inv / "hosts.yml").write_text(yaml.safe_dump({"inference": {"hosts": {"ct200": ct200}, "vars": {"ansible_user": "ops"}}}))
    with open(os.path.join(ROOT, "inventories", "lab", "host_vars", "ct200.yml")) as fh:
        lab_vars = yaml.safe_load(fh)
    lab_vars["ansible_become_password"] = "{{ vault_become_password }}"  # noqa: S105 - a reference to the vault
    (inv / "group_vars" / "inference" / "main.yml").write_text(yaml.safe_dump(lab_vars))
    password = tmp / "vault-password"
    password.write_text(secrets.token_hex(16) + "\n")
    plain = tmp / "vault-plain.yml"
    plain.write_text(yaml.safe_dump({"vault_become_password": secrets.token_hex(8)}))  # passwordless sudo ignores it
    vault = inv / "group_vars" / "inference" / "vault.yml"
    rc, out = tool("ansible-vault", "encrypt", "--vault-password-file", str(password), "--output", str(vault), str(plain), cwd=str(tmp), env=env)
    assert rc == 0 and vault.read_text().startswith("$ANSIBLE_VAULT;"), out
    plain.unlink()
    return env, password


def test_an_operator_account_with_sudo_runs_the_installed_collection_and_changes_nothing(run, tmp_path):
    assert run("id -un ops && sudo -l -U ops | grep -c NOPASSWD").split() == ["ops", "1"]
    env, password = operator_project(tmp_path)
    summary = tmp_path / "fleet.json"
    since = int(run("date +%s"))  # nothing else logs in as ops
    argv = ["ansible-playbook", "blackwell.inference.site", "-l", "ct200", "--vault-password-file", str(password)]
    rc, out = tool(*argv, "-e", "blackwell_inference_summary_json=%s" % summary, cwd=str(tmp_path), env=env)
    recap = re.search(r"^ct200\s+:\s+ok=\d+\s+changed=(\d+)\s+unreachable=0\s+failed=0", out, re.M)
    assert rc == 0 and recap and recap.group(1) == "0", out[-4000:]
    # the installed copy ran, not the checkout
    assert str(tmp_path / "collections") in tool("ansible-playbook", "blackwell.inference.site", "--list-tasks", cwd=str(tmp_path), env=env)[1]
    assert "READY: compiled, JIT cache warm (sampling)" in out
    # it really connected as ops (and escalated: the role's reads of root-only files passed)
    assert "Accepted publickey for ops" in accepted_logins(run, since)
    # the fleet summary: one line for ct200, and the same as JSON
    table = out[out.index("BLACKWELL INFERENCE FLEET SUMMARY") :]
    (line,) = [x for x in table.splitlines() if x.startswith("ct200 ")]
    assert "8x NVIDIA RTX PRO 6000 Blackwell Server Edition (CC 12.0)" in line and "13.0 (/usr/local/cuda-13.0)" in line, line
    assert re.search(r"0\.7\.4 ACCEPTED \(120a\) +sglang-k26\.service answering +READY +compiled, JIT cache warm \(sampling\)", line), line
    assert "1 of 1 hosts READY" in table
    doc = json.loads(summary.read_text())
    assert doc["ready"] == 1 and doc["rows"][0]["host"] == "ct200" and doc["rows"][0]["status"] == "READY"

    rc, out, recap = playbook("--tags", "verify", extra_vars=OPS)
    assert rc == 0 and recap["changed"] == 0, out[-4000:]
    assert "READY: compiled, JIT cache warm (sampling)" in out
