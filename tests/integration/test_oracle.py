"""Oracle: cuda_facts' prediction against FlashInfer's own answer, in the same environment.

A real flashinfer-python 0.7.2.post1 (imports without a GPU) with the CPU torch; the real nvcc 13.0
of this machine; an nvcc double printing NVIDIA's real 12.8 banner (no 12.8 nvcc exists on PyPI).
"""

from pathlib import Path

import pytest

from .conftest import NVIDIA_SMI_DOUBLE, ansible_module_calls

REAL_13 = "/usr/local/cuda-13.0"
BASE_PATH = "/usr/bin:/bin"
BANNER_12_8 = """nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2025 NVIDIA Corporation
Built on Fri_Feb_21_20:23:50_PST_2025
Cuda compilation tools, release 12.8, V12.8.93
Build cuda_12.8.r12.8/compiler.35583870_0
"""


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """<t>/cuda-12.8/bin/nvcc (banner double), <t>/wrap/bin/nvcc (wrapper to the real 13.0 nvcc),
    <t>/noexec/bin/nvcc (not executable)."""
    t = tmp_path_factory.mktemp("cuda")

    def script(path, body, mode=0o755):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\n" + body)
        path.chmod(mode)

    script(t / "cuda-12.8" / "bin" / "nvcc", "# TEST DOUBLE: banner of NVIDIA's CUDA 12.8 nvcc\ncat <<'EOF'\n%sEOF\n" % BANNER_12_8)
    script(t / "wrap" / "bin" / "nvcc", 'exec %s/bin/nvcc "$@"\n' % REAL_13)
    script(t / "noexec" / "bin" / "nvcc", "echo never\n", mode=0o644)
    return t


def _cases(t):
    c128 = str(t / "cuda-12.8")
    return [
        # name, environment, expected (cuda_home, source, cuda_version, version source) or error kind
        ("CUDA_HOME set", {"CUDA_HOME": REAL_13, "PATH": BASE_PATH}, (REAL_13, "CUDA_HOME", "13.0", "nvcc")),
        ("CUDA_PATH only", {"CUDA_PATH": c128, "PATH": BASE_PATH}, (c128, "CUDA_PATH", "12.8", "nvcc")),
        ("empty CUDA_HOME", {"CUDA_HOME": "", "PATH": c128 + "/bin:" + BASE_PATH}, (c128, "PATH", "12.8", "nvcc")),
        ("nvcc only on PATH", {"PATH": REAL_13 + "/bin:" + BASE_PATH}, (REAL_13, "PATH", "13.0", "nvcc")),
        ("12.8 before 13.0 on PATH", {"PATH": c128 + "/bin:" + REAL_13 + "/bin:" + BASE_PATH}, (c128, "PATH", "12.8", "nvcc")),
        ("wrapper nvcc in another bin dir", {"PATH": str(t / "wrap" / "bin") + ":" + BASE_PATH}, (str(t / "wrap"), "PATH", "13.0", "nvcc")),
        ("systemd default PATH finds /usr/local/bin/nvcc", {}, ("/usr/local", "PATH", "13.0", "nvcc")),
        ("nothing but /usr/local/cuda", {"PATH": BASE_PATH}, ("/usr/local/cuda", "default", "13.0", "nvcc")),
        ("nvcc not executable", {"CUDA_HOME": str(t / "noexec"), "PATH": BASE_PATH}, "PermissionError"),
        ("home without nvcc and a CPU torch", {"CUDA_HOME": str(t), "PATH": BASE_PATH}, "RuntimeError"),
    ]


CASE_NAMES = [c[0] for c in _cases(Path("/x"))]


ARCH_CASES = [
    # FLASHINFER_CUDA_ARCH_LIST, toolkit, expected archs or the import error
    ("12.0a", "12.8", ["120a"], None),
    ("12.0", "12.8", ["120a"], None),
    ("12.0", "13.0", ["120f"], None),
    ("9.0a 12.0a", "13.0", ["90a", "120a"], None),
    ("12.1", "12.8", None, "RuntimeError"),
    ("12.0,9.0", "13.0", None, "ValueError"),
    ("sm_120", "13.0", None, "ValueError"),
]


def _arch_env(tree, arch_list, home):
    cuda_home = str(tree / "cuda-12.8") if home == "12.8" else REAL_13
    return {"CUDA_HOME": cuda_home, "PATH": BASE_PATH, "FLASHINFER_CUDA_ARCH_LIST": arch_list}


@pytest.fixture(scope="module")
def answers(oracle_venv, tree, tmp_path_factory):
    """cuda_facts with its probe for every case below, each its own module run (its own FlashInfer import in the
    oracle venv), all in one ansible-playbook run: {case: result}."""
    calls = {}
    for name, env, _want in _cases(tree):
        calls["lookup", name] = {"venv": oracle_venv, "probe": True, "environment": env, "nvidia_smi": NVIDIA_SMI_DOUBLE}
    for arch_list, home, _archs, _error in ARCH_CASES:
        calls["arch", arch_list, home] = {"venv": oracle_venv, "probe": True, "environment": _arch_env(tree, arch_list, home), "nvidia_smi": NVIDIA_SMI_DOUBLE}
    # predicting for another FlashInfer version than the venv holds
    env = {"CUDA_HOME": str(tree / "cuda-12.8"), "PATH": BASE_PATH, "FLASHINFER_CUDA_ARCH_LIST": "12.0"}
    calls["disagreement"] = {"venv": oracle_venv, "probe": True, "environment": env, "nvidia_smi": NVIDIA_SMI_DOUBLE, "flashinfer_version": "0.7.0"}
    results = ansible_module_calls("cuda_facts", list(calls.values()), tmp_path_factory.mktemp("oracle"))
    return dict(zip(calls, results))


@pytest.mark.parametrize("name", CASE_NAMES)
def test_lookup_agrees(answers, tree, name):
    want = next(c[2] for c in _cases(tree) if c[0] == name)
    res = answers["lookup", name]
    assert not res.get("failed"), res.get("msg")
    facts = res["ansible_facts"]["blackwell_cuda"]
    fi, probe = facts["flashinfer"], facts["probe"]
    assert fi["version"] == "0.7.2.post1" and len(facts["gpus"]) == 8
    if isinstance(want, tuple):
        got = (fi["cuda_home"], fi["cuda_home_source"], fi["cuda_version"], fi["cuda_version_source"])
        assert got == want
        assert (probe["cuda_home"], probe["cuda_version"]) == (want[0], want[2])
    else:
        assert fi["error_kind"] == want and probe["error_kind"] == want
    assert probe["agrees"], probe["differences"]


@pytest.mark.parametrize("arch_list,home,archs,error_kind", ARCH_CASES)
def test_arch_list_agrees(answers, arch_list, home, archs, error_kind):
    res = answers["arch", arch_list, home]
    facts = res["ansible_facts"]["blackwell_cuda"]
    fi, probe = facts["flashinfer"], facts["probe"]
    assert probe["archs_compared"] is True
    if archs is not None:
        assert fi["target_archs"] == archs and probe["target_archs"] == archs
    else:
        assert fi["error_stage"] == "import" and fi["error_kind"] == error_kind
        assert probe["error_stage"] == "import" and probe["error_kind"] == error_kind
    assert probe["agrees"], probe["differences"]


def test_probe_reports_disagreement(answers):
    """The comparison can fail: predicting for another FlashInfer version than the venv holds."""
    res = answers["disagreement"]
    probe = res["ansible_facts"]["blackwell_cuda"]["probe"]
    assert probe["agrees"] is False
    assert "import" in probe["differences"][0]
