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


# apt: deb: installs whose origin nothing checks yet (no checksum, no signature), by task name
UNVERIFIED_DEB = {
    "Use NVIDIA's cuda-keyring package for the source": "issue 13 (verified keyring): the .deb comes from the repo URL with no checksum",
}


def test_every_deb_install_is_verified_or_a_known_gap():
    found = {}
    for path in TASK_FILES:
        for task in tasks(path):
            apt = task.get("ansible.builtin.apt") or {}
            if apt.get("deb"):
                found[task.get("name")] = apt["deb"]
    assert set(found) == set(UNVERIFIED_DEB), "apt deb: installs %s, known gaps %s" % (found, sorted(UNVERIFIED_DEB))


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
