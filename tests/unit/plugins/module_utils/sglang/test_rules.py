"""SGLang's layer over FlashInfer's inputs, by version: tables from the set_cuda_arch() of the real wheels
(sglang/srt/utils/common.py; srt/utils.py before 0.5.3), and the workspace each import order lands in."""

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.common import commands
from ansible_collections.blackwell.inference.plugins.module_utils.flashinfer import rules as flashinfer_rules
from ansible_collections.blackwell.inference.plugins.module_utils.sglang import rules as sglang_rules

# the body of set_cuda_arch() as the wheels have it (quoted, not run): which variable each version writes
SET_CUDA_ARCH = {
    "0.4.10": "os.environ[\"TORCH_CUDA_ARCH_LIST\"] = f\"{arch}{'+PTX' if arch == '9.0' else ''}\"",
    "0.5.1": "os.environ[\"TORCH_CUDA_ARCH_LIST\"] = f\"{arch}{'+PTX' if arch == '9.0' else ''}\"",
    "0.5.4": "os.environ[\"TORCH_CUDA_ARCH_LIST\"] = f\"{arch}{'+PTX' if arch == '9.0' else ''}\"",
    "0.5.5": "os.environ[\"FLASHINFER_CUDA_ARCH_LIST\"] = (f\"{arch}{'a' if capability[0] >= 9 else ''}\")",
    "0.5.9": "os.environ[\"FLASHINFER_CUDA_ARCH_LIST\"] = (f\"{arch}{'a' if capability[0] >= 9 else ''}\")",
    "0.5.10": "os.environ[\"FLASHINFER_CUDA_ARCH_LIST\"] = (f\"{arch}{'a' if capability[0] >= 9 else ''}\")",
    "0.5.23": "os.environ[\"FLASHINFER_CUDA_ARCH_LIST\"] = (f\"{arch}{'a' if capability[0] >= 9 else ''}\")",
}


@pytest.mark.parametrize("version, body", sorted(SET_CUDA_ARCH.items()))
def test_the_variable_each_read_version_writes(version, body):
    var, note = sglang_rules.sets(version)
    assert var in body and note is None


@pytest.mark.parametrize(
    "version, var, note",
    [
        ("0.5.23.post1", "FLASHINFER_CUDA_ARCH_LIST", None),
        ("0.5.24", "FLASHINFER_CUDA_ARCH_LIST", "newer than 0.5.23"),
        ("0.4.4", None, "predates set_cuda_arch"),
        # read in the wheels (tests/integration/test_sglang_wheels.py): the switch came in a post release
        ("0.4.9", "TORCH_CUDA_ARCH_LIST", None),
        ("0.5.4.post2", "TORCH_CUDA_ARCH_LIST", None),
        ("0.5.4.post3", "FLASHINFER_CUDA_ARCH_LIST", None),
        ("main", None, "not a version"),
    ],
)
def test_versions_outside_the_table(version, var, note):
    got, got_note = sglang_rules.sets(version)
    assert got == var and (note in got_note if note else got_note is None)


@pytest.mark.parametrize("cc, value", [("12.0", "12.0a"), ("10.0", "10.0a"), ("9.0", "9.0a"), ("8.9", "8.9"), ("8.0", "8.0"), ("12.1", "12.1a")])
def test_worker_arch_list_as_set_cuda_arch_computes_it(cc, value):
    assert sglang_rules.worker_arch_list(cc) == value


def test_a_capability_that_is_not_major_minor_is_refused():
    with pytest.raises(ValueError, match=r"MAJOR\.MINOR"):
        sglang_rules.worker_arch_list("sm_120")


def _predict(nvcc_version="13.0", fi="0.7.4"):
    banner = "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release %s, V%s.88\n" % (nvcc_version, nvcc_version)

    def run(argv, **_kw):
        return commands.CommandResult(argv, rc=0, stdout=banner)

    def predict(env, ccs):
        return flashinfer_rules.predict(env, run, fi, None, ccs, exists=lambda p: True)

    return predict


UNIT = {"CUDA_HOME": "/usr/local/cuda-13.0", "PATH": "/usr/local/cuda-13.0/bin:/usr/bin", "FLASHINFER_WORKSPACE_BASE": "/var/cache/sglang/jit/v1"}


def test_ct200_unit_12_0f_and_sglang_12_0a_land_in_two_workspaces():
    """ct200 after a converge without this model: the unit says 12.0f, SGLang's workers say 12.0a."""
    predict = _predict()
    env = dict(UNIT, FLASHINFER_CUDA_ARCH_LIST="12.0f")
    unit = predict(env, ["12.0"] * 8)
    assert unit["cache_dir"] == "/var/cache/sglang/jit/v1/.cache/flashinfer/0.7.4/120f"
    res = sglang_rules.layer("0.5.23", env, ["12.0"] * 8, unit, predict)
    (worker,) = res["workers"]
    assert worker["arch_list"] == "12.0a" and worker["target_archs"] == ["120a"] and worker["accepted"]
    assert worker["cache_dir"] == "/var/cache/sglang/jit/v1/.cache/flashinfer/0.7.4/120a" and not worker["same_workspace"]
    assert res["arch_list"] == "12.0a" and res["orders_agree"] is False


def test_unit_written_with_sglangs_value_lands_both_orders_in_one_workspace():
    predict = _predict()
    env = dict(UNIT, FLASHINFER_CUDA_ARCH_LIST="12.0a")
    res = sglang_rules.layer("0.5.23", env, ["12.0", "12.0"], predict(env, ["12.0", "12.0"]), predict)
    assert res["orders_agree"] is True and [w["same_workspace"] for w in res["workers"]] == [True]


def test_mixed_host_gets_no_single_list():
    predict = _predict()
    env = dict(UNIT)
    res = sglang_rules.layer("0.5.23", env, ["9.0", "12.0"], predict(env, ["9.0", "12.0"]), predict)
    assert [w["arch_list"] for w in res["workers"]] == ["12.0a", "9.0a"] and res["arch_list"] is None
    assert "no one unit environment matches every worker" in res["notes"][0]


def test_old_sglang_and_the_off_switch_leave_flashinfers_list_alone():
    predict = _predict()
    env = dict(UNIT, FLASHINFER_CUDA_ARCH_LIST="12.0f")
    old = sglang_rules.layer("0.5.4", env, ["12.0"], predict(env, ["12.0"]), predict)
    assert old["workers"] == [] and old["arch_list"] is None and old["orders_agree"] and "TORCH_CUDA_ARCH_LIST only" in old["notes"][0]
    off = sglang_rules.layer("0.5.23", dict(env, SGLANG_IS_FLASHINFER_AVAILABLE="false"), ["12.0"], None, predict)
    assert off["workers"] == [] and "is off" in off["notes"][0]


def test_from_0_5_18_sglang_defaults_the_workspace_to_its_cache_dir():
    env = {"CUDA_HOME": "/usr/local/cuda-13.0", "SGLANG_CACHE_DIR": "/var/cache/sglang/sglang"}
    assert sglang_rules.worker_env("0.5.23", env, "12.0")["FLASHINFER_WORKSPACE_BASE"] == "/var/cache/sglang/sglang"
    assert sglang_rules.worker_env("0.5.18", env, "12.0")["FLASHINFER_WORKSPACE_BASE"] == "/var/cache/sglang/sglang"
    assert "FLASHINFER_WORKSPACE_BASE" not in sglang_rules.worker_env("0.5.17", env, "12.0")
    assert sglang_rules.worker_env("0.5.23", dict(env, FLASHINFER_WORKSPACE_BASE="/w"), "12.0")["FLASHINFER_WORKSPACE_BASE"] == "/w"


# Rows checked against SGLang 0.5.23's own code as the lab stand-in runs it (tests/integration/test_cuda_facts_module.py)
@pytest.mark.parametrize(
    "value, on",
    [("true", True), ("1", True), ("TRUE", True), ("True", True), ("false", False), ("0", False), ("", False), ("yes", False), ("on", False), (" true", False)],
)
def test_the_off_switch_reads_as_sglangs_get_bool_env_var(value, on):
    env = {"SGLANG_IS_FLASHINFER_AVAILABLE": value, "FLASHINFER_CUDA_ARCH_LIST": "12.0f"}
    assert (sglang_rules.worker_env("0.5.23", env, "12.0") is not None) is on


@pytest.mark.parametrize(
    "cache_dir, base",
    [(None, "/home/svc/.cache/sglang"), ("~/cache", "/home/svc/cache"), ("~", "/home/svc"), ("/srv/c", "/srv/c"), ("", ""), ("~other/c", "~other/c")],
)
def test_the_workspace_default_expands_the_home_as_sglang_does(cache_dir, base):
    env = {"HOME": "/home/svc"} if cache_dir is None else {"HOME": "/home/svc", "SGLANG_CACHE_DIR": cache_dir}
    assert sglang_rules.worker_env("0.5.23", env, "12.0")["FLASHINFER_WORKSPACE_BASE"] == base


@pytest.mark.parametrize(
    "own, sglang, override, want, error",
    [
        ("12.0f", {"version": "0.5.23", "arch_list": "12.0a"}, "", "12.0a", None),  # SGLang's value wins
        ("12.0f", None, "", "12.0f", None),  # no SGLang in the venv: FlashInfer's own
        ("12.0f", {"version": "0.5.4", "arch_list": None}, "", "12.0f", None),
        ("12.0f", {"version": "0.5.23", "arch_list": "12.0a"}, "12.0a", "12.0a", None),
        ("12.0f", {"version": "0.5.23", "arch_list": "12.0a"}, "12.0f", None, "sglang_service_arch_list='12.0f' disagrees with SGLang 0.5.23"),
        ("12.0f", None, "12.0f", "12.0f", None),
        (
            "12.0f",
            {"version": "0.5.23", "arch_list": "12.0a", "workers": [{"compute_capability": "12.0", "accepted": False, "error": "no nvcc"}]},
            "",
            None,
            "would not accept FLASHINFER_CUDA_ARCH_LIST='12.0a': CC 12.0: no nvcc",
        ),
    ],
)
def test_service_arch_list(own, sglang, override, want, error):
    got, err = sglang_rules.service_arch_list(own, sglang, override)
    assert got == want and ((error in err) if error else err is None)


def _workers(*ccs):
    return [{"compute_capability": cc, "arch_list": sglang_rules.worker_arch_list(cc), "accepted": True} for cc in ccs]


MIXED = (
    "one SGLang 0.5.23 service over GPUs of CC 9.0 and 12.0: its set_cuda_arch() sets FLASHINFER_CUDA_ARCH_LIST=9.0a on CC 9.0 and "
    "12.0a on CC 12.0 in its workers. "
)


# A mixed host: SGLang's workers set one list per GPU kind, so no one unit list lands every worker in the warmed
# workspace; refused (an override cannot help), the fix named: one service per GPU kind (CUDA_VISIBLE_DEVICES)
@pytest.mark.parametrize(
    "sglang, override, want, error",
    [
        ({"version": "0.5.23", "arch_list": "12.0a", "workers": _workers("12.0")}, "", "12.0a", None),  # one kind
        ({"version": "0.5.23", "arch_list": None, "workers": _workers("12.0", "9.0")}, "", None, MIXED),
        ({"version": "0.5.23", "arch_list": None, "workers": _workers("9.0", "12.0")}, "9.0a 12.0a", None, MIXED),  # no override fits
        ({"version": "0.5.23", "arch_list": None, "workers": _workers("12.0", "9.0")}, "12.0a", None, MIXED),
        (
            {"version": "0.5.23", "arch_list": None, "workers": _workers("12.0", "8.9", "9.0")},
            "",
            None,
            "one SGLang 0.5.23 service over GPUs of CC 8.9 and 9.0 and 12.0: its set_cuda_arch() sets FLASHINFER_CUDA_ARCH_LIST=8.9 on CC 8.9 and "
            "9.0a on CC 9.0 and 12.0a on CC 12.0 in its workers",
        ),
        ({"version": "0.5.4", "arch_list": None, "workers": []}, "", "9.0a 12.0f", None),  # TORCH_CUDA_ARCH_LIST only: FlashInfer's own holds
        ({"version": "0.5.23", "arch_list": None, "workers": []}, "", "9.0a 12.0f", None),  # SGLANG_IS_FLASHINFER_AVAILABLE off
        (None, "", "9.0a 12.0f", None),  # no SGLang in the venv
    ],
)
def test_a_mixed_host_is_refused_and_names_one_service_per_gpu_kind(sglang, override, want, error):
    got, err = sglang_rules.service_arch_list("9.0a 12.0f", sglang, override)
    assert got == want and (err.startswith(error) if error else err is None), err
    if error:
        assert "CUDA_VISIBLE_DEVICES in sglang_service_environment" in err and "sglang_service_extra_services[].gpus" in err
        assert "sglang_service_arch_list" in err and "compile FlashInfer's sampling module cold" in err


def test_a_mixed_host_from_the_layer_is_refused_before_any_list_is_chosen():
    """The layer's own answer for CC 9.0 + 12.0 (the lab's mixed double): two workers, two lists, refused."""
    predict = _predict()
    env = dict(UNIT)
    res = sglang_rules.layer("0.5.23", env, ["12.0"] * 4 + ["9.0"] * 4, predict(env, ["12.0", "9.0"]), predict)
    assert sglang_rules.mixed_refusal(res).startswith(MIXED)
    assert sglang_rules.service_arch_list("9.0a 12.0f", res) == (None, sglang_rules.mixed_refusal(res))
    one = sglang_rules.layer("0.5.23", env, ["12.0"] * 4, predict(env, ["12.0"]), predict)
    assert sglang_rules.mixed_refusal(one) == "" and sglang_rules.service_arch_list("12.0f", one) == ("12.0a", None)
