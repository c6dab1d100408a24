"""Every apt source the roles write is signed-by a key the role checked; nothing installs unauthenticated.
A package installed from a file or URL (`apt: deb:`) bypasses apt's signature check: each one is listed
here with the issue that will verify it, so a new one fails this test and a fixed one must leave the list."""

import glob
import os

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TASK_FILES = sorted(glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "*.yml")) + glob.glob(os.path.join(ROOT, "roles", "*", "handlers", "*.yml")))


def tasks(path):
    with open(path) as fh:
        todo = list(yaml.safe_load(fh) or [])
    while todo:
        task = todo.pop()
        todo += task.get("block", []) + task.get("rescue", []) + task.get("always", [])
        yield task


def in_order(path):
    """The file's tasks in the order they run (blocks flattened)."""
    with open(path) as fh:
        todo = list(yaml.safe_load(fh) or [])
    out = []
    while todo:
        task = todo.pop(0)
        todo = task.get("block", []) + task.get("rescue", []) + task.get("always", []) + todo
        out.append(task)
    return out


def test_every_deb_install_is_a_file_whose_keys_were_checked_first():
    """A package installed from a file (`apt: deb:`) bypasses apt's signature check: each one must be a local file a
    trusted_key task (kind deb) checked earlier in the same file, under at least the same conditions, and never a URL."""
    found = 0
    for path in TASK_FILES:
        seen = []
        for task in in_order(path):
            apt = task.get("ansible.builtin.apt") or {}
            if apt.get("deb"):
                found += 1
                assert not apt["deb"].startswith(("http:", "https:", "file:", "ftp:")), "%s: %s installs from a URL" % (path, task["name"])
                checks = [t for t in seen if t["blackwell.inference.trusted_key"].get("src") == apt["deb"]]
                assert checks and checks[-1]["blackwell.inference.trusted_key"].get("kind") == "deb", "%s: %s is not checked first" % (path, task["name"])
                assert set(checks[-1].get("when") or []) <= set(task.get("when") or []), task["name"]
                assert not checks[-1].get("ignore_errors") and "failed_when" not in checks[-1], task["name"]
            if "blackwell.inference.trusted_key" in task:
                seen.append(task)
    assert found == 1  # the cuda-keyring package


@pytest.mark.parametrize("path", TASK_FILES, ids=lambda p: os.path.relpath(p, ROOT))
def test_sources_are_signed_and_installs_authenticated(path):
    for task in tasks(path):
        deb822 = task.get("ansible.builtin.deb822_repository")
        if deb822 is not None:
            assert deb822.get("signed_by"), "%s: %s has no signed_by" % (path, task.get("name"))
            assert not deb822.get("trusted"), task.get("name")
        assert "ansible.builtin.apt_repository" not in task, "%s: one-line sources cannot be checked here, use deb822" % task.get("name")
        apt = task.get("ansible.builtin.apt") or {}
        assert not apt.get("allow_unauthenticated") and not apt.get("force"), task.get("name")


def test_there_is_a_deb822_source():
    found = [t for p in TASK_FILES for t in tasks(p) if "ansible.builtin.deb822_repository" in t]
    assert len(found) == 1
    # and the key it is signed by is only ever written by trusted_key, once checked
    keys = [t["blackwell.inference.trusted_key"] for p in TASK_FILES for t in tasks(p) if "blackwell.inference.trusted_key" in t]
    assert found[0]["ansible.builtin.deb822_repository"]["signed_by"] in [k.get("dest") for k in keys]
    for p in TASK_FILES:
        for t in tasks(p):
            for module in ("ansible.builtin.get_url", "ansible.builtin.copy", "ansible.builtin.file"):
                assert not str((t.get(module) or {}).get("dest", "")).startswith(("/etc/apt/keyrings", "/etc/apt/trusted.gpg")), t["name"]
