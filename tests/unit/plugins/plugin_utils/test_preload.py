"""The preload callback's list: every plugin of the collection, the ansible-core actions the roles run through, and a
lookup that never fails the run."""

import glob
import json
import os
import re
import subprocess
import sys

import pytest

from ansible_collections.blackwell.inference.plugins.plugin_utils import preload

from ..conftest_paths import ROOT

# task keywords the strategy handles itself: no action plugin is looked up for them
STRATEGY_KEYWORDS = {"import_tasks", "include_tasks", "import_role", "include_role", "import_playbook", "meta"}


def test_names_lists_the_collections_plugins():
    names = preload.names()
    assert "blackwell.inference.sglang_service_plan" in names["filter"]
    assert "blackwell.inference.cuda_toolkit_home" in names["filter"]
    assert "blackwell.inference.service_health" in names["module"]
    assert "blackwell.inference.host_lock" in names["action"]
    modules = [f for f in os.listdir(os.path.join(ROOT, "plugins", "modules")) if f.endswith(".py") and not f.startswith("_")]
    assert names["module"] == sorted("blackwell.inference." + f[:-3] for f in modules)
    # one documentation file per filter: each filter the Python files define is listed
    defined = set()
    for path in glob.glob(os.path.join(ROOT, "plugins", "filter", "*.py")):
        with open(path, encoding="utf-8") as fh:
            body = re.search(r"def filters\(self\):\s+return \{(.*?)\}", fh.read(), re.S)
        defined.update(re.findall(r'"([a-z_]+)":', body.group(1)) if body else [])
    assert defined, "no filters found"
    assert {"blackwell.inference." + n for n in defined} <= set(names["filter"])


def test_builtin_actions_cover_every_task_keyword_the_roles_use():
    used = set()
    for path in glob.glob(os.path.join(ROOT, "roles", "*", "*", "*.yml")) + glob.glob(os.path.join(ROOT, "playbooks", "**", "*.yml"), recursive=True):
        with open(path, encoding="utf-8") as fh:
            used.update(re.findall(r"^\s*-?\s*ansible\.builtin\.([a-z_]+):", fh.read(), re.M))
    assert used, "no task keywords found"
    assert used - STRATEGY_KEYWORDS <= set(preload.BUILTIN_ACTIONS)


def test_names_of_a_missing_directory_are_empty(tmp_path):
    names = preload.names(str(tmp_path))
    assert [n for n in names["filter"] if n.startswith("blackwell.")] == []
    assert names["module"] == []


class Loader:
    def __init__(self, missing=(), broken=()):
        self.missing, self.broken, self.asked = set(missing), set(broken), []

    def get(self, name, class_only=False):
        self.asked.append(name)
        if name in self.broken:
            raise ImportError(name)
        return None if name in self.missing else object()

    find_plugin = get


def test_preload_counts_what_it_found_and_skips_what_fails():
    loaders = {kind: Loader() for kind in preload.LOOKUPS}
    loaders["filter"] = Loader(broken={"blackwell.inference.sglang_service_plan"})
    loaders["module"] = Loader(missing={"blackwell.inference.paths"})
    loaders["action"] = Loader(missing={"ansible.builtin.normal"})
    found = preload.preload(loaders)
    names = preload.names()
    assert found == {kind: len(names[kind]) - (kind in ("filter", "module", "action")) for kind in names}
    assert all(loaders[kind].asked == names[kind] for kind in names)
    assert set(names) == set(preload.LOOKUPS)


def test_preload_with_ansibles_own_loaders_finds_every_name():
    # in a process of its own: the collection loader it installs would take over this one's imports
    script = (
        "import json\n"
        "from ansible.plugins import loader\n"
        "loader.init_plugin_loader([%r])\n"
        "from ansible_collections.blackwell.inference.plugins.plugin_utils import preload\n"
        "print(json.dumps(preload.preload({k: getattr(loader, k + '_loader') for k in preload.LOOKUPS})))\n"
    ) % os.path.join(ROOT, ".collections")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    found = json.loads(proc.stdout.splitlines()[-1])
    names = preload.names()
    # "normal" and a few module-only actions have no action plugin of their own: everything else is found
    assert {k: v for k, v in found.items() if k != "action"} == {k: len(v) for k, v in names.items() if k != "action"}
    assert found["action"] >= len([n for n in names["action"] if n.startswith("blackwell.")]) + 5
    assert "WARNING" not in proc.stderr


@pytest.mark.parametrize("kind", sorted(preload.LOOKUPS))
def test_every_name_is_fully_qualified(kind):
    assert all(re.match(r"^(blackwell\.inference|ansible\.builtin)\.[a-z_]+$", n) for n in preload.names()[kind])


def test_a_playbook_of_the_roles_gets_the_lock_only():
    # every run of the roles calls the lock first, and a no-op nothing else of the collection's (the roles' readings are
    # the lock's); the modules a run calls when it changes or verifies something build their own payloads
    assert preload.PAYLOADS_FIRST == ("host_lock",) and "blackwell.inference.host_lock" in preload.names()["module"]
    roles = {"blackwell.inference.cuda_toolkit", "blackwell.inference.sglang_service"}
    actions = {"blackwell.inference.host_lock", "blackwell.inference.paths", "ansible.builtin.debug", "ansible.builtin.stat"}
    assert preload.payloads_for(actions, roles) == ["blackwell.inference.host_lock"]
    assert preload.payloads_for(set(), {"blackwell.inference.sglang_venv"}) == ["blackwell.inference.host_lock"]


def test_a_playbook_without_the_roles_gets_only_the_modules_it_names():
    actions = {"blackwell.inference.service_health", "blackwell.inference.cuda_facts", "ansible.builtin.command", "other.ns.module"}
    assert preload.payloads_for(actions, {"geerlingguy.docker"}) == ["blackwell.inference.cuda_facts", "blackwell.inference.service_health"]
    assert preload.payloads_for({"ansible.builtin.ping"}, set()) == []


def test_build_payloads_skips_a_failure_and_stops_when_told():
    asked = []

    def build(name):
        asked.append(name)
        if name == "b":
            raise RuntimeError("cannot build")

    assert preload.build_payloads(["a", "b", "c"], build) == ["a", "c"]
    assert asked == ["a", "b", "c"]
    left = iter([True, False])
    assert preload.build_payloads(["a", "b", "c"], build, lambda: next(left)) == ["a"]


def test_the_callback_builds_the_payloads_a_playbook_uses_into_the_runs_cache(tmp_path):
    # a real ansible-playbook run: while its first task waits, the payload of the collection's module that a later task
    # names appears in the run's own cache, built by the callback's process (that task never runs); the roles' probes,
    # which this playbook does not use, are not built
    out = tmp_path / "cache.json"
    play = tmp_path / "play.yml"
    play.write_text(
        "- hosts: localhost\n"
        "  gather_facts: false\n"
        "  tasks:\n"
        "    - ansible.builtin.find:\n"
        "        paths: %s\n"
        "        recurse: true\n"
        "        patterns: ['*-ZIP_*']\n"
        "      register: found\n"
        "      until: found.files | map(attribute='path') | select('search', 'cuda_facts-ZIP_[A-Z]+-[a-z~]+$') | list | length > 0\n"
        "      retries: 60\n"
        "      delay: 0.5\n"
        "    - ansible.builtin.copy:\n"
        "        content: \"{{ found.files | map(attribute='path') | map('basename') | list | to_json }}\"\n"
        "        dest: %s\n"
        "    - blackwell.inference.cuda_facts:\n"
        "        nvidia_smi: nvidia-smi\n"
        "      when: false\n" % (tmp_path / "tmp", out)
    )
    (tmp_path / "tmp").mkdir()
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
        ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, ".collections"),
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
        ANSIBLE_CALLBACKS_ENABLED="blackwell.inference.preload",
        ANSIBLE_PYTHON_INTERPRETER=sys.executable,
    )
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,", "-c", "local", str(play)],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cached = "\n".join(json.loads(out.read_text()))
    assert re.search(r"^ansible_collections\.blackwell\.inference\.plugins\.modules\.cuda_facts-ZIP_[A-Z]+-[a-z~]+$", cached, re.M), cached
    assert "service_probe" not in cached and "host_lock" not in cached, cached
