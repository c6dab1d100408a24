"""testinfra tests of the ct200 lab host over SSH, each test file on a fresh copy of the image of the
state it needs (tests/lab/images.py): before/ on ct200 as the seeds found it, after/ and faults/ on
ct200 converged by the current roles. A file that changes the host leaves nothing behind for the next:
the next file starts from the image again (a reboot onto an empty overlay layer), not from a converge.
The molecule scenario (tests/integration/test_lab_scenario.py) saves both images on its way; run alone
(`pytest tests/lab/faults`), the session builds what is missing the same way.
"""

import json
import os
import re
import shlex
import subprocess
import sys
import time
import urllib.request

import pytest
import testinfra

from . import images

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CACHE = os.environ.get("BLACKWELL_CACHE_DIR", "/var/cache/blackwell-inference")
LAB_HOST = "ct200"
# Under pytest-xdist (make test runs 2 workers) each worker has its own lab host: worker gwN gets veth index
# N+1 (10.251.<N+1>.0/30; index 0 is the molecule scenario's) and its own LAB_DIR and inventory.
_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
LAB_INDEX = os.environ.get("LAB_INDEX") or (str(int(_WORKER[2:]) + 1) if _WORKER else "0")
LAB_DIR = os.path.join(CACHE, "lab-%s" % LAB_INDEX) if _WORKER else (os.environ.get("LAB_DIR") or os.path.join(CACHE, "lab"))
INVENTORY = os.environ.get("LAB_INVENTORY") or os.path.join(ROOT, "inventories", "lab", "hosts.yml")
if LAB_INDEX != "0" and not os.environ.get("LAB_INVENTORY"):
    # the lab inventory with this host's address; its host_vars are the lab's own
    _inv_dir = os.path.join(LAB_DIR, "inventory")
    os.makedirs(_inv_dir, exist_ok=True)
    with open(INVENTORY, encoding="utf-8") as _fh:
        _text = _fh.read().replace("ansible_host: 10.251.0.2", "ansible_host: 10.251.%s.2" % LAB_INDEX)
    INVENTORY = os.path.join(_inv_dir, "hosts.yml")
    with open(INVENTORY, "w", encoding="utf-8") as _fh:
        _fh.write(_text)
    # LAB_DIR outlives the checkout (the cache): point host_vars at this checkout's every time, never at the
    # clone that made the link (a CI clone at another path, with another commit's host_vars)
    _link, _target = os.path.join(_inv_dir, "host_vars"), os.path.join(ROOT, "inventories", "lab", "host_vars")
    if not (os.path.islink(_link) and os.readlink(_link) == _target):
        if os.path.lexists(_link):
            os.unlink(_link)
        os.symlink(_target, _link)
SSH_CONFIG = os.path.join(LAB_DIR, "ssh_config." + LAB_HOST)
LAB_SUITE = os.environ.get("LAB_SUITE", "bookworm")


def lab_env(**extra):
    """The environment of a command that reaches this session's lab host (its LAB_DIR names the SSH key)."""
    return dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_FORCE_COLOR="0", NO_COLOR="1", LAB_DIR=LAB_DIR, **extra)


NVIDIA_SMI_QUERY = "nvidia-smi --query-gpu=index,name,uuid,compute_cap,driver_version,memory.total --format=csv,noheader,nounits"
MIRROR = "/srv/cuda-mirror"


@pytest.fixture
def run(host):
    """Run a command on the lab host and require success."""

    def _run(cmd):
        res = host.run(cmd)
        assert res.rc == 0, "%s -> rc=%s\n%s\n%s" % (cmd, res.rc, res.stdout, res.stderr)
        return res.stdout

    return _run


def playbook_command(*args, extra_vars=None, play="site.yml"):
    """(argv, env) of site.yml (or another play, relative to the project) against ct200 from the controller."""
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", INVENTORY, play, "-l", "ct200", *args]
    if extra_vars:
        cmd += ["-e", json.dumps(extra_vars)]
    return cmd, lab_env()


def playbook(*args, extra_vars=None, play="site.yml"):
    """Run site.yml (or another play) against ct200; (rc, output, recap dict of ct200)."""
    cmd, env = playbook_command(*args, extra_vars=extra_vars, play=play)
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    out = proc.stdout + proc.stderr
    m = re.search(r"^ct200\s+:\s+(.*)$", out, re.M)
    recap = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(1))} if m else {}
    return proc.returncode, out, recap


def on_host_until(run, condition, what, timeout=120):
    """Poll a shell condition on the host itself (50 ms steps, no SSH round trip per step), never a fixed sleep.
    A pgrep pattern in `condition` must not match the polling shell: write `[b]in/nvcc`, not `bin/nvcc`."""
    res = run("timeout %d sh -c %s && echo met || echo timeout" % (timeout, shlex.quote("until %s; do sleep 0.05; done" % condition)))
    assert res.strip().endswith("met"), "never seen within %d s: %s" % (timeout, what)


def workspace(run, cache="/var/cache/sglang"):
    """FlashInfer's workspace of the venv the service runs from: one per venv, <cache>/jit/<venv name>."""
    return "%s/jit/%s" % (cache, os.path.basename(run("readlink -f /opt/sglang/current").strip()))


def sampling_library(run):
    """The warmed sampling module of the current venv's workspace (FlashInfer 0.7.4 in SGLang's workers on CC 12.0:
    12.0a, the lab venv carries SGLang)."""
    return workspace(run) + "/.cache/flashinfer/0.7.4/120a/cached_ops/sampling/sampling.so"


@pytest.fixture
def host_state(run):
    """What must not move when a run is refused or only checked: packages and the cuda alternatives."""

    def _state():
        return (run("dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev}\\n'"), run("update-alternatives --query cuda"), run("apt-mark showhold"))

    return _state


# -- the lab host, from images ----------------------------------------------------------------------


def _labctl(*args):
    res = subprocess.run([images.LABCTL, *args], capture_output=True, text=True, check=False, env=lab_env())
    assert res.returncode == 0, "labctl %s -> rc=%s\n%s%s" % (" ".join(args), res.returncode, res.stdout, res.stderr)
    return res.stdout


def _build(state, log):
    """Reach STATE from its parent's image the way the scenario does, then save it (a cold cache only)."""
    parent = images.PARENT[state]
    # a fresh copy: `up` leaves a running host of the same image as it is, and the test before may have changed it
    _labctl("down", LAB_HOST, LAB_INDEX)
    if parent:
        _labctl("up", LAB_HOST, LAB_INDEX, LAB_SUITE, _ensure(parent, log))
    else:
        _labctl("up", LAB_HOST, LAB_INDEX, LAB_SUITE)
    play = os.path.join(ROOT, "molecule", "default", "prepare.yml") if state == "before" else "site.yml"
    cmd, env = playbook_command()
    cmd = [cmd[0], "-i", INVENTORY, play, "-l", LAB_HOST]
    env["MOLECULE_PROJECT_DIRECTORY"] = ROOT
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, "building the %s image failed:\n%s" % (state, (proc.stdout + proc.stderr)[-4000:])
    images.save(state, LAB_HOST, LAB_INDEX, env=lab_env())  # kept when prepare saved it itself
    log.append("%s image built in %.0f s" % (state, time.monotonic() - start))


def _ensure(state, log):
    if not images.have(state):
        _build(state, log)
    return images.name(state)


class Lab:
    """ct200, booted from an image; `at(state)` gives a fresh copy of that state's image."""

    def __init__(self):
        self.image = None
        self.fresh = False
        self.log = []

    def at(self, state):
        if images.have(state):  # a warm cache: no need to wait for the scenario (it keeps existing images)
            image = images.name(state)
        else:
            with images.lock():  # one builder at a time; the scenario holds it while it saves the images
                image = _ensure(state, self.log)
        if self.image == image and self.fresh:
            return
        if self.image == image:
            _labctl("reset", LAB_HOST, LAB_INDEX)
        else:
            _labctl("up", LAB_HOST, LAB_INDEX, LAB_SUITE, image)
        self.image, self.fresh = image, True
        if state == "converged":
            wait_for_health()
            wait_for_the_ready_unit()


def wait_for_the_ready_unit(timeout=300, host=LAB_HOST, ssh_config=None):
    """After a boot the service answers before its ready unit has judged the answer and written the marker (phase
    serving): wait for that unit's end (exited, failed; dead where there is none), so a test reads a settled marker."""
    unit = "sglang-k26-ready.service"
    cond = "until systemctl show -p SubState --value %s | grep -Eqx 'exited|failed|dead'; do sleep 0.2; done" % unit
    res = subprocess.run(["ssh", "-F", SSH_CONFIG, LAB_HOST, "timeout %d sh -c %s" % (timeout, shlex.quote(cond))], capture_output=True, text=True, check=False)
    assert res.returncode == 0, "%s on the lab host did not end within %d s of booting: %s" % (unit, timeout, res.stderr)


def wait_for_health(index=LAB_INDEX, timeout=300):
    """Booted is not serving: the boot validation runs, then the service loads FlashInfer and answers (the lab host at
    veth index `index`)."""
    url = "http://10.251.%s.2:30000/health" % index
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:  # noqa: S310 - http on the lab host's own veth
                if resp.status == 200:
                    return
        except OSError:
            pass
        assert time.monotonic() < deadline, "sglang-k26 on the lab host did not answer %s within %d s of booting" % (url, timeout)
        time.sleep(0.5)  # polling the condition, not a fixed wait


@pytest.fixture(scope="session")
def lab():
    """The lab host for the whole session; powered off and removed at its end, leaving nothing behind."""
    the_lab = Lab()
    yield the_lab
    _labctl("down", LAB_HOST, LAB_INDEX)
    assert _labctl("leftovers", LAB_HOST, LAB_INDEX) == ""


@pytest.fixture(scope="module")
def lab_state():
    """The state a test file needs (a sub-package's conftest overrides it)."""
    return "converged"


@pytest.fixture(scope="module", autouse=True)
def lab_host(request, lab, lab_state):
    """Each test file starts from a fresh copy of its state's image, whatever the file before it did.
    A file that declares `LAB_READ_ONLY = True` (it only reads, or asserts that its runs changed
    nothing) leaves the copy fresh for the next file of the same state: no reboot in between."""
    lab.at(lab_state)
    yield lab
    lab.fresh = lab.fresh and getattr(request.module, "LAB_READ_ONLY", False)


@pytest.fixture
def fresh(lab, lab_state):
    """This test starts from a fresh copy of its state's image (a reset, seconds, when the test before it
    changed the host) and leaves the next one to reset again: no converge to put things back."""
    lab.at(lab_state)
    yield lab
    lab.fresh = False


@pytest.fixture(scope="module")
def host(lab_host):
    """testinfra's host, over SSH to the lab host (overrides --hosts)."""
    return testinfra.get_host("ssh://" + LAB_HOST, ssh_config=SSH_CONFIG)
