"""The collection as users get it: built with ansible-galaxy, installed into an empty collections path, documented
by ansible-doc, its playbook resolvable by FQCN; its execution-environment metadata read by ansible-builder."""

import glob
import json
import os
import re
import shutil
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
    """The tarball as `make dist` builds it (-o: the venv counts as up to date, the test runs in it)."""
    work = tmp_path_factory.mktemp("package")
    with open(os.path.join(ROOT, "galaxy.yml")) as fh:
        version = yaml.safe_load(fh)["version"]
    proc = subprocess.run(["make", "-s", "-o", ".venv/bin/.installed-run", "dist"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    tarball = work / ("blackwell-inference-%s.tar.gz" % version)
    shutil.copy(os.path.join(ROOT, "dist", tarball.name), tarball)
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
        "plugins/filter/sglang_service_host_verdict.yml",
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
    for unwanted in ("tests/fixtures", "molecule", ".venv", ".collections", ".git", "inventories/lab", "tests/lab", ".ci", "dist"):
        assert not [n for n in names if n == unwanted or n.startswith(unwanted + "/")], unwanted
    assert not [n for n in names if n.endswith((".tar.gz", ".whl", ".deb", ".pyc"))]
    assert manifest["collection_info"]["dependencies"] == {"ansible.posix": ">=1.5.0", "community.general": ">=8.0.0"}


def test_tarball_leaves_out_what_does_not_run_from_an_installed_collection(built):
    """The developer's toolchain and the lab stay in the checkout: the Makefile (its targets call the lab's labctl.sh),
    the root ansible.cfg (it names the lab inventory), requirements.txt (toolchain pins, not runtime needs), the lint
    configs, the lab's docs, and the tests (they need fixtures that are not shipped)."""
    with tarfile.open(built["tarball"]) as tar:
        names = set(tar.getnames())
    for unwanted in (
        "Makefile",
        "ansible.cfg",
        "requirements.txt",
        "requirements-run.txt",
        "ruff.toml",
        ".ansible-lint",
        ".yamllint",
        "docs/lab.md",
        "docs/testing.md",
    ):
        assert unwanted not in names, unwanted
    assert not [n for n in names if n == "tests" or n.startswith("tests/")], sorted(n for n in names if n.startswith("tests"))
    # what the operator copies stays: the example's own ansible.cfg is not the root one
    assert "inventories/example/ansible.cfg" in names and "docs/operations.md" in names


def test_every_relative_link_of_the_shipped_docs_resolves_inside_the_tarball(built):
    """A README or doc in the tarball links only to what the tarball holds (the lab's docs stay in the checkout, so the
    shipped ones name them without a link)."""
    with tarfile.open(built["tarball"]) as tar:
        names = set(tar.getnames())
        docs = {n: tar.extractfile(n).read().decode() for n in names if n.endswith(".md")}
    assert "README.md" in docs and "docs/operations.md" in docs
    broken = []
    for name, text in docs.items():
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue  # a web address, an anchor in the same page
            path = os.path.normpath(os.path.join(os.path.dirname(name), target.split("#", 1)[0]))
            if path not in names and not any(n.startswith(path + "/") for n in names):
                broken.append((name, target))
    assert not broken, broken


def test_make_dist_builds_the_tarball_the_readme_installs(built):
    """`make dist` (the fixture ran it) writes dist/blackwell-inference-<galaxy.yml's version>.tar.gz with
    ansible-galaxy, the file the README's first step installs."""
    with open(os.path.join(ROOT, "Makefile")) as fh:
        recipe = re.search(r"^dist:.*\n\t(.+)$", fh.read(), re.M).group(1)
    assert "ansible-galaxy collection build" in recipe and "--output-path dist" in recipe, recipe
    with open(os.path.join(ROOT, "README.md")) as fh:
        readme = fh.read()
    assert "make dist" in readme and "ansible-galaxy collection install dist/%s" % built["tarball"].name in readme


def test_every_module_filter_and_role_documents_itself_from_the_installed_copy(built):
    modules = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(ROOT, "plugins", "modules", "*.py")))
    filters = sorted(os.path.basename(p)[:-4] for p in glob.glob(os.path.join(ROOT, "plugins", "filter", "*.yml")))
    callbacks = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(ROOT, "plugins", "callback", "*.py")))
    roles = sorted(os.listdir(os.path.join(ROOT, "roles")))
    assert callbacks == ["fleet_summary", "progress"] and (
        modules
        == [
            "cuda_apt_plan",
            "cuda_compile",
            "cuda_facts",
            "cuda_link",
            "host_lock",
            "jit_smoke",
            "paths",
            "secret_file",
            "service_health",
            "service_probe",
            "service_ready",
            "service_snapshot",
            "toolkit_probe",
            "trusted_key",
            "unit_command",
            "variables_check",
            "venv_current",
            "venv_probe",
        ]
        and len(filters) == 12  # the twelve an operator may call, none private (docs/architecture.md)
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


def test_ansible_builder_creates_the_build_context_of_the_documented_ee_from_the_local_tarball(built):
    """docs/execution-environment.yml installs the tarball `make dist` writes (dist/ beside docs/), not Galaxy's copy:
    the context holds that very tarball, and the galaxy step's requirements install it from /build's copy."""
    with open(os.path.join(ROOT, "galaxy.yml")) as fh:
        version = yaml.safe_load(fh)["version"]
    checkout = built["work"] / "checkout"
    (checkout / "docs").mkdir(parents=True)
    (checkout / "dist").mkdir()
    shutil.copy(os.path.join(ROOT, "docs", "execution-environment.yml"), checkout / "docs")
    shutil.copy(built["tarball"], checkout / "dist")
    ctx = built["work"] / "ee-context"
    tool("ansible-builder", "create", "-f", "docs/execution-environment.yml", "-c", str(ctx), "--output-filename", "Containerfile", cwd=str(checkout))
    containerfile = (ctx / "Containerfile").read_text()
    assert "quay.io/fedora/fedora-minimal:41" in containerfile
    assert "ansible-galaxy collection install" in containerfile and "introspect" in containerfile
    assert "COPY _build /build" in containerfile and "WORKDIR /build" in containerfile
    copied = ctx / "_build" / "collections" / built["tarball"].name
    assert copied.read_bytes() == built["tarball"].read_bytes()
    requirements = yaml.safe_load((ctx / "_build" / "requirements.yml").read_text())
    assert requirements["collections"] == [{"name": "collections/blackwell-inference-%s.tar.gz" % version, "type": "file"}]
    # the galaxy stage's install, from /build (here the context's _build); its dependencies come from Galaxy there
    coll = built["work"] / "ee-collections"
    env = dict(built["env"], ANSIBLE_COLLECTIONS_PATH=str(coll))
    tool("ansible-galaxy", "collection", "install", "-r", "requirements.yml", "-p", str(coll), "--no-deps", cwd=str(ctx / "_build"), env=env)
    assert (coll / "ansible_collections" / "blackwell" / "inference" / "MANIFEST.json").exists()
