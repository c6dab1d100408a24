"""Pure parts of the JIT smoke: archs in nvcc spelling, results of the kernel and of the warm-up."""

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils import commands
from ansible_collections.blackwell.inference.plugins.module_utils import jit_smoke as js


@pytest.mark.parametrize(
    "entry,arch",
    [
        ("12.0a", "sm_120a"),
        ("12.0", "sm_120a"),
        ("12.0f", "sm_120f"),
        ("12.1", "sm_121a"),
        ("10.3", "sm_103a"),
        ("9.0", "sm_90a"),
        ("8.9", "sm_89"),
        ("8.0", "sm_80"),
    ],
)
def test_nvcc_arch(entry, arch):
    assert js.nvcc_arch(entry) == arch


@pytest.mark.parametrize("entry", ["sm_120", "120", "12.0,9.0", "", "12.x"])
def test_bad_arch(entry):
    with pytest.raises(ValueError):
        js.nvcc_arch(entry)


def test_archs_from_the_service_list_first():
    assert js.archs_for({"FLASHINFER_CUDA_ARCH_LIST": "12.0a 9.0a"}, ["8.9"]) == ["sm_90a", "sm_120a"]
    assert js.archs_for({}, ["9.0", "12.0"]) == ["sm_90a", "sm_120a"]
    assert js.archs_for({}, []) == []


@pytest.mark.parametrize(
    "rc,stdout,ok,detail",
    [
        (0, "max_error=0\n", True, "max_error=0"),
        (3, "max_error=1.5\n", False, "max_error=1.5"),
        (2, "cuda error: no CUDA-capable device is detected\n", False, "cuda error: no CUDA-capable device is detected"),
        (139, "", False, "exit 139"),
    ],
)
def test_launch_result(rc, stdout, ok, detail):
    assert js.launch_result(rc, stdout, "") == (ok, detail)


def test_last_json_line_skips_logs():
    assert commands.last_json_line('2026-11-29 INFO building\n{"modules": [], "error": null}\n') == {"modules": [], "error": None}
    with pytest.raises(ValueError):
        commands.last_json_line("Traceback ...\n")


def test_saxpy_compile_argv_has_one_gencode_per_arch():
    assert js.saxpy_compile_argv("/usr/local/cuda-13.0/bin/nvcc", ["sm_90a", "sm_120f"], "s.cu", "s") == [
        "/usr/local/cuda-13.0/bin/nvcc",
        "-gencode=arch=compute_90a,code=sm_90a",
        "-gencode=arch=compute_120f,code=sm_120f",
        "-o",
        "s",
        "s.cu",
    ]
