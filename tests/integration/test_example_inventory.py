"""The example inventory an operator copies (inventories/example): a fleet whose every host runs the service in unit
mode, the drop-in case only a commented host_vars example; it loads with its vault, every variable it sets (or its
commented example would set) is one the collection knows, the roles' own argument specs accept its values for every
host, with and without that example uncommented, and requirements.yml lists exactly galaxy.yml's dependencies.
(The lab runs the installed collection on ct200 with this layout:
tests/lab/faults/test_fleet_roll.py (the README's fleet steps).)"""

import glob
import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
EXAMPLE = os.path.join(ROOT, "inventories", "example")
VAULT = os.path.join(EXAMPLE, "group_vars", "inference", "vault.yml")
HOST_EXAMPLE = os.path.join(EXAMPLE, "host_vars", "ct200.yml")
EXAMPLE_VAULT_PASSWORD = "example"  # noqa: S105 - documented in the vault file's own comment and the README


def tool(name, *args, env=None):
    proc = subprocess.run([os.path.join(BIN, name), *args], cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, "%s %s -> %s\n%s\n%s" % (name, " ".join(args), proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:])
    return proc.stdout


@pytest.fixture(scope="module")
def password_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("vault") / "password"
    path.write_text(EXAMPLE_VAULT_PASSWORD + "\n")
    return str(path)


@pytest.fixture(scope="module")
def inventory(password_file):
    out = tool("ansible-inventory", "-i", EXAMPLE, "--vault-password-file", password_file, "--list", "--export")
    return json.loads(out)


def known_variables():
    names = set()
    for spec in glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml")):
        with open(spec) as fh:
            names |= set(yaml.safe_load(fh)["argument_specs"]["main"]["options"])
    # playbook-level variables: the ones the playbook and the summary callback read
    for path in glob.glob(os.path.join(ROOT, "playbooks", "*.yml")) + glob.glob(os.path.join(ROOT, "plugins", "callback", "*.py")):
        with open(path) as fh:
            names |= set(re.findall(r"\bblackwell_inference_[a-z_]+", fh.read()))
    return names


def commented_example():
    """The variables host_vars/ct200.yml would set with its commented example uncommented (the `# name:` lines on)."""
    with open(HOST_EXAMPLE) as fh:
        lines = fh.read().splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(r"# [a-z_]+:", line))
    return yaml.safe_load("\n".join(line[2:] for line in lines[start:] if line.startswith("# ")))


def set_variables():
    found = {}
    for name in commented_example():
        found.setdefault(name, []).append(os.path.relpath(HOST_EXAMPLE, ROOT) + " (commented)")
    # the inventory's variables, and the rolling settings the playbook loads from beside hosts.yml
    for path in [*glob.glob(os.path.join(EXAMPLE, "*_vars", "**", "*.yml"), recursive=True), os.path.join(EXAMPLE, "rolling.yml")]:
        if path == VAULT:
            continue
        with open(path) as fh:
            for name in yaml.safe_load(fh) or {}:
                found.setdefault(name, []).append(os.path.relpath(path, ROOT))
    with open(os.path.join(EXAMPLE, "hosts.yml")) as fh:
        hosts = yaml.safe_load(fh)["inference"]
    for block in [hosts.get("vars", {}), *(hosts.get("hosts") or {}).values()]:
        for name in block or {}:
            found.setdefault(name, []).append("inventories/example/hosts.yml")
    return found


def test_the_hosts_are_in_the_group_the_playbook_runs_on(inventory):
    assert inventory["inference"]["hosts"] == ["ct200", "ct201", "ct202"]


def test_every_host_runs_its_own_unit_and_the_drop_in_case_is_a_commented_example(password_file):
    """Copied as it is, the example makes no host a drop-in host that needs a unit already there."""
    hostvars = json.loads(tool("ansible-inventory", "-i", EXAMPLE, "--vault-password-file", password_file, "--list"))["_meta"]["hostvars"]
    assert sorted(hostvars) == ["ct200", "ct201", "ct202"]
    assert {(v["sglang_service_mode"], v["sglang_service_name"]) for v in hostvars.values()} == {("unit", "sglang")}
    with open(HOST_EXAMPLE) as fh:
        assert yaml.safe_load(fh) is None, "host_vars/ct200.yml sets variables; its drop-in case is to stay commented"
    example = commented_example()
    assert example["sglang_service_mode"] == "dropin" and example["sglang_service_name"] == "sglang-k26"


def test_every_variable_set_is_one_the_collection_or_ansible_knows():
    known = known_variables()
    unknown = {n: where for n, where in set_variables().items() if not (n in known or n.startswith(("ansible_", "vault_")))}
    assert not unknown, "the example sets variables nothing reads: %s" % unknown


def test_secrets_come_from_the_encrypted_vault_and_every_one_used_is_defined(password_file):
    with open(VAULT) as fh:
        assert fh.readline().startswith("$ANSIBLE_VAULT;1.1;AES256")
    secrets = yaml.safe_load(tool("ansible-vault", "view", "--vault-password-file", password_file, VAULT))
    assert secrets and all(n.startswith("vault_") for n in secrets)
    used = set()
    for path in glob.glob(os.path.join(EXAMPLE, "**", "*.yml"), recursive=True):
        if path != VAULT:
            with open(path) as fh:
                used |= set(re.findall(r"\bvault_[a-z_]+", fh.read()))
    assert used and used <= set(secrets), (used, sorted(secrets))


@pytest.mark.parametrize("uncommented", [False, True], ids=["as-shipped", "drop-in-example-uncommented"])
def test_the_roles_argument_specs_accept_the_example_for_every_host(tmp_path, password_file, uncommented):
    """Each role's own validation (meta/argument_specs.yml, as the role runs it) over the example's values, per host;
    also with host_vars/ct200.yml's commented drop-in example uncommented."""
    inventory_dir = EXAMPLE
    if uncommented:
        inventory_dir = str(tmp_path / "example")
        shutil.copytree(EXAMPLE, inventory_dir)
        with open(os.path.join(inventory_dir, "host_vars", "ct200.yml"), "w") as fh:
            yaml.safe_dump(commented_example(), fh)
    play = tmp_path / "validate.yml"
    tasks = [
        {
            "name": "Validate %s's variables" % role,
            "ansible.builtin.validate_argument_spec": {
                "argument_spec": "{{ (lookup('ansible.builtin.file', '%s/roles/%s/meta/argument_specs.yml') | from_yaml).argument_specs.main.options }}"
                % (ROOT, role)
            },
        }
        for role in ("cuda_toolkit", "sglang_venv", "sglang_service")
    ]
    play.write_text(yaml.safe_dump([{"name": "Validate", "hosts": "inference", "connection": "local", "gather_facts": False, "tasks": tasks}]))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    out = tool("ansible-playbook", "-i", inventory_dir, "--vault-password-file", password_file, str(play), env=env)
    assert re.search(r"ct200\s*: ok=3 ", out) and re.search(r"ct202\s*: ok=3 ", out), out[-2000:]


def test_requirements_list_exactly_the_collections_dependencies():
    with open(os.path.join(ROOT, "requirements.yml")) as fh:
        wanted = {c["name"]: c["version"] for c in yaml.safe_load(fh)["collections"]}
    with open(os.path.join(ROOT, "galaxy.yml")) as fh:
        assert wanted == yaml.safe_load(fh)["dependencies"]
