"""FlashInfer's lookup order and arch gates, row by row (docs: flashinfer-facts.md §1-§2)."""

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.flashinfer import rules as fr

from ..fakehost import FAILS, NOT_EXECUTABLE, NVCC_12_8, NVCC_13_0, FakeHost, toolkit

SYSTEMD_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
E129 = "SM 12.x requires CUDA >= 12.9"
E120 = "SM 120 requires CUDA >= 12.8"
E121 = "SM 12.1+ requires CUDA >= 12.9"

# Expected arch (cache-dir spelling) or gate error, per rule band, CC and CUDA version.
# Source: flashinfer/compilation_context.py _normalize_cuda_arch in each band's wheels.
EXPECTED = {
    "0.6.6": {
        "9.0": {"12.8": "90a", "12.9": "90a", "13.0": "90a"},
        "10.0": {"12.8": "100a", "12.9": "100a", "13.0": "100a"},
        "10.3": {"12.8": "103a", "12.9": "103a", "13.0": "103a"},
        "12.0": {"12.8": "120a", "12.9": "120a", "13.0": "120a"},
        "12.1": {"12.8": "121a", "12.9": "121a", "13.0": "121a"},
    },
    "0.6.7": {
        "9.0": {"12.8": "90a", "12.9": "90a", "13.0": "90a"},
        "10.0": {"12.8": "100a", "12.9": "100a", "13.0": "100a"},
        "10.3": {"12.8": "103a", "12.9": "103a", "13.0": "103a"},
        "12.0": {"12.8": E129, "12.9": "120f", "13.0": "120f"},
        "12.1": {"12.8": E129, "12.9": "120f", "13.0": "120f"},
    },
    "0.6.8": {
        "9.0": {"12.8": "90a", "12.9": "90a", "13.0": "90a"},
        "10.0": {"12.8": "100a", "12.9": "100a", "13.0": "100a"},
        "10.3": {"12.8": "103a", "12.9": "103a", "13.0": "103a"},
        "12.0": {"12.8": E129, "12.9": "120f", "13.0": "120f"},
        "12.1": {"12.8": E129, "12.9": "121a", "13.0": "121a"},
    },
    "0.7.1": {
        "9.0": {"12.8": "90a", "12.9": "90a", "13.0": "90a"},
        "10.0": {"12.8": "100a", "12.9": "100a", "13.0": "100a"},
        "10.3": {"12.8": "103a", "12.9": "103a", "13.0": "103a"},
        "12.0": {"12.8": "120a", "12.9": "120f", "13.0": "120f"},
        "12.1": {"12.8": E121, "12.9": "121a", "13.0": "121a"},
    },
}
# Every released version the rows apply to, mapped to its band's expectations.
VERSIONS = {
    "0.4.0": "0.6.6",
    "0.5.3": "0.6.6",
    "0.6.6": "0.6.6",
    "0.6.7": "0.6.7",
    "0.6.7.post2": "0.6.7",
    "0.6.7.post3": "0.6.7",
    "0.6.8": "0.6.8",
    "0.6.11": "0.6.8",
    "0.6.18.post1": "0.6.8",
    "0.7.0": "0.6.8",
    "0.7.0.post1": "0.6.8",
    "0.7.1": "0.7.1",
    "0.7.2.post1": "0.7.1",
    "0.7.4": "0.7.1",
}
ROWS = [
    (ver, cuda, cc, EXPECTED[band][cc][cuda])
    for ver, band in VERSIONS.items()
    for cc in ("9.0", "10.0", "10.3", "12.0", "12.1")
    for cuda in ("12.8", "12.9", "13.0")
]
BANNERS = {"12.8": NVCC_12_8, "12.9": NVCC_12_8.replace("12.8", "12.9"), "13.0": NVCC_13_0}


@pytest.mark.parametrize("version,cuda,cc,expected", ROWS)
def test_detection_table(version, cuda, cc, expected):
    host = FakeHost(files={"/opt/cuda/bin/nvcc": BANNERS[cuda]})
    res = fr.predict({"CUDA_HOME": "/opt/cuda", "PATH": SYSTEMD_PATH}, host, version, None, [cc], exists=host.exists)
    assert res["cuda_version"] == cuda and res["cuda_version_source"] == "nvcc"
    if expected.startswith("SM "):
        assert res["error"] == expected
        assert res["error_stage"] == "detection"
        assert res["target_archs"] == []
        assert res["symptom"].startswith(fr.MSG_SM75)
        assert res["accepted"] is False
    else:
        assert res["error"] is None, res
        assert res["target_archs"] == [expected]
        assert res["accepted"] is True
        versioned = "" if version == "0.4.0" else version + "/"  # 0.4.0's cache path has no version part
        assert res["cache_dir"] == "/root/.cache/flashinfer/%s%s" % (versioned, expected)


@pytest.mark.parametrize(
    "name,env,host,version,torch_cuda,want",
    [
        (
            "CUDA_HOME wins",
            {"CUDA_HOME": "/usr/local/cuda-13.0", "CUDA_PATH": "/usr/local/cuda-12.8"},
            FakeHost(files={**toolkit("13.0"), **toolkit("12.8")}),
            "0.7.2.post1",
            None,
            ("/usr/local/cuda-13.0", "CUDA_HOME", "13.0", "nvcc"),
        ),
        (
            "CUDA_PATH only",
            {"CUDA_PATH": "/usr/local/cuda-12.8"},
            FakeHost(files=toolkit("12.8")),
            "0.7.2.post1",
            None,
            ("/usr/local/cuda-12.8", "CUDA_PATH", "12.8", "nvcc"),
        ),
        (
            "empty CUDA_HOME falls through to CUDA_PATH",
            {"CUDA_HOME": "", "CUDA_PATH": "/usr/local/cuda-13.0"},
            FakeHost(files=toolkit("13.0")),
            "0.7.2.post1",
            None,
            ("/usr/local/cuda-13.0", "CUDA_PATH", "13.0", "nvcc"),
        ),
        (
            "empty CUDA_HOME falls through to PATH",
            {"CUDA_HOME": "", "PATH": "/usr/local/cuda-12.8/bin:/usr/bin"},
            FakeHost(files=toolkit("12.8")),
            "0.7.0",
            None,
            ("/usr/local/cuda-12.8", "PATH", "12.8", "nvcc"),
        ),
        (
            "both empty: '' is returned, bin/nvcc is not found, torch fallback",
            {"CUDA_HOME": "", "CUDA_PATH": "", "PATH": "/usr/local/cuda-13.0/bin"},
            FakeHost(files=toolkit("13.0")),
            "0.7.2.post1",
            "13.0",
            ("", "CUDA_PATH", "13.0", "torch"),
        ),
        (
            "wrapper nvcc in /usr/local/bin gives home /usr/local",
            {"PATH": SYSTEMD_PATH},
            FakeHost(files={"/usr/local/bin/nvcc": NVCC_13_0}),
            "0.7.2.post1",
            None,
            ("/usr/local", "PATH", "13.0", "nvcc"),
        ),
        (
            "first nvcc on PATH wins (the incident)",
            {"PATH": "/usr/local/cuda-12.8/bin:/usr/local/cuda-13.0/bin:/usr/bin"},
            FakeHost(files={**toolkit("12.8"), **toolkit("13.0")}),
            "0.7.0",
            None,
            ("/usr/local/cuda-12.8", "PATH", "12.8", "nvcc"),
        ),
        (
            "nothing on PATH: /usr/local/cuda default (0.5.0+)",
            {"PATH": "/usr/bin"},
            FakeHost(files={"/usr/local/cuda/bin/nvcc": NVCC_12_8}, dirs={"/usr/local/cuda"}),
            "0.6.6",
            None,
            ("/usr/local/cuda", "default", "12.8", "nvcc"),
        ),
        (
            "0.4.x has no default: 'Could not find nvcc' -> torch",
            {"PATH": "/usr/bin"},
            FakeHost(files={"/usr/local/cuda/bin/nvcc": NVCC_12_8}, dirs={"/usr/local/cuda"}),
            "0.4.1",
            "12.8",
            (None, None, "12.8", "torch"),
        ),
        ("no nvcc, no default, torch cu130", {"PATH": "/usr/bin"}, FakeHost(), "0.7.2.post1", "13.0", (None, None, "13.0", "torch")),
        (
            "nvcc exits non-zero -> torch",
            {"CUDA_HOME": "/opt/cuda"},
            FakeHost(files={"/opt/cuda/bin/nvcc": FAILS}),
            "0.7.2.post1",
            "12.9",
            ("/opt/cuda", "CUDA_HOME", "12.9", "torch"),
        ),
        (
            "banner without release -> torch",
            {"CUDA_HOME": "/opt/cuda"},
            FakeHost(files={"/opt/cuda/bin/nvcc": "nvcc wrapper 1.0\n"}),
            "0.7.2.post1",
            "13.0",
            ("/opt/cuda", "CUDA_HOME", "13.0", "torch"),
        ),
        (
            "first 'release X.Y,' match wins",
            {"CUDA_HOME": "/opt/cuda"},
            FakeHost(files={"/opt/cuda/bin/nvcc": NVCC_12_8 + NVCC_13_0}),
            "0.7.2.post1",
            None,
            ("/opt/cuda", "CUDA_HOME", "12.8", "nvcc"),
        ),
        (
            "`which` itself missing -> FileNotFoundError caught -> torch",
            {"PATH": "/nowhere"},
            FakeHost(has_which=False),
            "0.7.2.post1",
            "13.0",
            (None, None, "13.0", "torch"),
        ),
    ],
)
def test_cuda_lookup(name, env, host, version, torch_cuda, want):
    env = dict(env)
    res = fr.resolve_cuda_version(env, host, version, torch_cuda, exists=host.exists)
    got = (res["cuda_home"], res["cuda_home_source"], res["cuda_version"], res["cuda_version_source"])
    assert got == want, name


@pytest.mark.parametrize(
    "name,host,torch_cuda,kind,message",
    [
        (
            "nvcc not executable: PermissionError is not caught",
            FakeHost(files={"/opt/cuda/bin/nvcc": NOT_EXECUTABLE}),
            "13.0",
            "PermissionError",
            "Permission denied",
        ),
        ("no nvcc and a CPU torch", FakeHost(), None, "RuntimeError", fr.MSG_NO_TORCH_CUDA),
    ],
)
def test_cuda_lookup_errors(name, host, torch_cuda, kind, message):
    with pytest.raises(fr.FlashInferError) as err:
        fr.resolve_cuda_version({"CUDA_HOME": "/opt/cuda"}, host, "0.7.2.post1", torch_cuda, exists=host.exists)
    assert err.value.kind == kind and message in err.value.message, name


@pytest.mark.parametrize(
    "version,cuda,arch_list,ccs,archs,error,stage",
    [
        # suffixed entries are taken verbatim, with no CUDA check
        ("0.7.0", "12.8", "12.0a", ["12.0"], ["120a"], None, None),
        ("0.7.0", "12.8", "12.0f", ["12.0"], ["120f"], None, None),
        ("0.6.7", "13.0", "9.0a 12.0a", ["9.0", "12.0"], ["90a", "120a"], None, None),
        # a bare 12.0 is verbatim before 0.6.7 ...
        ("0.6.6", "12.8", "12.0", ["12.0"], ["120"], None, None),
        # ... and gated from 0.6.7 on, at import
        ("0.7.0", "12.8", "12.0", ["12.0"], [], E129, "import"),
        ("0.7.1", "12.8", "12.0", ["12.0"], ["120a"], None, None),
        ("0.7.2.post1", "13.0", "12.0", ["12.0"], ["120f"], None, None),
        ("0.7.2.post1", "12.8", "12.1", ["12.1"], [], E121, "import"),
        ("0.7.4", "12.0", "12.0", ["12.0"], [], E120, "import"),
        # malformed lists raise at import
        ("0.7.2.post1", "13.0", "12.0,9.0", ["12.0"], [], "too many values to unpack", "import"),
        ("0.7.2.post1", "13.0", "12.0a  9.0a", ["12.0"], [], "not enough values to unpack", "import"),
        ("0.7.2.post1", "13.0", " 12.0a", ["12.0"], [], "not enough values to unpack", "import"),
        ("0.7.2.post1", "13.0", "12.0a ", ["12.0"], [], "not enough values to unpack", "import"),
        ("0.7.2.post1", "13.0", "sm_120", ["12.0"], [], "not enough values to unpack", "import"),
        ("0.7.2.post1", "13.0", "120", ["12.0"], [], "not enough values to unpack", "import"),
        ("0.7.2.post1", "13.0", "", ["12.0"], [], "not enough values to unpack", "import"),
        ("0.7.2.post1", "13.0", "sm.120", ["12.0"], [], "invalid literal for int()", "import"),
        ("0.7.2.post1", "13.0", "12.", ["12.0"], [], "string index out of range", "import"),
        # the list is what counts: a GPU it leaves out is not covered
        ("0.7.2.post1", "13.0", "12.0a", ["9.0", "12.0"], ["120a"], "no target arch covers GPU compute capability 9.0", "first_jit"),
        # 120a is arch-specific: it does not run on 12.1; 120f (family) does
        ("0.7.2.post1", "13.0", "12.0a", ["12.1"], ["120a"], "no target arch covers GPU compute capability 12.1", "first_jit"),
        ("0.7.2.post1", "13.0", "12.0f", ["12.1"], ["120f"], None, None),
    ],
)
def test_arch_list(version, cuda, arch_list, ccs, archs, error, stage):
    host = FakeHost(files={"/opt/cuda/bin/nvcc": BANNERS.get(cuda, NVCC_12_8.replace("12.8", cuda))})
    env = {"CUDA_HOME": "/opt/cuda", "FLASHINFER_CUDA_ARCH_LIST": arch_list}
    res = fr.predict(env, host, version, None, ccs, exists=host.exists)
    assert res["target_archs"] == archs
    if error is None:
        assert res["error"] is None and res["accepted"] is True
    else:
        assert error in res["error"] and res["error_stage"] == stage and res["accepted"] is False


def test_incident_ct200():
    """The seeds' incident: sglang-k26 with flashinfer 0.7.0, PATH puts CUDA 12.8 first."""
    host = FakeHost(files={**toolkit("12.8"), **toolkit("13.0")}, dirs={"/usr/local/cuda"})
    env = {"PATH": "/usr/local/cuda-12.8/bin:" + SYSTEMD_PATH}
    res = fr.predict(env, host, "0.7.0", "12.8", ["12.0"] * 8, exists=host.exists)
    assert res["cuda_home"] == "/usr/local/cuda-12.8" and res["cuda_version"] == "12.8"
    assert res["error"] == E129 and res["error_stage"] == "detection" and not res["accepted"]
    assert res["symptom"] == "FlashInfer requires GPUs with sm75 or higher"  # 0.7.1+ appends the detected set
    # the fix: CUDA 13.0 first and the arch pinned
    env = {
        "CUDA_HOME": "/usr/local/cuda-13.0",
        "PATH": "/usr/local/cuda-13.0/bin:" + SYSTEMD_PATH,
        "FLASHINFER_CUDA_ARCH_LIST": "12.0a",
        "FLASHINFER_WORKSPACE_BASE": "/var/cache/sglang",
    }
    res = fr.predict(env, host, "0.7.0", "12.8", ["12.0"] * 8, exists=host.exists)
    assert res["accepted"] and res["target_archs"] == ["120a"] and res["cuda_version"] == "13.0"
    assert res["cache_dir"] == "/var/cache/sglang/.cache/flashinfer/0.7.0/120a"


def test_mixed_fleet_detection_stops_at_first_gate_error():
    """GPU detection adds archs in device order and stops at the first exception (only logged)."""
    host = FakeHost(files=toolkit("12.8"))
    res = fr.predict({"CUDA_HOME": "/usr/local/cuda-12.8"}, host, "0.7.0", None, ["9.0", "12.0"], exists=host.exists)
    assert res["target_archs"] == ["90a"] and res["error"] == E129 and res["error_stage"] == "detection"
    assert res["symptom"] is None  # 90a is eligible, so no sm75 message; GPU 12.0 just has no kernels


def test_permission_error_in_detection_is_swallowed_but_reported():
    host = FakeHost(files={"/opt/cuda/bin/nvcc": NOT_EXECUTABLE})
    res = fr.predict({"CUDA_HOME": "/opt/cuda"}, host, "0.7.2.post1", "13.0", ["12.0"], exists=host.exists)
    assert res["error_kind"] == "PermissionError" and res["target_archs"] == [] and not res["accepted"]


def test_legacy_band_needs_no_cuda_version():
    """0.6.6 never asks for the CUDA version when choosing archs, so a PermissionError only hits the first JIT."""
    host = FakeHost(files={"/opt/cuda/bin/nvcc": NOT_EXECUTABLE})
    res = fr.predict({"CUDA_HOME": "/opt/cuda"}, host, "0.6.6", "13.0", ["12.0"], exists=host.exists)
    assert res["target_archs"] == ["120a"] and res["error_kind"] == "PermissionError" and res["error_stage"] == "first_jit"


def test_visible_devices():
    gpus = [{"index": 0, "uuid": "GPU-aaa", "compute_capability": "9.0"}, {"index": 1, "uuid": "GPU-bbb", "compute_capability": "12.0"}]
    assert fr.visible_ccs(gpus, {}) == ["9.0", "12.0"]
    assert fr.visible_ccs(gpus, {"CUDA_VISIBLE_DEVICES": "1"}) == ["12.0"]
    assert fr.visible_ccs(gpus, {"CUDA_VISIBLE_DEVICES": "GPU-bbb,0"}) == ["12.0", "9.0"]
    assert fr.visible_ccs(gpus, {"CUDA_VISIBLE_DEVICES": "1,7,0"}) == ["12.0"]
    assert fr.visible_ccs(gpus, {"CUDA_VISIBLE_DEVICES": ""}) == []


@pytest.mark.parametrize(
    "version,band",
    [
        ("0.3.1", None),
        ("0.4.0", fr.BAND_LEGACY),
        ("0.6.6", fr.BAND_LEGACY),
        ("0.6.7.post2", fr.BAND_067),
        ("0.6.8", fr.BAND_STRICT),
        ("0.7.0.post1", fr.BAND_STRICT),
        ("0.7.1", fr.BAND_CURRENT),
        ("0.9.0", fr.BAND_CURRENT),
        ("garbage", None),
    ],
)
def test_bands(version, band):
    assert fr.arch_band(version) == band


def test_unmodelled_and_future_versions():
    host = FakeHost(files=toolkit("13.0"))
    env = {"CUDA_HOME": "/usr/local/cuda-13.0"}
    old = fr.predict(env, host, "0.3.1", None, ["12.0"], exists=host.exists)
    assert old["error_stage"] == "version" and not old["accepted"]
    new = fr.predict(env, host, "0.8.0", None, ["12.0"], exists=host.exists)
    assert new["accepted"] and new["target_archs"] == ["120f"] and "newer than 0.7.4" in new["notes"][0]


@pytest.mark.parametrize(
    "env,version,archs,want",
    [
        ({"HOME": "/home/sglang"}, "0.7.2.post1", {(12, "0a")}, "/home/sglang/.cache/flashinfer/0.7.2.post1/120a"),
        ({"FLASHINFER_WORKSPACE_BASE": "/var/cache/sglang"}, "0.7.0", {(9, "0a"), (12, "0f")}, "/var/cache/sglang/.cache/flashinfer/0.7.0/90a_120f"),
        ({}, "0.7.2.post1", set(), "/root/.cache/flashinfer/0.7.2.post1"),  # pathlib drops the empty part
        ({"FLASHINFER_WORKSPACE_BASE": ""}, "0.7.2.post1", {(12, "0a")}, ".cache/flashinfer/0.7.2.post1/120a"),
        ({}, "0.4.0", {(12, "0a")}, "/root/.cache/flashinfer/120a"),
    ],
)
def test_cache_dir(env, version, archs, want):
    assert fr.cache_dir(env, version, archs, "/root") == want


def test_sm75_message_per_version():
    host = FakeHost(files=toolkit("12.8"))
    env = {"CUDA_HOME": "/usr/local/cuda-12.8"}
    new = fr.predict(env, host, "0.7.4", None, ["12.1"], exists=host.exists)
    assert new["symptom"] == "FlashInfer requires GPUs with sm75 or higher. Detected TARGET_CUDA_ARCHS=[]."
    assert new["error"] == E121


def test_secrets_stay_off_the_lookup_commands():
    """`which nvcc` and `nvcc --version` get only the command-line part of the service environment."""
    host = FakeHost(files=toolkit("13.0"))
    env = {"PATH": "/usr/local/cuda-13.0/bin:/usr/bin", "HF_TOKEN": "hf_secret", "SGLANG_API_KEY": "k", "LD_LIBRARY_PATH": "/opt/x"}
    res = fr.predict(env, host, "0.7.2.post1", None, ["12.0"], exists=host.exists)
    assert res["cuda_version"] == "13.0" and len(host.envs) == 2
    for seen in host.envs:
        assert "HF_TOKEN" not in seen and "SGLANG_API_KEY" not in seen
        assert seen["PATH"] == env["PATH"] and seen["LD_LIBRARY_PATH"] == "/opt/x"
