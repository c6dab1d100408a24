"""testinfra tests of the ct200 lab host, run over SSH by the molecule scenario:
before/ after prepare (side_effect, before converge), after/ after converge (verify):
pytest tests/lab/before --hosts=ssh://ct200 --ssh-config=$LAB_DIR/ssh_config.ct200"""

import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INVENTORY = os.path.join(ROOT, "inventories", "lab", "hosts.yml")

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


def playbook_command(*args, extra_vars=None):
    """(argv, env) of site.yml against ct200 from the controller."""
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", INVENTORY, "site.yml", "-l", "ct200", *args]
    if extra_vars:
        cmd += ["-e", json.dumps(extra_vars)]
    return cmd, dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_FORCE_COLOR="0", NO_COLOR="1")


def playbook(*args, extra_vars=None):
    """Run site.yml against ct200; (rc, output, recap dict of ct200)."""
    cmd, env = playbook_command(*args, extra_vars=extra_vars)
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    out = proc.stdout + proc.stderr
    m = re.search(r"^ct200\s+:\s+(.*)$", out, re.M)
    recap = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(1))} if m else {}
    return proc.returncode, out, recap


@pytest.fixture
def host_state(run):
    """What must not move when a run is refused or only checked: packages and the cuda alternatives."""

    def _state():
        return (run("dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev}\\n'"), run("update-alternatives --query cuda"), run("apt-mark showhold"))

    return _state
