"""Every FlashInfer service on the host: `systemctl show` of every loaded service (captured from systemd 252 on the
converged lab host, Debian 12, with a forgotten second deployment added), the venvs found, the verdicts."""

import os

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.service import census as sc

with open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "systemctl-show-services.txt"), encoding="utf-8") as _fh:
    SHOW = _fh.read()

VENVS = {
    "/root/venv_sglang211": {"path": "/root/venv_sglang211", "packages": {"flashinfer-python": "0.7.0"}},
    "/opt/sglang/current": {"path": "/opt/sglang/current", "packages": {"flashinfer-python": "0.7.4", "sglang": "0.5.23", "torch": "2.13.0+cpu"}},
    "/usr": None,  # /usr/bin/python3: no pyvenv.cfg
    "/usr/local/lib/tools": {"path": "/usr/local/lib/tools", "packages": {"requests": "2.32.3"}},  # a venv without FlashInfer
}

ACCEPTED_120A = {"version": "0.7.4", "accepted": True, "cuda_home": "/usr/local/cuda-13.0", "cuda_version": "13.0", "target_archs": ["120a"]}
REFUSED_128 = {
    "version": "0.7.0",
    "accepted": False,
    "error": "SM 12.x requires CUDA >= 12.9",
    "cuda_home": "/usr/local/cuda",
    "cuda_version": "12.8",
    "target_archs": [],
    "symptom": "FlashInfer requires GPUs with sm75 or higher",
}
SGLANG_OK = {"version": "0.5.23", "orders_agree": True, "workers": [{"compute_capability": "12.0", "target_archs": ["120a"], "accepted": True}]}


def judge(record, venv):
    env, _notes = sc.unit_environment(record, lambda path: "")
    if venv["path"] == "/root/venv_sglang211":
        assert env["PATH"].startswith("/usr/local/cuda/bin:")  # the unit's own environment is judged
        return REFUSED_128, None
    assert env["FLASHINFER_CUDA_ARCH_LIST"] == "12.0f"  # the unit says FlashInfer's own; SGLang's workers move to 12.0a
    return ACCEPTED_120A, SGLANG_OK


def test_records_and_programs():
    records = sc.parse_records(SHOW)
    assert [r["Id"][0] for r in records] == [
        "ssh.service",
        "sglang-eagle3.service",
        "sglang-k26-validate.service",
        "sglang-k26.service",
        "systemd-journald.service",
        "gone.service",
    ]
    assert sc.programs(records[3]["ExecStart"]) == ["/opt/sglang/current/bin/python"]
    assert sc.venv_candidates(records[1]) == ["/root/venv_sglang211"]
    assert sc.venv_candidates(records[0]) == []  # /usr/sbin/sshd
    assert sc.venv_candidates(records[2]) == ["/usr"]  # /usr/bin/python3: a candidate, no pyvenv.cfg there
    assert sc.venv_candidates(records[5]) == []


def test_census_lists_the_flashinfer_services_managed_first():
    rows = sc.census(sc.parse_records(SHOW), "sglang-k26.service", VENVS.get, judge)
    assert [(r["unit"], r["managed"], r["active"], r["accepted"]) for r in rows] == [
        ("sglang-k26.service", True, "active", True),
        ("sglang-eagle3.service", False, "failed", False),
    ]
    k26, eagle = rows
    assert k26["worker_archs"] == ["120a"] and k26["sglang"] == "0.5.23" and k26["error"] is None
    assert eagle["error"] == "SM 12.x requires CUDA >= 12.9" and eagle["cuda_version"] == "12.8" and eagle["venv"] == "/root/venv_sglang211"
    assert eagle["symptom"].startswith("FlashInfer requires GPUs with sm75")


def test_the_units_own_environment_with_systemds_path_when_it_sets_none():
    (journald,) = [r for r in sc.parse_records(SHOW) if r["Id"] == ["systemd-journald.service"]]
    env, notes = sc.unit_environment(journald, lambda path: "")
    assert env == {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"} and notes == []


@pytest.mark.parametrize(
    "flashinfer,sglang,want",
    [
        (ACCEPTED_120A, None, (True, None)),
        (ACCEPTED_120A, SGLANG_OK, (True, None)),
        (REFUSED_128, None, (False, "SM 12.x requires CUDA >= 12.9")),
        # the unit's environment passes, SGLang's rewrite in the worker does not (a CC 12.1 worker with 12.8)
        (
            ACCEPTED_120A,
            {"version": "0.5.23", "workers": [{"compute_capability": "12.1", "accepted": False, "error": "SM 12.1+ requires CUDA >= 12.9"}]},
            (False, "SGLang 0.5.23's worker on CC 12.1: SM 12.1+ requires CUDA >= 12.9"),
        ),
        ({"accepted": False}, None, (False, "not accepted")),
    ],
)
def test_verdict(flashinfer, sglang, want):
    assert sc.verdict(flashinfer, sglang) == want


def test_a_unit_with_the_roles_drop_in_is_the_roles_too_after_the_named_one():
    # a further service of the role (sglang_service_extra_services): its drop-in makes it the role's, the unit named
    # by the caller (the first service) stays first; another drop-in does not
    records = sc.parse_records(SHOW)
    eagle = next(r for r in records if r["Id"] == ["sglang-eagle3.service"])
    eagle["DropInPaths"] = ["/etc/systemd/system/sglang-eagle3.service.d/50-blackwell-inference.conf /etc/systemd/system/sglang-eagle3.service.d/90-x.conf"]
    rows = sc.census(records, "sglang-k26.service", VENVS.get, judge)
    assert [(r["unit"], r["managed"]) for r in rows] == [("sglang-k26.service", True), ("sglang-eagle3.service", True)]
    eagle["DropInPaths"] = ["/etc/systemd/system/sglang-eagle3.service.d/50-other.conf"]
    assert [r["managed"] for r in sc.census(records, "sglang-k26.service", VENVS.get, judge)] == [True, False]


def test_show_argv_asks_every_loaded_service_once():
    argv = sc.show_argv()
    assert argv[:4] == ["systemctl", "show", "--no-pager", "--type=service"] and argv[-2:] == ["--", "*.service"]
    assert "--property=ExecStart" in argv and "--property=Environment" in argv and "--property=DropInPaths" in argv


def _worker(cc, arch_list, same, accepted=True, cache="/var/cache/sglang/jit/x/.cache/flashinfer/0.7.4/120a"):
    return {"compute_capability": cc, "arch_list": arch_list, "accepted": accepted, "same_workspace": same, "cache_dir": cache}


@pytest.mark.parametrize(
    "sglang,want",
    [
        (None, ""),  # no SGLang: FlashInfer's own list holds, the warm-up fills the unit's workspace
        ({"version": "0.5.23", "workers": [_worker("12.0", "12.0a", True)]}, ""),  # the role's environment (12.0a)
        # ct200's unit left at FlashInfer's own 12.0f: its workers move to 120a, which the warm-up never fills
        (
            {"version": "0.5.23", "workers": [_worker("12.0", "12.0a", False)]},
            "SGLang 0.5.23's workers set FLASHINFER_CUDA_ARCH_LIST=12.0a and use JIT workspace "
            "/var/cache/sglang/jit/x/.cache/flashinfer/0.7.4/120a, not the one the unit's environment names",
        ),
        # one service over H100s and RTX PRO 6000s: no unit environment helps, one service per GPU kind
        (
            {"version": "0.5.23", "workers": [_worker("9.0", "9.0a", False), _worker("12.0", "12.0a", True)]},
            "one SGLang 0.5.23 service over GPUs of CC 9.0 and 12.0: its set_cuda_arch() sets FLASHINFER_CUDA_ARCH_LIST=9.0a on CC 9.0",
        ),
        ({"version": "0.5.23", "workers": [_worker("12.1", "12.1a", False, accepted=False)]}, ""),  # refused: the verdict says so
    ],
)
def test_cold_jit_names_why_an_accepted_services_workers_compile_cold(sglang, want):
    got = sc.cold_jit(sglang)
    assert got.startswith(want) if want else got == ""


def test_an_unmanaged_service_over_two_gpu_kinds_is_accepted_but_named_cold():
    mixed = {"version": "0.5.23", "orders_agree": False, "workers": [_worker("9.0", "9.0a", False), _worker("12.0", "12.0a", False)]}
    rows = sc.census(sc.parse_records(SHOW), "sglang-k26.service", VENVS.get, lambda record, venv: (ACCEPTED_120A, mixed))
    assert [(r["unit"], r["accepted"], r["cold_jit"][:34]) for r in rows] == [
        ("sglang-k26.service", True, "one SGLang 0.5.23 service over GPU"),
        ("sglang-eagle3.service", True, "one SGLang 0.5.23 service over GPU"),
    ]
    refused = sc.census(sc.parse_records(SHOW), "sglang-k26.service", VENVS.get, judge)
    assert [r["cold_jit"] for r in refused] == ["", ""]  # SGLANG_OK agrees; the refused 12.8 unit has its error instead
