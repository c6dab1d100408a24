"""venv_current: the sglang_venv role's result from the marker of the venv current points at - read on the host, or
given (the probe's reading), then worked out by the action without a call to the host."""

import json

import pytest
from ansible.plugins.action import ActionBase

from ansible_collections.blackwell.inference.plugins.action import venv_current as action_mod
from ansible_collections.blackwell.inference.plugins.module_utils.venv import info as vi
from ansible_collections.blackwell.inference.plugins.modules import venv_current as mod

from .fakemodule import run_main

# a marker as the lab's build writes it (its keys as the role reads them)
MARKER = {"hash": "119f0a510a34ff5f", "versions": {"torch": "2.13.0+cpu"}, "torch_cuda": None, "patches": [], "no_deps": [], "pip_check_set_aside": 0}


def venv_root(tmp_path, marker_text):
    venv = tmp_path / "venvs" / "119f0a510a34ff5f"
    venv.mkdir(parents=True)
    if marker_text is not None:
        (venv / ".blackwell-venv.json").write_text(marker_text)
    (tmp_path / "current").symlink_to(venv)
    return str(tmp_path)


def test_the_module_reads_current_s_marker(tmp_path, monkeypatch):
    root = venv_root(tmp_path, json.dumps(MARKER))
    got, _calls = run_main(monkeypatch, mod, {"root": root, "inputs_hash": "119f0a510a34ff5f", "changed": True, "switched": True}, check_mode=True)
    assert not got["failed"] and not got["changed"]
    assert got["current"] == vi.current(MARKER, root, "119f0a510a34ff5f", True, True)


@pytest.mark.parametrize("marker_text", [None, "[1, 2]"])
def test_no_marker_is_a_result_without_a_venv(tmp_path, monkeypatch, marker_text):
    root = venv_root(tmp_path, marker_text)
    got, _calls = run_main(monkeypatch, mod, {"root": root, "inputs_hash": "119f0a510a34ff5f"})
    assert got["current"] == vi.current({}, root, "119f0a510a34ff5f", False, False) and got["current"]["hash"] is None
    assert vi.read_current(str(tmp_path / "nowhere")) is None


def test_a_marker_that_is_not_json_fails_naming_it(tmp_path, monkeypatch):
    root = venv_root(tmp_path, '{"hash": ')
    got, _calls = run_main(monkeypatch, mod, {"root": root, "inputs_hash": "119f0a510a34ff5f"})
    assert got["failed"] and got["msg"].startswith(root + "/current/.blackwell-venv.json is not JSON (")


class FakeTask:
    def __init__(self, args):
        self.args = args


def run_action(monkeypatch, args):
    calls = []
    monkeypatch.setattr(ActionBase, "run", lambda self, tmp=None, task_vars=None: {})
    action = action_mod.ActionModule.__new__(action_mod.ActionModule)
    action._task = FakeTask(args)

    def execute(module_name, module_args, task_vars):
        calls.append((module_name, module_args))
        return {"changed": False, "current": "read on the host"}

    action._execute_module = execute
    monkeypatch.setattr(action, "validate_argument_spec", lambda argument_spec: (None, dict({k: v.get("default") for k, v in argument_spec.items()}, **args)))
    return action.run(task_vars={}), calls


def test_a_given_marker_is_answered_on_the_controller(monkeypatch):
    args = {"root": "/opt/sglang", "inputs_hash": "119f0a510a34ff5f", "marker": MARKER, "changed": False, "switched": False}
    got, calls = run_action(monkeypatch, args)
    assert calls == [] and got == {"changed": False, "current": vi.current(MARKER, "/opt/sglang", "119f0a510a34ff5f", False, False)}
    # an empty marker given (no venv) is still the probe's: no call
    got, calls = run_action(monkeypatch, dict(args, marker={}))
    assert calls == [] and got["current"]["hash"] is None


def test_without_a_marker_the_module_reads(monkeypatch):
    args = {"root": "/opt/sglang", "inputs_hash": "119f0a510a34ff5f", "changed": True}
    got, calls = run_action(monkeypatch, args)
    assert calls == [("blackwell.inference.venv_current", args)] and got["current"] == "read on the host"
