"""testinfra tests of the ct200 lab host; run by molecule's verify over SSH:
pytest tests/lab --hosts=ssh://ct200 --ssh-config=$LAB_DIR/ssh_config.ct200"""

import pytest

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
