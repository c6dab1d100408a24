"""The collection as users get it: built with ansible-galaxy, installed into an empty collections path, documented
by ansible-doc, its playbook resolvable by FQCN; its execution-environment metadata read by ansible-builder."""

import glob
import json
import os
import subprocess
import sys
import tarfile

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)


def tool(name, *args, cwd, env=None, check=True):
    proc = subprocess.run([os.path.join(BIN, name), *args], cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if check:
        assert proc.returncode == 0, "%s %s -> %s\n%s\n%s" % (name, " ".join(args), proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:])
    return proc


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    work = tmp_path_factory.mktemp("package")
    tool("ansible-galaxy", "collection", "build", ROOT, "--output-path", str(work), cwd=str(work))
    with open(os.path.join(ROOT, "galaxy.yml")) as fh:
        version = yaml.safe_load(fh)["version"]
    tarball = work / ("blackwell-inference-%s.tar.gz" % version)
    coll = work / "collections"
    cfg = work / "ansible.cfg"
    cfg.write_text("[defaults]\n")
    # only the empty path: the checkout (linked under .collections) must not count as "already installed"
    env = dict(os.environ, ANSIBLE_CONFIG=str(cfg), ANSIBLE_COLLECTIONS_PATH=str(coll), ANSIBLE_FORCE_COLOR="0", NO_COLOR="1")
    # --no-deps: ansible.posix and community.general come from the `ansible` package (Galaxy is unreachable here)
    tool("ansible-galaxy", "collection", "install", str(tarball), "-p", str(coll), "--no-deps", cwd=str(work), env=env)
    assert (coll / "ansible_collections" / "blackwell" / "inference" / "MANIFEST.json").exists()
    return {"work": work, "tarball": tarball, "coll": coll, "env": env, "installed": coll / "ansible_collections" / "blackwell" / "inference"}


def test_tarball_has_the_collection_and_nothing_of_the_lab(built):
    with tarfile.open(built["tarball"]) as tar:
        names = tar.getnames()
        manifest = json.load(tar.extractfile("MANIFEST.json"))
    for wanted in [
        "MANIFEST.json",
        "plugins/modules/cuda_facts.py",
        "plugins/modules/jit_smoke.py",
        "plugins/filter/sglang_service_verdict.yml",
        "roles/sglang_service/files/boot_validate.py",
        "roles/sglang_service/meta/argument_specs.yml",
        "playbooks/site.yml",
        "meta/runtime.yml",
        "meta/execution-environment.yml",
        "meta/ee-bindep.txt",
        "CHANGELOG.rst",
        "docs/architecture.md",
        # what an operator copies: the example inventory, its ansible.cfg and vault, and the dependencies
        "inventories/example/hosts.yml",
        "inventories/example/ansible.cfg",
        "inventories/example/group_vars/inference/vault.yml",
        "requirements.yml",
    ]:
        assert wanted in names, wanted
    for unwanted in ("tests/fixtures", "molecule", ".venv", ".collections", ".git", "inventories/lab", "tests/lab", ".ci"):
        assert not [n for n in names if n == unwanted or n.startswith(unwanted + "/")], unwanted
    assert not [n for n in names if n.endswith((".tar.gz", ".whl", ".deb", ".pyc"))]
    assert manifest["collection_info"]["dependencies"] == {"ansible.posix": ">=1.5.0", "community.general": ">=8.0.0"}


def test_every_module_filter_and_role_documents_itself_from_the_installed_copy(built):
    modules = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(ROOT, "plugins", "modules", "*.py")))
    filters = sorted(os.path.basename(p)[:-4] for p in glob.glob(os.path.join(ROOT, "plugins", "filter", "*.yml")))
    callbacks = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(ROOT, "plugins", "callback", "*.py")))
    roles = sorted(os.listdir(os.path.join(ROOT, "roles")))
    assert callbacks == ["fleet_summary", "progress"] and (
        modules
        == [
            "cuda_facts",
            "cuda_link",
            "host_lock",
            "jit_smoke",
            "paths",
            "service_health",
            "service_probe",
            "service_snapshot",
            "toolkit_probe",
            "trusted_key",
            "unit_command",
            "venv_probe",
        ]
        and len(filters) >= 14
        and len(roles) == 3
    )
    for kind, names in (("module", modules), ("filter", filters), ("callback", callbacks), ("role", roles)):
        # one ansible-doc per plugin type, every name of that type (it renders each and fails on any it cannot)
        fqcns = ["blackwell.inference." + name for name in names]
        docs = json.loads(tool("ansible-doc", "-t", kind, "--json", *fqcns, cwd=str(built["work"]), env=built["env"]).stdout)
        assert sorted(docs) == sorted(fqcns), (kind, sorted(docs))
        for name in names:
            doc = docs["blackwell.inference." + name]
            assert str(built["installed"]) in json.dumps(doc) or kind == "role", "%s %s not from the installed copy" % (kind, name)
            if kind == "module":
                assert doc["doc"]["short_description"] and doc["examples"] and doc["return"]


def test_the_playbook_resolves_by_fqcn_and_passes_syntax_check(built):
    proc = tool("ansible-playbook", "blackwell.inference.site", "--syntax-check", "-i", "localhost,", cwd=str(built["work"]), env=built["env"])
    assert "playbook: " in proc.stdout and str(built["installed"]) in proc.stdout


def test_ansible_builder_reads_the_execution_environment_metadata(built):
    proc = tool("ansible-builder", "introspect", "--sanitize", str(built["coll"]), cwd=str(built["work"]), env=built["env"])
    data = yaml.safe_load(proc.stdout.split("---", 1)[-1]) if "---" in proc.stdout else yaml.safe_load(proc.stdout)
    system = json.dumps(data.get("system") or data)
    assert "openssh-client [platform:dpkg]" in system and "blackwell.inference" in system, proc.stdout


def test_ansible_builder_creates_the_build_context_of_the_documented_ee(built):
    ctx = built["work"] / "ee-context"
    definition = os.path.join(ROOT, "docs", "execution-environment.yml")
    tool("ansible-builder", "create", "-f", definition, "-c", str(ctx), "--output-filename", "Containerfile", cwd=str(built["work"]))
    containerfile = (ctx / "Containerfile").read_text()
    assert "quay.io/fedora/fedora-minimal:41" in containerfile
    assert "ansible-galaxy collection install" in containerfile and "introspect" in containerfile
    requirements = (ctx / "_build" / "requirements.yml").read_text()
    assert yaml.safe_load(requirements)["collections"] == [{"name": "blackwell.inference", "version": ">=0.2.0"}]
