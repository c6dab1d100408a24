"""Known causes in a failed service's journal (`journalctl -o cat`), from the messages as their components print
them: FlashInfer's arch and CUDA gate errors, nvcc's missing header, systemd 252's OOM kill, torch's driver check."""

import json
import os

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.service import journal as sj

from ..fakehost import NVCC_12_8, NVCC_13_0, FakeHost

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


def test_match_reads_the_text_once_and_describe_words_it_with_the_numbers_found_later():
    matches = sj.match(NO_ARCH)
    assert [m[0] for m in matches] == ["flashinfer_no_arch", "flashinfer_cuda_gate"]
    assert all(line in NO_ARCH for _name, _groups, line in matches)
    # the CUDA version comes after the scan (service_health asks FlashInfer's lookup only when a cause names it)
    assert sj.describe(matches) == sj.explain(NO_ARCH)
    assert sj.describe(matches, "12.8") == sj.explain(NO_ARCH, "12.8") != sj.describe(matches)
    assert sj.describe(sj.match(DRIVER), None, {"torch_cuda": "13.0", "driver_cuda": "12.8"}) == sj.explain(
        DRIVER, None, {"torch_cuda": "13.0", "driver_cuda": "12.8"}
    )
    assert sj.match("") == sj.match(None) == [] and sj.describe([]) == []


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


# cuda_facts' torch_driver verdicts (nvidia_smi.torch_driver) for a cu128 torch on R550 (12.4) and on R580 (13.0)
CU128_ON_R550 = {"torch_cuda": "12.8", "driver_cuda": "12.4", "ok": False, "msg": "torch 2.9.1+cu128 is built for CUDA 12.8, ..."}
CU128_ON_R580 = {"torch_cuda": "12.8", "driver_cuda": "13.0", "ok": True, "msg": "within"}
CPU_TORCH = {"torch_cuda": None, "driver_cuda": "13.0", "ok": None, "msg": "no CUDA runtime"}
# torch's warning with R550's cuDriverGetVersion (12040)
DRIVER_R550 = DRIVER.replace("12080", "12040")


@pytest.mark.parametrize(
    "text,verdict,cause,fix",
    [
        # the verdict puts torch's CUDA and the driver's in the cause and the fix
        (
            RUNTIME,
            CU128_ON_R550,
            "torch's CUDA 12.8 runtime is newer than the driver supports (the driver supports CUDA 12.4)",
            "upgrade the NVIDIA driver to one that supports CUDA 12.8 (R570 or later), or pin a torch built for CUDA <= 12.4",
        ),
        (DRIVER_R550, CU128_ON_R550, "torch's CUDA 12.8 runtime is newer than the driver supports (the driver supports CUDA 12.4)", "(R570 or later)"),
        # the journal's driver (12.8) is not the verdict's (12.4): the verdict is about another state, the journal's number stays
        (DRIVER, CU128_ON_R550, "torch's CUDA runtime is newer than the driver supports (the driver supports CUDA 12.8)", "torch's CUDA lane"),
        # a verdict that is ok or unknown says nothing the journal does not
        (RUNTIME, CU128_ON_R580, "torch's CUDA runtime is newer than the driver supports", "torch's CUDA lane"),
        (RUNTIME, CPU_TORCH, "torch's CUDA runtime is newer than the driver supports", "torch's CUDA lane"),
        (RUNTIME, None, "torch's CUDA runtime is newer than the driver supports", "torch's CUDA lane"),
    ],
)
def test_driver_cause_names_the_verdicts_numbers(text, verdict, cause, fix):
    (found,) = sj.explain(text, None, verdict)
    assert found["name"] == "driver_too_old"
    assert found["cause"] == cause
    assert fix in found["fix"]


def test_other_causes_ignore_the_verdict():
    assert sj.explain(GATE, "13.0", CU128_ON_R550) == sj.explain(GATE, "13.0")


# the role's environment and the unit's as systemd has it loaded (systemctl show -p Environment, parsed)
ROLE_ENV = {"CUDA_HOME": "/usr/local/cuda-13.0", "PATH": "/usr/local/cuda-13.0/bin:/opt/sglang/current/bin:/usr/bin:/bin", "FLASHINFER_CUDA_ARCH_LIST": "12.0a"}
SEED_ENV = {"PATH": "/usr/local/cuda-12.8/bin:/root/venv_sglang211/bin:/usr/bin:/bin", "HF_HOME": "/data/hf"}


@pytest.mark.parametrize(
    "expected,unit_env,applies",
    [
        (ROLE_ENV, dict(ROLE_ENV, HF_HOME="/data/hf"), True),  # the unit runs what the role wrote (and more)
        (ROLE_ENV, SEED_ENV, False),  # put back to the seeds' 12.8 PATH: the journal's own words
        (ROLE_ENV, dict(ROLE_ENV, CUDA_HOME="/usr/local/cuda-12.8"), False),  # edited since
        (ROLE_ENV, {}, False),
        ({}, ROLE_ENV, False),  # nothing to tell: not vouched for
        (None, SEED_ENV, True),  # no environment given: the caller vouches
    ],
)
def test_facts_apply(expected, unit_env, applies):
    assert sj.facts_apply(expected, unit_env) is applies


# ct200's toolkits as FlashInfer's lookup meets them: 12.8 behind /usr/local/cuda, 13.0 side by side
CT200 = FakeHost(
    files={"/usr/local/cuda-12.8/bin/nvcc": NVCC_12_8, "/usr/local/cuda/bin/nvcc": NVCC_12_8, "/usr/local/cuda-13.0/bin/nvcc": NVCC_13_0},
    dirs={"/usr/local/cuda"},
)


@pytest.mark.parametrize(
    "unit_env,cuda",
    [
        (ROLE_ENV, "13.0"),  # CUDA_HOME first
        (SEED_ENV, "12.8"),  # the seeds' unit: nvcc 12.8 first on its PATH
        ({"CUDA_PATH": "/usr/local/cuda-12.8"}, "12.8"),
        ({}, "12.8"),  # systemd's default PATH has no nvcc: /usr/local/cuda
        ({"CUDA_HOME": "/opt/no-such-cuda"}, None),  # no nvcc answers there: FlashInfer would take torch's lane, not guessed
    ],
)
def test_effective_cuda_in_the_units_environment(unit_env, cuda):
    assert sj.effective_cuda(unit_env, CT200, exists=CT200.exists) == cuda


def test_the_seeds_incident_names_the_cuda_of_the_units_own_environment():
    found = sj.explain(NO_ARCH, sj.effective_cuda(SEED_ENV, CT200, exists=CT200.exists))
    assert sj.names_cuda(found) and "a CUDA version lookup that found CUDA 12.8" in found[0]["cause"]
    assert not sj.names_cuda(sj.explain(OOM + CURAND))


# `journalctl -u sglang-k26.service -o json` on the lab host, a unit with Restart=on-failure crashing into the seeds'
# incident: run 9167f961 was stopped by hand (systemctl restart), run abfede9c crashed and systemd restarted it into
# run 4dd70609, which was still starting (frozen before it could crash) when this was read
with open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "journalctl-restarting.jsonl"), encoding="utf-8") as _fh:
    RESTARTING = _fh.read()
MANUAL, CRASHED, LOADING = "9167f961d4d64b8bb3be1cc8640ac72d", "abfede9c768c4e988172e99b5ab6bf10", "4dd7060900104a0c86f5740ea5168183"


def test_a_run_systemd_restarted_by_itself_is_explained_from_the_run_before():
    text = sj.previous_run(RESTARTING, LOADING)
    lines = text.splitlines()
    assert lines[0].startswith("Started sglang-k26.service") and "Scheduled restart job, restart counter is at 1." in text
    assert [c["name"] for c in sj.explain(text)] == ["flashinfer_no_arch"]
    # the loading run's own lines name nothing yet: that is why the run before is read
    assert sj.explain("\n".join(json.loads(x)["MESSAGE"] for x in RESTARTING.splitlines()[-2:])) == []


@pytest.mark.parametrize(
    "current, why",
    [
        (CRASHED, "started by hand (systemctl restart): the run before is another state"),
        (MANUAL, "no run before it in what was read"),
        ("0" * 32, "a run with no line read yet: the newest run read (still starting) was not restarted by systemd"),
    ],
)
def test_the_run_before_counts_only_when_systemd_restarted_the_unit_itself(current, why):
    assert sj.previous_run(RESTARTING, current) == "", why


def test_lines_that_are_not_json_or_have_no_run_are_left_out_and_bytes_are_text():
    lines = [
        "not json",
        json.dumps({"MESSAGE": "no invocation"}),
        json.dumps({"_SYSTEMD_INVOCATION_ID": "a", "MESSAGE": list("RuntimeError: FlashInfer requires GPUs with sm75 or higher \xff".encode("latin-1"))}),
        json.dumps({"INVOCATION_ID": "a", "MESSAGE": "sglang-k26.service: Scheduled restart job, restart counter is at 2."}),
        json.dumps({"INVOCATION_ID": "b", "MESSAGE": "Started sglang-k26.service"}),
    ]
    text = sj.previous_run("\n".join(lines), "b")
    assert text.startswith("RuntimeError: FlashInfer requires GPUs with sm75 or higher") and "no invocation" not in text
    assert [c["name"] for c in sj.explain(text)] == ["flashinfer_no_arch"]


def test_runs_argv_reads_json_with_the_invocations():
    assert sj.runs_argv("sglang-k26.service") == ["journalctl", "--no-pager", "--output", "json", "--unit", "sglang-k26.service", "--lines", "2000"]
