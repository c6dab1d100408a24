"""Pure parts of the service role: environment from facts, systemd quoting, verdict, marker, revalidation."""

import os

import pytest
import yaml

from ansible_collections.blackwell.inference.plugins.module_utils import sglang_service as ss

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))

# jit_smoke module results as the role registers them (failed smoke: ignore_errors keeps failed=true)
LAUNCHED = {
    "changed": False,
    "launched": True,
    "steps": {
        "compile": {"ok": True, "seconds": 1.9, "archs": ["sm_120f"]},
        "launch": {"launched": True, "ok": True, "detail": "max_error=0", "seconds": 0.4},
        "warm": {"modules": [{"name": "sampling", "compiled": False, "seconds": 0.01}]},
    },
}
NO_GPU = {
    "changed": True,
    "launched": False,
    "steps": {
        "compile": {"ok": True, "seconds": 0.7, "archs": ["sm_120f"]},
        "launch": {"launched": False, "ok": None, "reason": "no GPU device node (/dev/nvidia0)"},
        "warm": {"modules": [{"name": "sampling", "compiled": True, "seconds": 64.2}]},
    },
}
NO_CURAND = {  # as the lab's smoke reported it, with curand.h removed from CUDA 13.0 (output shortened)
    "failed": True,
    "msg": "FlashInfer's JIT warm-up failed in the service environment: RuntimeError: Ninja build failed. Ninja output:\n"
    "ninja: Entering directory `/var/cache/sglang/.cache/flashinfer/0.7.4/120f/cached_ops/sampling'\n"
    "[1/3]  /usr/local/cuda-13.0/bin/nvcc --generate-dependencies-with-compile -MF x.d -c sampling.cu\n"
    "FAILED: [code=1] /var/cache/sglang/.cache/flashinfer/0.7.4/120f/cached_ops/sampling/csrc_sampling.cuda.o\n"
    "/opt/sglang/venvs/2c26817414e442ed/lib/python3.11/site-packages/flashinfer/data/include/flashinfer/sampling.cuh:21:10: "
    "fatal error: curand.h: No such file or directory\n"
    "compilation terminated.",
    "steps": {"compile": {"ok": True}, "launch": {"launched": False, "reason": "no GPU device node (/dev/nvidia0)"}},
}


@pytest.mark.parametrize(
    "archs,entry",
    [
        (["120f"], "12.0f"),
        (["120a"], "12.0a"),
        (["90a", "120f"], "9.0a 12.0f"),
        (["120f", "90a", "120f"], "9.0a 12.0f"),
        (["89", "80"], "8.0 8.9"),
        (["121a"], "12.1a"),
        (["103f", "100f"], "10.0f 10.3f"),
    ],
)
def test_arch_list_from_flashinfer_target_archs(archs, entry):
    assert ss.arch_list(archs) == entry


@pytest.mark.parametrize("bad", [["sm_120"], ["12.0a"], ["120x"], [""]])
def test_arch_list_refuses_other_spellings(bad):
    with pytest.raises(ValueError):
        ss.arch_list(bad)


def test_environment_from_facts():
    env = ss.environment("/usr/local/cuda-13.0", "/opt/sglang/current", "/var/cache/sglang", "12.0f", "/var/cache/sglang/jit.jsonl")
    assert env == {
        "CUDA_HOME": "/usr/local/cuda-13.0",
        "PATH": "/usr/local/cuda-13.0/bin:/opt/sglang/current/bin:" + ss.SYSTEM_PATH,
        "FLASHINFER_CUDA_ARCH_LIST": "12.0f",
        "FLASHINFER_WORKSPACE_BASE": "/var/cache/sglang",
        "SGLANG_CACHE_DIR": "/var/cache/sglang/sglang",
        "FLASHINFER_JIT_BUILD_LOG": "/var/cache/sglang/jit.jsonl",
    }
    assert "LD_LIBRARY_PATH" not in env  # only when asked


def test_environment_extras_and_ld_library_path():
    env = ss.environment("/usr/local/cuda-13.0/", "/v/", "/c", "12.0a", "", ["/opt/nccl/lib", "/x"], {"NCCL_DEBUG": "WARN", "N": 1})
    assert env["PATH"].startswith("/usr/local/cuda-13.0/bin:/v/bin:")
    assert env["LD_LIBRARY_PATH"] == "/opt/nccl/lib:/x"
    assert env["NCCL_DEBUG"] == "WARN" and env["N"] == "1"
    assert "FLASHINFER_JIT_BUILD_LOG" not in env


@pytest.mark.parametrize("key", ss.MANAGED_KEYS)
def test_environment_refuses_overriding_derived_keys(key):
    with pytest.raises(ValueError, match=key):
        ss.environment("/usr/local/cuda-13.0", "/v", "/c", "12.0a", extra={key: "x"})


def test_role_preflight_knows_the_same_derived_keys():
    with open(os.path.join(ROOT, "roles", "sglang_service", "vars", "main.yml")) as fh:
        assert tuple(yaml.safe_load(fh)["__sglang_service_derived_keys"]) == ss.MANAGED_KEYS


@pytest.mark.parametrize(
    "word,exec_arg,quoted",
    [
        ("PATH=/usr/local/cuda-13.0/bin:/usr/bin", False, '"PATH=/usr/local/cuda-13.0/bin:/usr/bin"'),
        ('A=say "hi"', False, '"A=say \\"hi\\""'),
        ("A=100%", False, '"A=100%%"'),
        ("A=c:\\d", False, '"A=c:\\\\d"'),
        ("A=$HOME", False, '"A=$HOME"'),
        ("--flag=$HOME", True, '"--flag=$$HOME"'),
        ("/models/Kimi K2", True, '"/models/Kimi K2"'),
    ],
)
def test_systemd_quote(word, exec_arg, quoted):
    assert ss.systemd_quote(word, exec_arg) == quoted


def test_systemd_quote_refuses_newlines():
    with pytest.raises(ValueError):
        ss.systemd_quote("A=1\nExecStartPre=/bin/sh")


def test_digest_changes_with_each_input():
    base = ss.inputs_digest({"A": "1"}, "/opt/sglang/venvs/aaa", "13.0", "12.0f")
    assert base == ss.inputs_digest({"A": "1"}, "/opt/sglang/venvs/aaa", "13.0", "12.0f")
    others = [
        ss.inputs_digest({"A": "2"}, "/opt/sglang/venvs/aaa", "13.0", "12.0f"),
        ss.inputs_digest({"A": "1"}, "/opt/sglang/venvs/bbb", "13.0", "12.0f"),
        ss.inputs_digest({"A": "1"}, "/opt/sglang/venvs/aaa", "13.1", "12.0f"),
        ss.inputs_digest({"A": "1"}, "/opt/sglang/venvs/aaa", "13.0", "12.0a"),
    ]
    assert base not in others and len(set(others)) == 4


@pytest.mark.parametrize(
    "smoke,policy,ready,reason",
    [
        (LAUNCHED, False, True, "kernel launched (max_error=0), JIT cache warm (sampling)"),
        (NO_GPU, False, False, "no kernel launched (no GPU device node (/dev/nvidia0)) and sglang_service_ready_without_launch is false"),
        (NO_GPU, True, True, "compiled, JIT cache warm (sampling); not launched (no GPU device node (/dev/nvidia0)), allowed by policy"),
        (
            NO_CURAND,
            True,
            False,
            "smoke failed: FlashInfer's JIT warm-up failed in the service environment: RuntimeError: Ninja build failed. Ninja output:"
            " (fatal error: curand.h: No such file or directory)",
        ),
        ({}, False, False, "no kernel launched (no launch step) and sglang_service_ready_without_launch is false"),
    ],
)
def test_verdict(smoke, policy, ready, reason):
    assert ss.verdict(bool(smoke.get("failed")), smoke, policy) == (ready, reason)


@pytest.mark.parametrize(
    "marker,needed,why",
    [
        (None, True, "no ready marker"),
        ({}, True, "no ready marker"),
        ({"ready": False, "reason": "smoke failed: x", "inputs": "d1"}, True, "marked not ready: smoke failed: x"),
        ({"ready": True, "inputs": "d0"}, True, "validated inputs differ from the current ones"),
        ({"ready": True, "inputs": "d1"}, False, "ready for the current inputs"),
    ],
)
def test_needs_validation(marker, needed, why):
    assert ss.needs_validation(marker, "d1") == (needed, why)


def test_marker_keeps_last_good_across_failures():
    ok = ss.marker(True, "r", "2026-11-29T10:00:00Z", "d1", "/opt/sglang/venvs/a", {"cuda_version": "13.0"}, "12.0f", {"torch": "2.13.0"}, NO_GPU)
    assert ok["ready"] and not ok["launched"] and ok["smoke"]["warm"]["modules"][0]["compiled"]
    assert ok["last_good"] == {"venv": "/opt/sglang/venvs/a", "inputs": "d1", "time": "2026-11-29T10:00:00Z"}
    bad = ss.marker(False, "smoke failed", "2026-11-29T11:00:00Z", "d2", "/opt/sglang/venvs/b", {}, "12.0f", {}, NO_CURAND, ok)
    assert not bad["ready"] and bad["venv"] == "/opt/sglang/venvs/b"
    assert bad["last_good"] == ok["last_good"]
    assert ss.marker(False, "x", "t", "d", "/v", {}, "", {}, None)["last_good"] is None
