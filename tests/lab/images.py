"""Images of the lab host in its known states, named by state and a hash of their inputs.

An image is a snapshot of ct200 (an overlayfs layer, tests/fixtures/lab/labctl.sh) that a lab test
boots from in seconds instead of reaching the state by a prepare or a converge:

- ``before``: ct200 as the seeds found it (molecule's prepare on the bare rootfs);
- ``converged``: ``before`` converged by the current roles (site.yml -l ct200).

A change to any input (the fixtures, prepare, the roles, plugins, playbooks, the lab's variables)
gives another name, so a stale image is never used; labctl prunes the old one when the new one is
saved. The molecule scenario saves both as it passes through them (prepare, then verify); a lab
test run on its own builds what is missing the same way.

    python3 tests/lab/images.py name STATE           print the image name of STATE for this checkout
    python3 tests/lab/images.py save STATE HOST IDX  save the running lab host as that image
"""

import contextlib
import fcntl
import functools
import hashlib
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LABCTL = os.path.join(ROOT, "tests", "fixtures", "lab", "labctl.sh")
# held by whoever builds or saves images: the molecule scenario, or a lab session filling a cold cache
LOCK = os.path.join(os.environ.get("BLACKWELL_CACHE_DIR", "/var/cache/blackwell-inference"), "lab-images.lock")

# What each state is made from, relative to the checkout; a state also depends on its parent's inputs.
INPUTS = {
    "before": [
        "tests/fixtures/lab",
        "tests/fixtures/bin",
        "tests/fixtures/flashinfer-cpu-requirements.txt",
        "molecule/default/prepare.yml",
        "molecule/default/templates",
    ],
    "converged": [
        "site.yml",
        "playbooks",
        "roles",
        "plugins",
        "meta/runtime.yml",
        "ansible.cfg",
        "inventories/lab",
    ],
}
PARENT = {"before": None, "converged": "before"}
# Drivers, not recipes: labctl.sh boots, resets and saves instances and puts nothing into an image.
NOT_INPUTS = {"tests/fixtures/lab/labctl.sh"}


def _files(path):
    full = os.path.join(ROOT, path)
    if os.path.isfile(full):
        yield path
        return
    for top, dirs, names in os.walk(full):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for n in sorted(names):
            if not n.endswith(".pyc"):
                yield os.path.relpath(os.path.join(top, n), ROOT)


def key(state):
    """Hash of the state's inputs (file names, modes and contents), its parent's, and the lab suite."""
    digest = hashlib.sha256(os.environ.get("LAB_SUITE", "bookworm").encode())
    parent = PARENT[state]
    if parent:
        digest.update(key(parent).encode())
    for path in INPUTS[state]:
        for f in _files(path):
            if f in NOT_INPUTS:
                continue
            full = os.path.join(ROOT, f)
            digest.update(("%s %o\n" % (f, os.stat(full).st_mode & 0o777)).encode())
            with open(full, "rb") as fh:
                digest.update(fh.read())
    return digest.hexdigest()[:12]


@functools.cache
def name(state):
    """The image name of STATE, computed once per process: files edited during a test session do not
    switch the session to other images half-way."""
    return "%s-%s" % (state, key(state))


def labctl(*args, check=True, env=None):
    return subprocess.run([LABCTL, *args], check=check, capture_output=True, text=True, env=env)


@contextlib.contextmanager
def lock(path=LOCK):
    """An exclusive lock on the lab's images (building or saving them); waits for the holder."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def have(state):
    return labctl("has-image", name(state), check=False).returncode == 0


def save(state, host, index, env=None):
    """Save the running lab host as STATE's image, unless an image of these inputs is there already (it is
    the same state, and images built on top of it stay valid)."""
    if have(state):
        return "%s is in the cache already: kept\n" % name(state)
    res = labctl("save", host, str(index), name(state), check=False, env=env)
    if res.returncode != 0:
        raise RuntimeError("labctl save %s failed (rc %s):\n%s%s" % (name(state), res.returncode, res.stdout, res.stderr))
    return res.stdout


def main(argv):
    if len(argv) == 2 and argv[0] == "name":
        print(name(argv[1]))
    elif len(argv) == 4 and argv[0] == "save":
        print(save(argv[1], argv[2], argv[3]), end="")
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
