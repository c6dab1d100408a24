"""cuda_toolkit refuses bad input and an old driver before any change; check mode changes nothing. The refusals the
variables check words alone (a wrong choice, a runfile without its checksum, plain http without a fingerprint) are rows of
tests/unit/test_refused_variables.py; here the ones the host decides.

Runs after prepare and before converge: the host still has only CUDA 12.8.
"""

import json

import pytest

from ..conftest import playbook

CT200_DOUBLE = {
    "count": 8,
    "name": "NVIDIA RTX PRO 6000 Blackwell Server Edition",
    "compute_cap": "12.0",
    "memory_mib": 97887,
    "driver_version": "580.95.05",
    "cuda_version": "13.0",
    "mode": "ok",
}


@pytest.mark.parametrize(
    "extra_vars,message",
    [
        ({"cuda_toolkit_versions": ["13.x"]}, "cuda_toolkit_versions: '13.x' is not a full CUDA release X.Y.Z"),
        ({"cuda_toolkit_versions": ["13.0.3"]}, "no pinned versions for CUDA 13.0.3 packages"),
        ({"cuda_toolkit_default": "11.8"}, "cuda_toolkit_default=11.8 must be the X.Y of a toolkit that is installed"),
        (
            {"cuda_toolkit_repo_source": "deb822"},
            "/etc/apt/sources.list.d/cuda-debian12-x86_64.list already point(s) at file:/srv/cuda-mirror/debian12/x86_64/",
        ),
    ],
)
def test_bad_input_is_refused_before_any_change(host_state, extra_vars, message):
    before = host_state()
    rc, out, recap = playbook("--tags", "cuda_toolkit", extra_vars=extra_vars)
    assert rc != 0 and recap.get("failed") == 1, out[-3000:]
    assert message in " ".join(out.split()), out[-3000:]
    assert recap.get("changed") == 0
    assert host_state() == before


def test_driver_too_old_fails_preflight_and_installs_nothing(host, run, host_state):
    before = host_state()
    # the double's config overrides its ct200 defaults
    run("echo %s > /etc/nvidia-smi-double.json" % json.dumps(json.dumps({"driver_version": "570.124.06", "cuda_version": "12.8"})))
    try:
        rc, out, recap = playbook("--tags", "cuda_toolkit")
    finally:
        run("rm /etc/nvidia-smi-double.json")
    flat = " ".join(out.split())
    assert rc != 0 and "driver 570.124.06 (R570, CUDA <= 12.8) is too old for CUDA 13.0.2, which needs >= 580.95.05" in flat, out[-3000:]
    assert "set cuda_toolkit_versions to releases it supports" in flat
    assert recap.get("changed") == 0 and host_state() == before
    assert not host.package("cuda-nvcc-13-0").is_installed


def test_check_mode_reports_changes_and_makes_none(host, host_state):
    before = host_state()
    rc, out, recap = playbook("--check", "--tags", "cuda_toolkit")
    assert rc == 0, out[-3000:]
    assert recap.get("changed", 0) >= 2  # the alternatives pin and the packages it would install
    assert "apt would install 13 package(s)" in out
    assert host_state() == before
    assert host.file("/usr/local/cuda-13.0").exists is False
