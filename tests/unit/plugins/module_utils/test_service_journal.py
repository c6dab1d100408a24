"""Known causes in a failed service's journal (`journalctl -o cat`), from the messages as their components print
them: FlashInfer's arch and CUDA gate errors, nvcc's missing header, systemd 252's OOM kill, torch's driver check."""

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils import service_journal as sj

# the seeds' incident: CUDA 12.8 won FlashInfer's lookup, GPU detection failed quietly, the first JIT module refused
NO_ARCH = """\
[2026-03-03 10:12:01] Failed to get device capability: SM 12.x requires CUDA >= 12.9.
Traceback (most recent call last):
  File "/opt/sglang/venvs/k26/lib/python3.12/site-packages/flashinfer/jit/core.py", line 138, in check_cuda_arch
    raise RuntimeError("FlashInfer requires GPUs with sm75 or higher")
RuntimeError: FlashInfer requires GPUs with sm75 or higher
sglang-k26.service: Main process exited, code=exited, status=1/FAILURE
sglang-k26.service: Failed with result 'exit-code'.
"""
# FLASHINFER_CUDA_ARCH_LIST=12.0 with CUDA 12.8 on FlashInfer 0.7.0: import flashinfer raises
GATE = """\
  File "/opt/sglang/venvs/k26/lib/python3.12/site-packages/flashinfer/compilation_context.py", line 61, in _normalize_cuda_arch
    raise RuntimeError("SM 12.x requires CUDA >= 12.9")
RuntimeError: SM 12.x requires CUDA >= 12.9
"""
CURAND = """\
FAILED: /var/cache/sglang/jit/k26/.cache/flashinfer/0.7.4/120a/cached_ops/sampling/csrc_sampling.cuda.o
/opt/sglang/venvs/k26/lib/python3.11/site-packages/flashinfer/data/include/flashinfer/sampling.cuh:22:10: \
fatal error: curand.h: No such file or directory
compilation terminated.
ninja: build stopped: subcommand failed.
"""
OOM = """\
sglang-k26.service: A process of this unit has been killed by the OOM killer.
sglang-k26.service: Main process exited, code=killed, status=9/KILL
sglang-k26.service: Failed with result 'oom-kill'.
sglang-k26.service: Consumed 2min 14.113s CPU time.
"""
DRIVER = """\
/opt/sglang/current/lib/python3.12/site-packages/torch/cuda/__init__.py:180: UserWarning: CUDA initialization: \
The NVIDIA driver on your system is too old (found version 12080). Please update your GPU driver by downloading and \
installing a new version from the URL: http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org \
to install a PyTorch version that has been compiled with your version of the CUDA driver. \
(Triggered internally at /pytorch/c10/cuda/CUDAFunctions.cpp:109.)
"""
RUNTIME = "RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime version\n"
# the lab's health-failure fault: a flag the server refuses; nothing known
ARGPARSE = """\
usage: sglang-standin.py [-h] [--host HOST] [--port PORT] [--module {sampling}]
sglang-standin.py: error: unrecognized arguments: --no-such-flag
sglang-k26.service: Main process exited, code=exited, status=2/INVALIDARGUMENT
sglang-k26.service: Failed with result 'exit-code'.
"""


@pytest.mark.parametrize(
    "text,cuda,names,words",
    [
        (NO_ARCH, "12.8", ["flashinfer_no_arch", "flashinfer_cuda_gate"], ["found CUDA 12.8", "point the unit at CUDA >= 12.9"]),
        (GATE, "12.8", ["flashinfer_cuda_gate"], ["refused CUDA 12.8"]),
        (GATE, None, ["flashinfer_cuda_gate"], ["refused its CUDA"]),
        (CURAND, None, ["jit_missing_curand"], ["libcurand-dev"]),
        (OOM, None, ["oom_kill"], ["OOM killer"]),
        (DRIVER, None, ["driver_too_old"], ["(the driver supports CUDA 12.8)", "torch's CUDA lane"]),
        (RUNTIME, None, ["driver_too_old"], ["newer than the driver supports (journal:"]),
        (ARGPARSE, None, [], []),
        ("", None, [], []),
        (None, None, [], []),
    ],
)
def test_explain(text, cuda, names, words):
    found = sj.explain(text, cuda)
    assert [f["name"] for f in found] == names
    said = sj.summary(found)
    for word in words:
        assert word in said, said
    for f in found:
        assert f["line"] and f["line"] in (text or "")


def test_each_cause_once_with_its_first_line():
    (oom,) = sj.explain(OOM + OOM)
    assert oom["line"] == "sglang-k26.service: A process of this unit has been killed by the OOM killer."


def test_nothing_known_says_nothing():
    assert sj.summary(sj.explain(ARGPARSE)) == ""


def test_journal_argv_is_an_argument_list_since_the_last_start():
    argv = sj.journal_argv("sglang-k26.service", since_usec=1796116237542123)
    assert argv == [
        "journalctl",
        "--no-pager",
        "--output",
        "cat",
        "--unit",
        "sglang-k26.service",
        "--lines",
        "400",
        "--since",
        "@1796116237.542123",
    ]
    assert "--since" not in sj.journal_argv("x.service")
