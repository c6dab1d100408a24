"""Pure parts of the JIT smoke: archs in nvcc spelling, results of the kernel and of the warm-up."""

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.common import commands
from ansible_collections.blackwell.inference.plugins.module_utils.flashinfer import jit_smoke as js


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


# the smoke's steps in their one order (run_steps), as the jit_smoke module and the boot validator feed them
COMPILED = (True, {"ok": True, "seconds": 1.0, "archs": ["sm_120a"], "nvcc": "/usr/local/cuda-13.0/bin/nvcc", "cuda_home": "/usr/local/cuda-13.0"}, {"rc": 0})
NOT_COMPILED = (False, dict(COMPILED[1], ok=False), {"rc": 1, "stderr": "nvcc fatal"})
LAUNCHED = (True, {"launched": True, "ok": True, "detail": "max_error=0", "seconds": 0.1}, {"rc": 0})
BAD_LAUNCH = (False, {"launched": True, "ok": False, "detail": "cuda error: no kernel image", "seconds": 0.1}, {"rc": 2})
WARM = (True, {"modules": [{"name": "sampling", "compiled": False}], "seconds": 3.0}, {"rc": 0})
WARM_FAILED = (False, {"error": "RuntimeError: Ninja build failed", "seconds": 9.0}, {"rc": 1})
BAD_SAMPLES = (True, {"modules": [], "gpu_run": {"ok": False}, "seconds": 3.0}, {"rc": 0})


class Steps:
    def __init__(self, compiled=COMPILED, launched=LAUNCHED, warm=WARM):
        self.results, self.ran = {"compile": compiled, "launch": launched, "warm": warm}, []

    def step(self, name):
        def run():
            self.ran.append(name)
            return self.results[name]

        return run


@pytest.mark.parametrize(
    ("steps", "launch", "gpu", "failure", "ran", "launched"),
    [
        (Steps(), "auto", True, None, ["compile", "launch", "warm"], True),
        (Steps(), "auto", False, None, ["compile", "warm"], False),
        (Steps(), "never", True, None, ["compile", "warm"], False),
        (Steps(), "always", False, "launch=always but this host has no GPU device node (/dev/nvidia0)", ["compile"], False),
        (Steps(compiled=NOT_COMPILED), "auto", True, "the saxpy kernel does not compile with /usr/local/cuda-13.0/bin/nvcc for sm_120a", ["compile"], None),
        (Steps(launched=BAD_LAUNCH), "auto", True, "the saxpy kernel ran but failed: cuda error: no kernel image", ["compile", "launch"], True),
        (Steps(warm=WARM_FAILED), "auto", False, "FlashInfer's JIT warm-up failed in the service environment: RuntimeError: Ninja build failed", None, False),
        (Steps(warm=BAD_SAMPLES), "auto", False, "FlashInfer sampling ran on the GPU but returned bad samples", None, False),
    ],
)
def test_run_steps(steps, launch, gpu, failure, ran, launched):
    got, done, output = js.run_steps(steps.step("compile"), steps.step("launch"), steps.step("warm"), launch, gpu)
    assert got == failure
    if ran is not None:
        assert steps.ran == ran
    if launched is not None:
        assert done["launch"]["launched"] is launched
    # the failed step's command output comes back for the caller (fail_json's rc/stdout/stderr, the boot marker)
    if failure and failure.startswith("the saxpy kernel does not compile"):
        assert output == {"rc": 1, "stderr": "nvcc fatal"}


def test_run_steps_without_a_warm_up():
    steps = Steps()
    failure, done, _output = js.run_steps(steps.step("compile"), steps.step("launch"), None, "auto", False)
    assert failure is None and "warm" not in done and steps.ran == ["compile"]


@pytest.mark.parametrize(
    ("rc", "stdout", "stderr", "ok", "error"),
    [
        (0, 'log line\n{"modules": [{"name": "sampling", "compiled": true}]}\n', "", True, None),
        (0, '{"error": "ImportError: flashinfer"}\n', "", False, "ImportError: flashinfer"),
        (1, '{"modules": []}\n', "Traceback", False, None),  # a result line, but the process failed
        (1, "", "Traceback (most recent call last): ...", False, "Traceback (most recent call last): ..."),
        (-1, "", "", False, "the warm-up printed no result"),
        (0, "{not json\n", "", False, "the warm-up printed no result"),
    ],
)
def test_warm_result(rc, stdout, stderr, ok, error):
    got_ok, warm = js.warm_result(rc, stdout, stderr, 2.5)
    assert got_ok is ok and warm["seconds"] == 2.5 and warm.get("error") == error
