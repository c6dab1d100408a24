"""The package plan of the cuda_toolkit role: exact pins, config-common first, no driver, no floating metas."""

import pytest
import yaml

from ansible_collections.blackwell.inference.plugins.module_utils import cuda_plan as cp

from ..conftest_paths import ROLE_VARS

with open(ROLE_VARS) as _fh:
    KNOWN = yaml.safe_load(_fh)["__cuda_toolkit_releases"]


def test_slim_13_0_2():
    (entry,) = cp.plan(["13.0.2"], "slim", KNOWN)
    assert entry["version"] == "13.0"
    assert entry["packages"][:3] == [
        "cuda-toolkit-config-common=13.0.96-1",
        "cuda-toolkit-13-config-common=13.0.96-1",
        "cuda-toolkit-13-0-config-common=13.0.96-1",
    ]
    assert "cuda-nvcc-13-0=13.0.88-1" in entry["packages"] and "libcurand-dev-13-0=10.4.0.35-1" in entry["packages"]
    assert "cuda-driver-dev-13-0=13.0.96-1" in entry["packages"]
    assert not any(p.startswith("cuda-toolkit-13-0=") for p in entry["packages"])
    assert len(entry["packages"]) == 14


def test_full_adds_the_versioned_meta_only():
    (entry,) = cp.plan(["13.0.2"], "full", KNOWN)
    assert entry["packages"][-1] == "cuda-toolkit-13-0=13.0.2-1"


@pytest.mark.parametrize(
    "releases,components,overrides,message",
    [
        (["13.x"], "slim", {}, "'13.x' is not a full CUDA release X.Y.Z"),
        (["13.0"], "slim", {}, "'13.0' is not a full CUDA release"),
        (["13.0.3"], "slim", {}, "no pinned versions for CUDA 13.0.3 packages cuda-toolkit-config-common"),
        (["13.0.2"], "everything", {}, "cuda_toolkit_components must be one of slim, full"),
    ],
)
def test_refusals(releases, components, overrides, message):
    with pytest.raises(cp.PlanError, match=message.replace("(", r"\(").replace(")", r"\)")):
        cp.plan(releases, components, KNOWN, overrides)


def test_overrides_complete_an_unknown_release():
    pins = dict.fromkeys(cp.package_names("13.0.3", "slim"), "13.0.99-1")
    (entry,) = cp.plan(["13.0.3"], "slim", KNOWN, {"13.0.3": pins})
    assert all(p.endswith("=13.0.99-1") for p in entry["packages"])


@pytest.mark.parametrize(
    "name",
    ["cuda", "cuda-13-0", "cuda-runtime-13-0", "cuda-drivers", "cuda-drivers-580", "cuda-toolkit", "cuda-toolkit-13", "nvidia-open", "libnvidia-compute-580"],
)
def test_forbidden_names(name):
    assert cp.FORBIDDEN.match(name)


@pytest.mark.parametrize("name", cp.package_names("13.0.2", "full"))
def test_planned_names_are_allowed(name):
    assert not cp.FORBIDDEN.match(name)


@pytest.mark.parametrize(
    "driver,minimum,too_old",
    [
        ("570.124.06", "580.95.05", True),
        ("580.95.05", "580.95.05", False),
        ("580.82.07", "580.95.05", True),
        ("590.44.01", "580.65.06", False),
        ("575.57.08", "575.51.03", False),
    ],
)
def test_driver_too_old(driver, minimum, too_old):
    assert cp.driver_too_old(driver, minimum) is too_old


def test_summary_lines():
    toolkits = [
        {
            "path": "/usr/local/cuda-12.8",
            "dir_version": "12.8",
            "version": "12.8",
            "release": "12.8.93",
            "has_curand_headers": False,
            "has_driver_stubs": False,
        },
        {"path": "/usr/local/cuda-13.0", "dir_version": "13.0", "version": "13.0", "release": "13.0.88", "has_curand_headers": True, "has_driver_stubs": True},
    ]
    results = [{"item": [{"version": "13.0"}, "sm_120a"], "rc": 0}, {"item": [{"version": "13.0"}, "sm_90a"], "skipped": True}]
    summary = cp.summarize(toolkits, results, {"path": "/usr/local/cuda-12.8"}, ["13.0"])
    assert [cp.summary_line(e) for e in summary] == [
        "/usr/local/cuda-12.8: CUDA 12.8.93, JIT-ready: no, compiles: not checked (not managed here) [/usr/local/cuda]",
        "/usr/local/cuda-13.0: CUDA 13.0.88, JIT-ready: yes, compiles: sm_120a",
    ]
