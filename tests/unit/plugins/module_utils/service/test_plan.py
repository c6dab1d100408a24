"""The service role's plan from one cuda_facts answer. The answers are real cuda_facts output, captured on the dev
machine (the nvidia-smi double's 8x CC 12.0, a venv holding the sglang 0.5.23 wheel, FlashInfer predicted at the
version named, CUDA 13.0's real nvcc or a 12.8 banner)."""

import copy
import json
import os

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.cuda import devices
from ansible_collections.blackwell.inference.plugins.module_utils.service import plan as service_plan

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")
VENV, CACHE = "/opt/sglang/current", "/var/cache/sglang"
CUDA13, CUDA128 = "/usr/local/cuda-13.0", "/usr/local/cuda-12.8"


def facts(name):
    with open(os.path.join(DATA, "cuda_facts-%s.json" % name)) as fh:
        return json.load(fh)


def test_cuda_13_with_sglang_plans_sglangs_list_in_the_venvs_own_workspace():
    got = service_plan.plan(facts("13.0-sglang"), CUDA13, VENV, CACHE, build_log="/var/log/jit.jsonl")
    assert got["error"] is None and got["archs"] == "12.0a" and got["arch_source"] == "sglang"
    env = got["env"]
    assert env["FLASHINFER_CUDA_ARCH_LIST"] == "12.0a" and env["CUDA_HOME"] == CUDA13
    assert env["PATH"].startswith(CUDA13 + "/bin:" + VENV + "/bin:") and env["FLASHINFER_JIT_BUILD_LOG"] == "/var/log/jit.jsonl"
    assert got["venv_target"] == "/tmp/vtest" and env["FLASHINFER_WORKSPACE_BASE"] == CACHE + "/jit/vtest"  # the link's target
    assert got["versions"] == {"sglang": "0.5.23"} and got["toolkit"] == {"cuda_home": CUDA13, "cuda_version": "13.0"}


def test_without_sglang_flashinfers_own_list():
    answer = facts("13.0-sglang")
    answer["sglang"] = None
    got = service_plan.plan(answer, CUDA13, VENV, CACHE)
    assert (got["archs"], got["arch_source"]) == ("12.0f", "flashinfer")


@pytest.mark.parametrize(
    "name, cuda_home, arch_list, check_mode, error",
    [
        # the seeds' FlashInfer with 12.8: refused before any change, with the crash it would cause
        (
            "12.8-flashinfer-0.7.0",
            CUDA128,
            "",
            False,
            "FlashInfer 0.7.0 in /opt/sglang/current would not accept sglang_service_cuda_home=/usr/local/cuda-12.8 (CUDA 12.8 from nvcc) "
            "with sglang_service_arch_list='' for GPUs 12.0: SM 12.x requires CUDA >= 12.9; the service would fail with: FlashInfer "
            "requires GPUs with sm75 or higher",
        ),
        (
            "no-flashinfer",
            CUDA13,
            "",
            False,
            "FlashInfer ? in /opt/sglang/current would not accept sglang_service_cuda_home=/usr/local/cuda-13.0 (CUDA ? from ?) with "
            "sglang_service_arch_list='' for GPUs 12.0: flashinfer-python is not installed in venv=/tmp/vtest (set flashinfer_version to "
            "predict anyway)",
        ),
        # an override SGLang's workers would contradict
        ("13.0-sglang", CUDA13, "12.0f", False, "sglang_service_arch_list='12.0f' disagrees with SGLang 0.5.23"),
        # FlashInfer 0.7.4 takes 12.8 (120a), and SGLang's 12.0a agrees: accepted
        ("12.8-flashinfer-0.7.4", CUDA128, "", False, None),
    ],
)
def test_the_first_refusal_wins(name, cuda_home, arch_list, check_mode, error):
    got = service_plan.plan(facts(name), cuda_home, VENV, CACHE, arch_list, check_mode=check_mode)
    if error is None:
        assert got["error"] is None and got["archs"] == "12.0a", got
    else:
        assert got["error"] is not None and got["error"].startswith(error), got["error"]
        assert set(got) == {"error"}


def _mixed():
    """The captured answer with four CC 9.0 GPUs beside the CC 12.0 ones, as cuda_facts reports a mixed host: FlashInfer's
    own list covers both (9.0a 12.0f), SGLang's workers set 9.0a and 12.0a, no single list."""
    answer = facts("13.0-sglang")
    answer["compute_capabilities"] = ["12.0", "9.0"]
    answer["flashinfer"]["target_archs"] = ["90a", "120f"]
    worker = dict(answer["sglang"]["workers"][0], compute_capability="9.0", arch_list="9.0a", target_archs=["90a"])
    answer["sglang"].update(arch_list=None, workers=[*answer["sglang"]["workers"], worker])
    return answer


@pytest.mark.parametrize("arch_list", ["", "9.0a 12.0f", "12.0a"])
def test_a_mixed_host_is_refused_before_any_change_whatever_the_override(arch_list):
    got = service_plan.plan(_mixed(), CUDA13, VENV, CACHE, arch_list)
    assert set(got) == {"error"} and got["error"].startswith(
        "one SGLang 0.5.23 service over GPUs of CC 9.0 and 12.0: its set_cuda_arch() sets FLASHINFER_CUDA_ARCH_LIST=9.0a on CC 9.0 and "
        "12.0a on CC 12.0 in its workers. Serve each GPU kind by its own service (CUDA_VISIBLE_DEVICES in sglang_service_environment"
    ), got
    choice = service_plan.arch_choice(["90a", "120f"], _mixed()["sglang"], arch_list)
    assert choice["archs"] == "" and choice["error"] == got["error"]


def test_a_check_run_without_the_venv_is_not_refused_for_it():
    answer = facts("no-flashinfer")
    answer["venv"] = None
    assert service_plan.plan(copy.deepcopy(answer), CUDA13, VENV, CACHE, check_mode=True)["error"] is None
    assert service_plan.plan(answer, CUDA13, VENV, CACHE)["error"].startswith("FlashInfer ? in /opt/sglang/current would not accept")


def test_an_environment_that_sets_a_derived_key_is_refused_naming_the_variable():
    with pytest.raises(ValueError, match="sglang_service_environment may not set CUDA_HOME"):
        service_plan.plan(facts("13.0-sglang"), CUDA13, VENV, CACHE, extra={"CUDA_HOME": "/usr/local/cuda"})


UNIT = "/etc/systemd/system/sglang-k26.service.d/50-blackwell-inference.conf"
VALIDATE = "/etc/systemd/system/sglang-k26-validate.service"
SECRETS = "/etc/blackwell-inference/sglang-k26.secrets.env"
OBSERVED = {
    UNIT: {"exists": True, "type": "file", "sha256": "aa"},
    VALIDATE: {"exists": True, "type": "file", "sha256": "bb"},
    SECRETS: {"exists": False},
}


@pytest.mark.parametrize(
    ("written", "observed", "reread", "expected"),
    [
        # a run that changed nothing: the probe's reading
        (None, OBSERVED, False, {UNIT: "aa", VALIDATE: "bb", SECRETS: None}),
        # the unit files call wrote them all: its checksums
        ({UNIT: "cc", VALIDATE: "dd", SECRETS: None}, OBSERVED, False, {UNIT: "cc", VALIDATE: "dd", SECRETS: None}),
        # secrets given: the call left that file to its own task; unchanged since the probe
        (
            {UNIT: "cc", VALIDATE: "dd"},
            dict(OBSERVED, **{SECRETS: {"exists": True, "type": "file", "sha256": "ee"}}),
            False,
            {UNIT: "cc", VALIDATE: "dd", SECRETS: "ee"},
        ),
        # the secrets file was written in this run: read again
        ({UNIT: "cc", VALIDATE: "dd"}, OBSERVED, True, None),
        # a path the probe did not look at: read again
        (None, {UNIT: OBSERVED[UNIT]}, False, None),
    ],
)
def test_fingerprint_checksums_come_from_the_write_or_the_probe(written, observed, reread, expected):
    assert service_plan.fingerprint_checksums([UNIT, VALIDATE, SECRETS], written, observed, reread) == expected


@pytest.mark.parametrize(
    "environment, refused",
    [
        ({}, False),
        ({"HF_HUB_OFFLINE": "1", "NCCL_DEBUG": "WARN"}, False),
        ({"CUDA_HOME": "/usr/local/cuda"}, True),  # derived from the facts: the role writes it
        ({"FLASHINFER_CUDA_ARCH_LIST": "12.0f"}, True),
        ({"BAD-NAME": "1"}, True),
        ("not-a-dict", True),
    ],
)
def test_the_environment_variable_refusal_names_it_and_the_derived_keys(environment, refused):
    got = service_plan.environment_refusal(environment)
    if not refused:
        assert got == ""
    else:
        assert got.startswith("sglang_service_environment: ") and ("CUDA_HOME, PATH, FLASHINFER_CUDA_ARCH_LIST" in got or "mapping" in got), got


def test_an_operators_later_drop_in_is_named_with_the_plan_kept_and_the_summary_is_not_ready():
    local = "/etc/systemd/system/sglang-k26.service.d/90-local.conf"
    steps = [
        {"file": local, "late": True, "dropin": True, "kind": "set", "key": "CUDA_HOME", "value": CUDA128},
        {"file": local, "late": True, "dropin": True, "kind": "exec_start", "key": None, "value": "/root/venv/bin/python -m x"},
    ]
    unit = {"source": "unit", "environment_steps": steps, "environment_files": {}}
    got = service_plan.plan(facts("13.0-sglang"), CUDA13, VENV, CACHE, unit=unit, mode="dropin")
    assert got["error"] is None and got["foreign"].startswith("The service would not run as the role sets it up and validates it: ")
    assert "%s sets CUDA_HOME=%s (the role sets CUDA_HOME=%s)" % (local, CUDA128, CUDA13) in got["foreign"]
    assert "%s sets ExecStart=/root/venv/bin/python -m x" % local in got["foreign"]
    assert got["env"]["CUDA_HOME"] == CUDA13  # for the summary
    # the role writes no command (keep false, no command): a later ExecStart= is the operator's to set
    unit["source"] = "none"
    assert "ExecStart" not in service_plan.plan(facts("13.0-sglang"), CUDA13, VENV, CACHE, unit=unit, mode="dropin")["foreign"]
    # the same value as the role's, or a drop-in before the role's, is no refusal
    steps[0]["value"] = CUDA13
    assert service_plan.plan(facts("13.0-sglang"), CUDA13, VENV, CACHE, unit={"environment_steps": steps[:1]}, mode="dropin")["foreign"] is None
    assert service_plan.plan(facts("13.0-sglang"), CUDA13, VENV, CACHE)["foreign"] is None
    # the summary: NOT READY with the file named, whatever the marker and the health say
    marker = {"ready": True, "inputs": "x", "reason": "kernel launched"}
    base = {"need": {"needed": False}, "probe_health": {"status": 200, "stands": True}, "health_now": {"skipped": True}}
    assert service_plan.summary(marker, base)["ready"] is True
    got = service_plan.summary(marker, dict(base, foreign=got["foreign"]))
    assert got["ready"] is False and got["state"] == "not as validated" and "90-local.conf sets CUDA_HOME" in got["reason"]


LOADED = {"load_state": "loaded", "user": "sglang", "listen": {"host": "0.0.0.0", "port": 30000}, "argv": ["python3"]}  # noqa: S104
MISSING = {"load_state": "not-found", "user": None, "listen": {"host": "::1", "port": 30001}}


@pytest.mark.parametrize(
    ("unit", "checked", "mode", "refusal", "run_user", "health", "sample"),
    [
        # the role owns the unit: its account, whatever the unit says
        (LOADED, None, "unit", "", "svc", "http://127.0.0.1:30000/health", "http://127.0.0.1:30000/generate"),
        # a drop-in: the unit's own account
        (LOADED, None, "dropin", "", "sglang", "http://127.0.0.1:30000/health", "http://127.0.0.1:30000/generate"),
        # the check play's reading when the probe left it to that one
        (None, LOADED, "dropin", "", "sglang", "http://127.0.0.1:30000/health", "http://127.0.0.1:30000/generate"),
        # a drop-in for a unit that is not there
        (
            MISSING,
            LOADED,
            "dropin",
            "sglang_service_mode=dropin needs an existing sglang-k26.service (sglang_service_name); systemd says: LoadState=not-found."
            " Use sglang_service_mode=unit to let the role own the unit.",
            None,
            "http://[::1]:30001/health",
            "http://[::1]:30001/generate",
        ),
        (MISSING, None, "unit", "", "svc", "http://[::1]:30001/health", "http://[::1]:30001/generate"),
    ],
)
def test_the_unit_plan_names_a_missing_unit_the_account_and_the_urls(unit, checked, mode, refusal, run_user, health, sample):
    got = service_plan.unit_plan(unit, checked, mode, "sglang-k26", "svc", "/health", "/generate", {"text": "x"})
    assert got == {
        "unit": unit or checked,
        "dropin_refusal": refusal,
        "run_user": run_user,
        "health_url": health,
        "sample_url": sample,
        "device_allow": devices.allow_entries("rw"),
    }
    assert service_plan.unit_plan(unit, checked, mode, "sglang-k26", "svc", "/health", "/generate", {})["sample_url"] == ""


def test_the_preflight_plan_keeps_the_unit_plan_beside_a_refusal():
    kw = {"unit": MISSING, "mode": "dropin", "name": "sglang-k26", "user": "svc"}
    got = service_plan.preflight(facts("13.0-sglang"), CUDA13, VENV, CACHE, **kw)
    assert got["dropin_refusal"].startswith("sglang_service_mode=dropin needs") and got["error"] is None and got["archs"] == "12.0a"
    refused = service_plan.preflight({}, CUDA13, VENV, CACHE, unit=None, checked=LOADED, mode="dropin", name="sglang-k26")
    assert refused["dropin_refusal"] == "" and refused["error"].startswith("FlashInfer ? in") and refused["run_user"] == "sglang"
    assert service_plan.preflight(facts("13.0-sglang"), CUDA13, VENV, CACHE, unit=LOADED, mode="unit")["foreign"] is None


WS = CACHE + "/jit/vtest"


def _entry(path, state="directory", **kw):
    return dict({"path": path, "state": state, "owner": "root", "group": "root", "mode": "0755"}, **kw)


def _file(path, content):
    return _entry(path, "file", mode="0644", content=content)


ENTRIES = {
    "account": [_entry(CACHE), _entry(WS)],
    "validator": [_file("/usr/local/libexec/blackwell-inference/boot_validate.py", "code\n")],
    "secrets_gone": {"path": SECRETS, "state": "absent"},
    "unit": _file("/etc/systemd/system/sglang-k26.service", "[Unit]\n"),
    "dropin": _file(UNIT, "[Service]\n"),
    "modules_load": _file("/etc/modules-load.d/blackwell-inference-nvidia-uvm.conf", "nvidia-uvm\n"),
    "validate_unit": _file(VALIDATE, "[Unit]\n"),
    "ready_unit": _file("/etc/systemd/system/sglang-k26-ready.service", "[Unit]\n"),
    "validate_unit_gone": {"path": VALIDATE, "state": "absent"},
    "ready_unit_gone": {"path": "/etc/systemd/system/sglang-k26-ready.service", "state": "absent"},
}


def _seen(entry):
    """What files.observe reports for a path that is as `entry` wants it."""
    if entry["state"] == "absent":
        return {"exists": False}
    seen = {"exists": True, "type": entry["state"], "owner": "root", "group": "root", "uid": 0, "gid": 0, "mode": int(entry["mode"], 8)}
    if entry["state"] == "file":
        seen["sha256"] = __import__("hashlib").sha256(entry["content"].encode()).hexdigest()
    return seen


def _all_seen(*names):
    got = {}
    for name in names:
        for entry in ENTRIES[name] if isinstance(ENTRIES[name], list) else [ENTRIES[name]]:
            got[entry["path"]] = _seen(entry)
    return got


AS_WANTED = _all_seen("account", "validator", "secrets_gone", "dropin", "modules_load", "validate_unit", "ready_unit")
PLANNED = {"env": {"FLASHINFER_WORKSPACE_BASE": WS}}
READY = {"observed": AS_WANTED, "marker": {"ready": True}}


class _Lazy(dict):
    """The role's paths as Ansible's lazy variables give them: an entry this run does not want is never read."""

    def __init__(self, data, wanted):
        super().__init__(data)
        self.wanted = wanted

    def __getitem__(self, key):
        assert key in self.wanted, key
        return super().__getitem__(key)


@pytest.mark.parametrize(
    ("mode", "secrets", "boot", "probe", "account", "unit_files", "pending", "stale", "adopt", "work"),
    [
        # a second converge of a drop-in: everything as wanted, nothing to do
        ("dropin", False, True, {"observed": AS_WANTED}, 3, 5, (False, False), [], False, False),
        # unit mode always has its account to see to
        ("unit", False, True, {"observed": AS_WANTED}, 3, 6, (False, True), [], False, True),
        # secrets given: their own task writes the file (no removal listed)
        ("dropin", True, True, {"observed": AS_WANTED}, 3, 4, (False, False), [], False, True),
        # boot validation off: the validator is not written, its units go
        ("dropin", False, False, {"observed": AS_WANTED}, 2, 5, (False, True), [], False, True),
        # a workspace whose venv is gone (this plan's own never is)
        (
            "dropin",
            False,
            True,
            {"observed": AS_WANTED, "gone_venv_links": [CACHE + "/jit/old/venv", WS + "/venv"]},
            3,
            5,
            (False, False),
            [CACHE + "/jit/old"],
            False,
            True,
        ),
        # a ready host without a snapshot that reads: adopted
        ("dropin", False, True, dict(READY, snapshot={"exists": False}), 3, 5, (False, False), [], True, True),
        ("dropin", False, True, dict(READY, snapshot={"exists": True, "error": "bad"}), 3, 5, (False, False), [], True, True),
        ("dropin", False, True, dict(READY, snapshot={"exists": True, "error": None}), 3, 5, (False, False), [], False, False),
        # a first run: nothing observed
        ("dropin", False, True, {}, 3, 5, (True, True), [], False, True),
        # issue 57 item 7: a first drop-in run on the operator's running service adopts it as the last good state
        ("dropin", False, True, {"snapshot": {"exists": False}, "unit_active": True}, 3, 5, (True, True), [], True, True),
        ("dropin", False, True, {"snapshot": {"exists": False}, "unit_active": False}, 3, 5, (True, True), [], False, True),
        ("unit", False, True, {"snapshot": {"exists": False}, "unit_active": True}, 3, 6, (True, True), [], False, True),  # the role's own unit
        ("dropin", False, True, {"snapshot": {"exists": True, "error": None}, "unit_active": True}, 3, 5, (True, True), [], False, True),
    ],
)
def test_the_files_plan_picks_the_paths_and_says_whether_there_is_work(mode, secrets, boot, probe, account, unit_files, pending, stale, adopt, work):
    wanted = {"account", "dropin", "modules_load"} | ({"validator", "validate_unit", "ready_unit"} if boot else {"validate_unit_gone", "ready_unit_gone"})
    wanted |= ({"unit"} if mode == "unit" else set()) | (set() if secrets else {"secrets_gone"})
    probe = dict(probe)
    planned = dict(PLANNED, unit={"active_state": "active" if probe.pop("unit_active", False) else "inactive"})
    got = service_plan.files(planned, probe, _Lazy(ENTRIES, wanted), mode, secrets, boot)
    assert (len(got["account"]), len(got["unit_files"])) == (account, unit_files)
    assert (got["account_pending"], got["unit_files_pending"]) == pending
    assert (got["stale_workspaces"], got["adopt"], got["work"]) == (stale, adopt, work)


ROLE_FILES = {
    "unit": "/etc/systemd/system/s.service",
    "dropin": "/etc/systemd/system/s.service.d/50-blackwell-inference.conf",
    "validate_unit": "/etc/systemd/system/s-validate.service",
    "ready_unit": "/etc/systemd/system/s-ready.service",
    "secrets": "/etc/blackwell-inference/s.secrets.env",
    "validate_config": "/etc/blackwell-inference/s-validate.json",
}
_REST = [ROLE_FILES[k] for k in ("dropin", "validate_unit", "ready_unit", "secrets")]


@pytest.mark.parametrize(
    "mode, fingerprinted, state",
    [
        # the role's own unit is vouched for and kept
        ("unit", [ROLE_FILES["unit"], *_REST], [ROLE_FILES["unit"], *_REST, ROLE_FILES["validate_config"]]),
        # the site's unit is not vouched for, but kept: a failed switch to unit mode puts it back (or takes the new away)
        ("dropin", _REST, [*_REST, ROLE_FILES["unit"], ROLE_FILES["validate_config"]]),
    ],
)
def test_the_files_each_mode_fingerprints_and_keeps_in_the_last_good_state(mode, fingerprinted, state):
    assert service_plan.state_files(ROLE_FILES, mode) == {"fingerprinted": fingerprinted, "state": state}


@pytest.mark.parametrize(
    "run_user, group, mode, expected",
    [
        ("sglang", "sglang", "unit", {"owner": "sglang", "group": "sglang"}),
        ("sglang", "gpu", "unit", {"owner": "sglang", "group": "gpu"}),
        ("svc", "sglang", "dropin", {"owner": "svc", "group": ""}),  # the unit's own user, with its own group
        (None, "sglang", "dropin", {"owner": "root", "group": ""}),  # the site's unit names no user: root's
        ("", "sglang", "dropin", {"owner": "root", "group": ""}),
    ],
)
def test_the_cache_directories_owner_and_group(run_user, group, mode, expected):
    assert service_plan.cache_owner(run_user, group, mode) == expected


def test_the_probe_plan_carries_the_files_and_the_cache_owner():
    options = {"cuda_home": "/usr/local/cuda-13.0", "venv": "/opt/sglang/current", "cache_dir": "/var/cache/sglang", "name": "s", "user": "sglang"}
    unit = {"load_state": "loaded", "user": "svc", "listen": {"host": "127.0.0.1", "port": 30000}, "argv": ["python3"]}
    got = service_plan.probe_plan({}, unit=unit, mode="dropin", group="sglang", role_files=ROLE_FILES, **options)
    assert got["cache_owner"] == {"owner": "svc", "group": ""}
    assert got["fingerprinted_files"] == _REST and got["state_files"][-2:] == [ROLE_FILES["unit"], ROLE_FILES["validate_config"]]
    assert "state_files" not in service_plan.probe_plan({}, unit=unit, mode="dropin", **options)  # without role_files


@pytest.mark.parametrize(
    ("host", "argv", "require", "exposure", "refused"),
    [
        ("127.0.0.1", ["python3"], True, False, False),
        ("0.0.0.0", ["python3"], False, True, False),  # noqa: S104 - warned of (the action adds the warning)
        ("0.0.0.0", ["python3"], True, True, True),  # noqa: S104 - refused, naming the service
        ("0.0.0.0", ["python3", "--api-key", "${K}"], True, False, False),  # noqa: S104
    ],
)
def test_the_probe_plan_says_when_the_port_is_open_with_no_key(host, argv, require, exposure, refused):
    """issue 58 item 6"""
    options = {"cuda_home": "/usr/local/cuda-13.0", "venv": "/opt/sglang/current", "cache_dir": "/var/cache/sglang", "name": "s", "user": "sglang"}
    unit = {"load_state": "loaded", "user": "svc", "listen": {"host": host, "port": 30000}, "argv": argv}
    got = service_plan.probe_plan({}, unit=unit, mode="dropin", require_api_key=require, **options)
    assert bool(got["exposure"]) is exposure and bool(got["exposure_refusal"]) is refused
    if refused:
        assert got["exposure_refusal"] == "s.service: " + got["exposure"]
