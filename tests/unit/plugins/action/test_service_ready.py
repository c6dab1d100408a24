"""service_ready, the sglang_service role's judgements of what its tasks found (issue 46: READY's steps decided in
Python, on the controller, instead of private filters): each step returns what module_utils/service decides, and only
the fingerprint step asks the host, when neither the unit files call nor the preflight's observation says what the
fingerprinted files hold."""

import base64
import json
import re

import pytest
from ansible.plugins.action import ActionBase
from ansible.plugins.filter.core import to_nice_json

from ansible_collections.blackwell.inference.plugins.action import service_ready
from ansible_collections.blackwell.inference.plugins.module_utils.common import paths
from ansible_collections.blackwell.inference.plugins.module_utils.service import plan, ready, settings

UNIT = "/etc/systemd/system/sglang.service"
SECRETS = "/etc/blackwell-inference/sglang.secrets.env"
VALIDATE = "/etc/blackwell-inference/sglang-validate.json"
FACTS = {"gpus": [{"compute_capability": "12.0"}], "driver": {"version": "580.95.05"}, "toolkits": [{"path": "/usr/local/cuda-13.0", "version": "13.0.88"}]}
SETTINGS = {"service": "sglang.service", "user": "sglang", "warm": ["sampling"], "timeout": 600, "health_timeout": 900, "sample_body": {}}


class FakeTask:
    def __init__(self, args):
        self.args = args


def run_action(monkeypatch, args, module_result=None):
    """The action's result, and the module calls it made on the host."""
    calls = []

    def execute(self, module_name=None, module_args=None, task_vars=None, **kw):
        calls.append((module_name, module_args))
        return dict(module_result or {})

    monkeypatch.setattr(ActionBase, "run", lambda self, tmp=None, task_vars=None: {})
    monkeypatch.setattr(ActionBase, "_execute_module", execute)
    action = service_ready.ActionModule.__new__(service_ready.ActionModule)
    action._task = FakeTask(dict(args))
    return action.run(task_vars={}), calls


def fingerprint_args(**kw):
    args = {
        "step": "fingerprint",
        "marker": {},
        "facts": FACTS,
        "cuda_home": "/usr/local/cuda-13.0",
        "env": {"CUDA_HOME": "/usr/local/cuda-13.0"},
        "venv_target": "/opt/sglang/venvs/abc",
        "archs": "12.0f",
        "policy": {"warm": ["sampling"], "user": "sglang"},
        "files": [UNIT, SECRETS],
        "written": {UNIT: "a" * 64},
        "observed": {SECRETS: {"exists": False}},
        "store": "/var/lib/blackwell-inference/sglang/last-good",
        "keyed": {"key": "/var/lib/blackwell-inference/digest.key", "paths": [SECRETS]},
        "settings": SETTINGS,
        "settings_path": VALIDATE,
    }
    args.update(kw)
    return args


def test_settings_are_written_as_to_nice_json_renders_them():
    doc = dict(SETTINGS, inputs="d" * 64, vouched={"toolkit": "13.0", "archs": "12.0f", "é": [1, None, True]})
    entry = service_ready.settings_entry(VALIDATE, doc)
    assert entry["content"] == to_nice_json(doc) + "\n"
    assert (entry["owner"], entry["group"], entry["mode"]) == ("root", "root", "0600")


def test_the_fingerprint_without_a_read_when_the_write_and_the_observation_say_what_the_files_hold(monkeypatch):
    got, calls = run_action(monkeypatch, fingerprint_args())
    assert calls == [] and got["read"] is False and got["changed"] is False
    want = plan.fingerprint(
        {},
        FACTS,
        "/usr/local/cuda-13.0",
        {"CUDA_HOME": "/usr/local/cuda-13.0"},
        "/opt/sglang/venvs/abc",
        "12.0f",
        {UNIT: "a" * 64, SECRETS: None},
        {"warm": ["sampling"], "user": "sglang"},
    )
    assert {k: got[k] for k in ("inputs", "digest", "need")} == want
    # no marker: validated, for that reason
    assert (
        got["need"] == {"needed": True, "why": "no ready marker", "current": False, "stale": "no ready marker"}
        and got["why"] == "no ready marker"
        and got["revalidate"] is True
    )
    # the settings carry the fingerprint; the file was not observed, so writing it is pending
    (entry,) = got["settings_paths"]
    assert json.loads(entry["content"]) == dict(SETTINGS, inputs=got["digest"], vouched=got["inputs"]) and got["settings_pending"] is True


def test_the_settings_are_not_pending_when_the_preflight_saw_them_as_they_are_to_be(monkeypatch):
    first, _calls = run_action(monkeypatch, fingerprint_args())
    seen = {
        "exists": True,
        "type": "file",
        "owner": "root",
        "group": "root",
        "uid": 0,
        "gid": 0,
        "mode": 0o600,
        "sha256": paths.sha256(first["settings_paths"][0]["content"]),
    }
    got, _calls = run_action(monkeypatch, fingerprint_args(observed={SECRETS: {"exists": False}, VALIDATE: seen}))
    assert got["settings_pending"] is False
    got, _calls = run_action(monkeypatch, fingerprint_args(observed={SECRETS: {"exists": False}, VALIDATE: dict(seen, mode=0o644)}))
    assert got["settings_pending"] is True
    got, _calls = run_action(monkeypatch, fingerprint_args(settings=None))
    assert "settings_paths" not in got and "settings_pending" not in got


def test_the_files_are_read_on_the_host_only_when_the_secrets_file_was_written_since(monkeypatch):
    read = {"checksums": {UNIT: "b" * 64, SECRETS: "hmac-sha256:" + "c" * 64}}
    got, calls = run_action(monkeypatch, fingerprint_args(reread=True), read)
    args = fingerprint_args()
    assert calls == [("blackwell.inference.service_snapshot", {"store": args["store"], "keyed": args["keyed"], "files": [UNIT, SECRETS], "state": "inspect"})]
    assert got["read"] is True and got["inputs"] == sglang_inputs(read["checksums"])


def sglang_inputs(files):
    return settings.inputs(
        FACTS, "/usr/local/cuda-13.0", {"CUDA_HOME": "/usr/local/cuda-13.0"}, "/opt/sglang/venvs/abc", "12.0f", files, {"warm": ["sampling"], "user": "sglang"}
    )


def test_a_failed_read_fails_the_step_with_the_modules_message(monkeypatch):
    denied = {"failed": True, "msg": "cannot read the service's state or its snapshot in /x: denied"}
    got, _calls = run_action(monkeypatch, fingerprint_args(reread=True), denied)
    assert (
        got["failed"] is True and got["msg"] == "reading the service's files for the fingerprint: cannot read the service's state or its snapshot in /x: denied"
    )


@pytest.mark.parametrize(
    "changes, foreign, why, revalidate",
    [
        ({}, None, "", False),
        ({"toolkit_installed": True}, None, "the toolkit changed in this run", True),
        ({"venv_switched": True}, None, "the venv changed in this run", True),
        ({"units_changed": True}, None, "its units changed in this run", True),
        ({"runtime_changed": True}, None, "the toolkit or the venv changed in this run", True),
        # another file of the unit overrides what the role set: the reason is kept, nothing is validated
        ({"units_changed": True}, "/etc/systemd/system/sglang.service.d/90-site.conf", "its units changed in this run", False),
    ],
)
def test_why_this_run_validates_again(monkeypatch, changes, foreign, why, revalidate):
    marker_args = fingerprint_args()
    first, _calls = run_action(monkeypatch, marker_args)
    marker = {"ready": True, "inputs": first["digest"], "vouched": first["inputs"]}
    got, _calls = run_action(monkeypatch, fingerprint_args(marker=marker, foreign=foreign, **changes))
    assert got["need"] == {"needed": False, "why": "ready for the current inputs", "current": True, "stale": ""}
    assert (got["why"], got["revalidate"]) == (why, revalidate)


def test_the_verdict_is_readys(monkeypatch):
    smoke = {"steps": {"launch": {"launched": True, "detail": "scale<<<1,32>>> ok"}, "warm": {"modules": [{"name": "sampling"}]}}}
    got, _calls = run_action(monkeypatch, {"step": "verdict", "smoke": smoke})
    assert {k: got[k] for k in ("ready", "reason")} == ready.smoke_verdict(smoke, False)
    assert got["ready"] is True and got["reason"] == "kernel launched (scale<<<1,32>>> ok), JIT cache warm (sampling)"
    got, _calls = run_action(monkeypatch, {"step": "verdict", "smoke": {"failed": True, "msg": "nvcc failed"}, "ready_without_launch": True})
    assert got["ready"] is False and got["reason"] == "smoke failed: nvcc failed"


def test_the_marker_is_next_markers_at_the_controllers_utc_time(monkeypatch):
    state = {
        "inputs": "d" * 64,
        "venv": "/opt/sglang/venvs/abc",
        "toolkit": "13.0",
        "archs": "12.0f",
        "versions": {},
        "vouched": {},
        "smoke": None,
        "restart": True,
    }
    got, _calls = run_action(monkeypatch, {"step": "marker", "previous": {}, "phase": "serving", "reason": "kernel launched (ok)", "state": state})
    now = got["marker"]["time"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", now)
    assert got["marker"] == ready.next_marker({}, "serving", "kernel launched (ok)", now, state)
    assert got["marker"]["ready"] is True and got["marker"]["last_good"]["inputs"] == "d" * 64
    # overridden: a marker that says not ready already is left as it is
    got, _calls = run_action(monkeypatch, {"step": "marker", "previous": {"ready": False}, "phase": "overridden", "reason": "90-site.conf", "state": state})
    assert got["marker"] is None


def test_a_marker_state_with_an_unknown_key_fails_the_task_naming_it(monkeypatch):
    got, _calls = run_action(monkeypatch, {"step": "marker", "previous": {}, "phase": "failed", "reason": "x", "state": {"ready": True}})
    assert got["failed"] is True and got["msg"].startswith("marker state: unknown keys ready")


def test_the_last_good_policy_and_the_rollbacks_outcome_are_settings(monkeypatch):
    restored = {"content": base64.b64encode(json.dumps({"warm": ["quantization"], "user": "svc"}).encode()).decode()}
    got, _calls = run_action(monkeypatch, {"step": "last_good", "settings": restored, "marker": {}, "warm": ["sampling"], "user": "sglang"})
    assert {k: got[k] for k in ("warm", "user", "source")} == {"warm": ["quantization"], "user": "svc", "source": "settings"}
    got, _calls = run_action(monkeypatch, {"step": "last_good", "settings": {"skipped": True}, "marker": None, "warm": ["sampling"], "user": "sglang"})
    assert got["source"] == "variables" and got["warm"] == ["sampling"]
    args = {
        "cause": "smoke failed: x",
        "host": "ct200",
        "marker_path": "/etc/ansible/facts.d/blackwell_inference.fact",
        "unit": "sglang.service",
        "restart": True,
        "restarted": False,
    }
    got, _calls = run_action(monkeypatch, dict(args, step="rollback", restore={"failed": True, "msg": "no snapshot"}))
    want = settings.rollback_outcome({"failed": True, "msg": "no snapshot"}, **args)
    assert {k: got[k] for k in want} == want and got["msg"].startswith("ct200 is NOT READY: smoke failed: x.")


def test_an_unknown_step_or_option_is_refused_by_name(monkeypatch):
    with pytest.raises(Exception, match="step"):
        run_action(monkeypatch, {"step": "revalidation"})
    with pytest.raises(Exception, match="smoke_result"):
        run_action(monkeypatch, {"step": "verdict", "smoke_result": {}})


WS = "/var/cache/sglang/jit/abc"
ENTRY = {"state": "file", "owner": "root", "group": "root", "mode": "0644", "content": "x\n"}
PATHS = {
    "account": [{"path": "/var/cache/sglang", "state": "directory", "owner": "sglang", "group": "sglang", "mode": "0750"}],
    "validator": [dict(ENTRY, path="/usr/local/libexec/blackwell-inference/boot_validate.py")],
    "secrets_gone": {"path": "/etc/blackwell-inference/sglang.secrets.env", "state": "absent"},
    "unit": dict(ENTRY, path=UNIT),
    "dropin": dict(ENTRY, path=UNIT + ".d/50-blackwell-inference.conf"),
    "modules_load": dict(ENTRY, path="/etc/modules-load.d/blackwell-inference-nvidia-uvm.conf"),
    "validate_unit": dict(ENTRY, path="/etc/systemd/system/sglang-validate.service"),
    "ready_unit": dict(ENTRY, path="/etc/systemd/system/sglang-ready.service"),
    "validate_unit_gone": {"path": "/etc/systemd/system/sglang-validate.service", "state": "absent"},
    "ready_unit_gone": {"path": "/etc/systemd/system/sglang-ready.service", "state": "absent"},
}


@pytest.mark.parametrize(
    "probe, mode, has_secrets, boot_validation",
    [
        # a first run: nothing observed, every call pending
        ({}, "dropin", False, True),
        ({}, "unit", True, False),
        # a ready host without a snapshot (adopted), a workspace whose venv is gone (this run's own never is)
        (
            {"marker": {"ready": True}, "snapshot": {"exists": False}, "gone_venv_links": ["/var/cache/sglang/jit/old/venv", WS + "/venv"]},
            "dropin",
            False,
            True,
        ),
    ],
)
def test_the_files_step_is_plans_files_without_a_call_to_the_host(monkeypatch, probe, mode, has_secrets, boot_validation):
    planned = {"env": {"FLASHINFER_WORKSPACE_BASE": WS}}
    args = {"step": "files", "plan": planned, "probe": probe, "paths": PATHS, "mode": mode, "has_secrets": has_secrets, "boot_validation": boot_validation}
    got, calls = run_action(monkeypatch, args)
    want = plan.files(planned, probe, PATHS, mode, has_secrets, boot_validation)
    assert calls == [] and got == dict(want, changed=False)


def test_the_files_step_defaults_as_the_filter_did_and_needs_the_paths_and_the_mode(monkeypatch):
    got, _calls = run_action(monkeypatch, {"step": "files", "plan": {}, "probe": {}, "paths": PATHS, "mode": "dropin"})
    assert got == dict(plan.files({}, {}, PATHS, "dropin", False, True), changed=False)
    got, _calls = run_action(monkeypatch, {"step": "files", "plan": {}, "probe": {}, "mode": "dropin"})
    assert got["failed"] is True and got["msg"] == "step files needs paths and mode"
    with pytest.raises(Exception, match="mode"):
        run_action(monkeypatch, {"step": "files", "paths": PATHS, "mode": "both"})
