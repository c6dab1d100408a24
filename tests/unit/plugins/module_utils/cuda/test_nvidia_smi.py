"""nvidia-smi answers from several driver generations -> GPU and driver facts."""

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.cuda import nvidia_smi as ns
from ansible_collections.blackwell.inference.plugins.module_utils.venv import info as venv_info

UUID = "GPU-5d1b2c3e-8f4a-4b6c-9d0e-%012d"

# --query-gpu=index,name,uuid,compute_cap,driver_version,memory.total --format=csv,noheader,nounits
OUTPUTS = [
    (
        "R580 8x RTX PRO 6000 (ct200)",
        "".join("%d, NVIDIA RTX PRO 6000 Blackwell Server Edition, %s, 12.0, 580.95.05, 97887\n" % (i, UUID % i) for i in range(8)),
        8,
        ["12.0"],
        "580.95.05",
        97887,
    ),
    (
        "R570 B200",
        "0, NVIDIA B200, %s, 10.0, 570.124.06, 183359\n1, NVIDIA B200, %s, 10.0, 570.124.06, 183359\n" % (UUID % 0, UUID % 1),
        2,
        ["10.0"],
        "570.124.06",
        183359,
    ),
    ("R535 H100 SXM", "0, NVIDIA H100 80GB HBM3, %s, 9.0, 535.183.01, 81559\n" % (UUID % 0), 1, ["9.0"], "535.183.01", 81559),
    ("R550 L40S", "0, NVIDIA L40S, %s, 8.9, 550.127.05, 46068\n" % (UUID % 0), 1, ["8.9"], "550.127.05", 46068),
    ("R580 GB10 (unified memory reports [N/A])", "0, NVIDIA GB10, %s, 12.1, 580.95.05, [N/A]\n" % (UUID % 0), 1, ["12.1"], "580.95.05", None),
    (
        "mixed fleet H200 + RTX PRO 6000, CRLF and trailing blank line",
        "0, NVIDIA H200, %s, 9.0, 580.95.05, 143771\r\n1, NVIDIA RTX PRO 6000 Blackwell Workstation Edition, %s, 12.0, 580.95.05, 97887\r\n\n"
        % (UUID % 0, UUID % 1),
        2,
        ["9.0", "12.0"],
        "580.95.05",
        143771,
    ),
]


@pytest.mark.parametrize("name,stdout,count,ccs,driver,mem0", OUTPUTS)
def test_parse_query(name, stdout, count, ccs, driver, mem0):
    gpus = ns.parse_query(stdout)
    assert len(gpus) == count
    assert ns.summarize_gpus(gpus) == ccs
    assert {g["driver_version"] for g in gpus} == {driver}
    assert gpus[0]["memory_mib"] == mem0
    assert [g["index"] for g in gpus] == list(range(count))
    assert gpus[0]["uuid"].startswith("GPU-")


def test_legacy_query_without_compute_cap():
    """R470 (A100) rejects compute_cap; the same query without it still gives the rest."""
    refusal = 'Field "compute_cap" is not a valid field to query.\n\n'
    assert ns.invalid_field(refusal) == "compute_cap"
    gpus = ns.parse_query("0, NVIDIA A100-SXM4-80GB, %s, 470.256.02, 81920\n" % (UUID % 0), ns.LEGACY_QUERY_FIELDS)
    assert gpus[0]["compute_capability"] is None and gpus[0]["memory_mib"] == 81920


@pytest.mark.parametrize(
    "stdout,message",
    [
        ("0, NVIDIA L40S, GPU-x, 8.9, 550.127.05\n", "has 5 fields, expected 6"),
        ("x, NVIDIA L40S, GPU-x, 8.9, 550.127.05, 46068\n", "GPU index 'x' is not a number"),
        ("0, NVIDIA L40S, GPU-x, sm_89, 550.127.05, 46068\n", "compute capability 'sm_89'"),
        ("0, NVIDIA L40S, GPU-x, 8.9, five-fifty, 46068\n", "driver version 'five-fifty'"),
        ("0, NVIDIA L40S, GPU-x, 8.9, 550.127.05, 46068 MiB\n", "memory.total '46068 MiB'"),
        ("Segmentation fault in libnvidia-ml\n", "has 1 fields"),
    ],
)
def test_malformed(stdout, message):
    with pytest.raises(ns.NvidiaSmiError, match=message):
        ns.parse_query(stdout)


@pytest.mark.parametrize(
    "rc,stdout,loaded,reason",
    [
        (
            9,
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the "
            "latest NVIDIA driver is installed and running.\n\n",
            False,
            "cannot talk to the NVIDIA driver",
        ),
        (6, "No devices were found\n", True, "no NVIDIA GPU was found"),
        (18, "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 580.95\n", False, "mismatch"),
        (255, "Unknown Error\n", None, "rc=255: Unknown Error"),
    ],
)
def test_classify_failure(rc, stdout, loaded, reason):
    got_loaded, got_reason = ns.classify_failure(rc, stdout, "")
    assert got_loaded is loaded and reason in got_reason


@pytest.mark.parametrize(
    "driver,api,want",
    [
        ("580.95.05", None, ("13.0", "driver_branch_table")),
        ("570.124.06", None, ("12.8", "driver_branch_table")),
        ("575.57.08", None, ("12.9", "driver_branch_table")),
        ("535.183.01", None, ("12.2", "driver_branch_table")),
        ("580.95.05", 13000, ("13.0", "libcuda")),
        ("999.1", None, (None, "unknown driver branch R999")),
        (None, None, (None, None)),
    ],
)
def test_driver_cuda_version(driver, api, want):
    assert ns.driver_cuda_version(driver, api) == want


@pytest.mark.parametrize(
    "text,want",
    [
        (
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  (dvs-builder@U22-I3-AF03-09-1)  "
            "Thu Sep 25 19:42:50 UTC 2025\nGCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)\n",
            True,
        ),
        (
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.127.05  Tue Oct  8 03:22:07 UTC 2024\n"
            "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n",
            False,
        ),
        ("", None),
    ],
)
def test_open_kernel_module(text, want):
    assert ns.parse_proc_version(text) is want


# torch/version.py as the wheels ship it (2.9.1+cu128 from download.pytorch.org/whl/cu128, the CPU build of this machine)
def torch_version_py(version, cuda):
    return (
        "from typing import Optional\n\n__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'rocm', 'xpu']\n"
        "__version__ = '%s'\ndebug = False\ncuda: Optional[str] = %s\nhip: Optional[str] = None\n" % (version, "'%s'" % cuda if cuda else "None")
    )


def driver_facts(stdout, rc=0):
    """The driver facts cuda_measure.gather_gpus makes of one nvidia-smi answer."""
    if rc:
        present, error = ns.classify_failure(rc, stdout, "")
        return {"present": present, "version": None, "cuda_version": None, "cuda_version_source": None, "error": error}
    version = ns.parse_query(stdout)[0]["driver_version"]
    cuda, source = ns.driver_cuda_version(version)
    return {"present": True, "version": version, "cuda_version": cuda, "cuda_version_source": source, "error": None}


R580 = driver_facts(OUTPUTS[0][1])  # ct200: 580.95.05
R570 = driver_facts(OUTPUTS[1][1])  # B200: 570.124.06
R550 = driver_facts(OUTPUTS[3][1])  # L40S: 550.127.05
R999 = driver_facts("0, NVIDIA RTX PRO 6000 Blackwell Server Edition, %s, 12.0, 999.10.01, 97887\n" % (UUID % 0))
NO_DRIVER = driver_facts("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", rc=9)


def torch(version, cuda):
    v, c = venv_info.parse_torch_version_py(torch_version_py(version, cuda))
    return {"version": v, "cuda": c}


@pytest.mark.parametrize(
    "torch_,driver,ok,words",
    [
        (torch("2.9.1+cu128", "12.8"), R580, True, ["CUDA 12.8 runtime is within what driver 580.95.05 supports (CUDA 13.0)"]),
        (torch("2.14.1+cu130", "13.0"), R580, True, ["within"]),
        (torch("2.9.1+cu128", "12.8"), R570, True, ["(CUDA 12.8)"]),
        (
            torch("2.9.1+cu128", "12.8"),
            R550,
            False,
            [
                "built for CUDA 12.8, newer than driver 550.127.05 supports (CUDA 12.4)",
                "minor-version compatibility",
                "upgrade the NVIDIA driver to one that supports CUDA 12.8 (R570 or later)",
                "pin a torch built for CUDA <= 12.4",
                "cu124",
            ],
        ),
        (torch("2.14.1+cu130", "13.0"), R570, False, ["a CUDA 13 runtime refuses a CUDA 12 driver", "(R580 or later)", "CUDA <= 12.8"]),
        (torch("2.13.0+cpu", None), R580, None, ["torch 2.13.0+cpu has no CUDA runtime"]),
        (torch("2.9.1+cu128", "12.8"), NO_DRIVER, None, ["no NVIDIA driver answered", "cannot talk to the NVIDIA driver"]),
        (None, R580, None, ["no torch in the venv"]),
        (torch("2.9.1+cu128", "12.8"), R999, None, ["driver 999.10.01 supports is not known (unknown driver branch R999)"]),
    ],
)
def test_torch_driver(torch_, driver, ok, words):
    got = ns.torch_driver(torch_, driver)
    assert got["ok"] is ok
    assert got["torch_cuda"] == (torch_ or {}).get("cuda") and got["driver_cuda"] == driver["cuda_version"]
    for word in words:
        assert word in got["msg"], got["msg"]


@pytest.mark.parametrize("cuda,branch", [("12.8", 570), ("12.9", 575), ("13.0", 580), ("12.4", 550), ("13.2", None), (None, None)])
def test_oldest_branch_for(cuda, branch):
    assert ns.oldest_branch_for(cuda) == branch
