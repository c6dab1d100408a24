"""Every apt source the roles write is signed-by a key the role checked; nothing installs unauthenticated."""

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
