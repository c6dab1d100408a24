"""The service probe's action returns the service role's preflight plan beside its reading (issue 46: roles read a
plan), made on the controller from the reading and the role's variables, never sent to the host."""

import json
import os

import pytest
from ansible.plugins.action import ActionBase

from ansible_collections.blackwell.inference.plugins.action import service_probe
from ansible_collections.blackwell.inference.plugins.module_utils.cuda import devices
from ansible_collections.blackwell.inference.plugins.module_utils.service import list as service_list
from ansible_collections.blackwell.inference.plugins.module_utils.service import plan as service_plan
from ansible_collections.blackwell.inference.plugins.module_utils.service import unit

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils", "data")
LOADED = {"load_state": "loaded", "user": "sglang", "listen": {"host": "127.0.0.1", "port": 30000}, "argv": ["python3"]}
MISSING = {"load_state": "not-found", "user": None, "listen": {"host": "::1", "port": 30001}}
OPTIONS = {
    "cuda_home": "/usr/local/cuda-13.0",
    "venv": "/opt/sglang/current",
    "cache_dir": "/var/cache/sglang",
    "mode": "unit",
    "name": "sglang",
    "user": "sglang",
}


def cuda_facts():
    with open(os.path.join(DATA, "cuda_facts-13.0-sglang.json")) as fh:
        return json.load(fh)


class FakeTask:
    def __init__(self, args):
        self.args = args


def run_action(monkeypatch, args, reading):
    """The action's run with the module's (or the lock's) reading given: what the task returns, and the options the
    reading was asked with."""
    asked = {}

    def lock_run(_action, _name, options, _task_vars):
        asked.update(options(dict(_action._task.args)))
        return dict(reading)

    monkeypatch.setattr(ActionBase, "run", lambda self, tmp=None, task_vars=None: {})
    monkeypatch.setattr(service_probe.lock_reading, "run", lock_run)
    action = service_probe.ActionModule.__new__(service_probe.ActionModule)
    action._task = FakeTask(dict(args))
    return action.run(task_vars={}), asked


def test_the_plan_comes_with_the_reading_and_is_never_sent(monkeypatch):
    reading = {"blackwell_cuda": cuda_facts(), "unit": LOADED, "marker": {}}
    got, asked = run_action(monkeypatch, {"marker": "/m", "unit": {"unit": "sglang.service"}, "plan": OPTIONS}, reading)
    assert "plan" not in asked and asked["marker"] == "/m"
    want = service_plan.preflight(cuda_facts(), unit=LOADED, **OPTIONS)
    assert got["plan"] == service_plan.probe_plan(cuda_facts(), unit=LOADED, **OPTIONS) and got["marker"] == {}
    assert {k: got["plan"][k] for k in want} == want
    assert want["error"] is None and want["archs"] == "12.0a" and want["run_user"] == "sglang"
    assert want["health_url"] == "http://127.0.0.1:30000/health" and want["device_allow"] == devices.allow_entries("rw")


def test_the_check_plays_unit_counts_when_the_probe_did_not_read_it(monkeypatch):
    options = dict(OPTIONS, mode="dropin", checked=MISSING)
    got, _asked = run_action(monkeypatch, {"plan": options}, {"blackwell_cuda": cuda_facts(), "unit": None})
    assert got["plan"]["dropin_refusal"].startswith("sglang_service_mode=dropin needs an existing sglang.service")
    assert got["plan"]["health_url"] == "http://[::1]:30001/health" and got["plan"]["run_user"] is None


def test_no_plan_without_the_option_or_after_a_failed_reading(monkeypatch):
    got, _asked = run_action(monkeypatch, {"marker": "/m"}, {"blackwell_cuda": cuda_facts(), "unit": LOADED})
    assert "plan" not in got
    got, _asked = run_action(monkeypatch, {"plan": OPTIONS}, {"failed": True, "msg": "cannot read the unit"})
    assert "plan" not in got and got["msg"] == "cannot read the unit"


def test_a_plan_the_variables_cannot_make_fails_the_task_naming_the_variable(monkeypatch):
    options = dict(OPTIONS, extra={"CUDA_HOME": "/usr/local/cuda"})
    got, _asked = run_action(monkeypatch, {"plan": options}, {"blackwell_cuda": cuda_facts(), "unit": LOADED})
    assert got["failed"] is True and "sglang_service_environment may not set CUDA_HOME" in got["msg"]


@pytest.mark.parametrize("mode,load_state,refused", [("dropin", "not-found", True), ("dropin", "loaded", False), ("unit", "not-found", False)])
def test_the_drop_in_refusal_is_the_units(mode, load_state, refused):
    # unit_command's dropin_refusal (the check play) and the plan's are one function (module_utils/service/unit.py)
    got = unit.dropin_refusal({"load_state": load_state}, mode, "sglang-k26")
    assert bool(got) is refused
    if refused:
        assert got == (
            "sglang_service_mode=dropin needs an existing sglang-k26.service (sglang_service_name); systemd says: "
            "LoadState=not-found. Use sglang_service_mode=unit to let the role own the unit."
        )


PRIMARY = {
    "name": "sglang",
    "mode": "unit",
    "venv": "/opt/sglang/current",
    "environment": {},
    "model_path": "/models/m",
    "port": 30000,
    "args": [],
    "command": [],
    "marker": "blackwell_inference",
}


def test_the_plan_resolves_the_further_services_against_the_first(monkeypatch):
    # what the sglang_service_extra_services filter did in vars/main.yml (module_utils/service/list.py extra_services)
    extras = [{"name": "sglang-eagle3", "mode": "dropin", "gpus": "4,5,6,7"}]
    options = dict(OPTIONS, extra_services=extras, primary=PRIMARY)
    got, _asked = run_action(monkeypatch, {"plan": options}, {"blackwell_cuda": cuda_facts(), "unit": LOADED})
    assert got["plan"]["extra_services"] == service_list.extra_services(extras, PRIMARY)["services"]
    assert [s["name"] for s in got["plan"]["extra_services"]] == ["sglang-eagle3"]
    assert got["plan"]["extra_services"][0]["environment"]["CUDA_VISIBLE_DEVICES"] == "4,5,6,7"
    # a further service's own run gives none (tasks/facts.yml: it does not loop again)
    got, _asked = run_action(monkeypatch, {"plan": dict(OPTIONS, extra_services=[], primary=PRIMARY)}, {"blackwell_cuda": cuda_facts(), "unit": LOADED})
    assert got["plan"]["extra_services"] == []
    got, _asked = run_action(monkeypatch, {"plan": OPTIONS}, {"blackwell_cuda": cuda_facts(), "unit": LOADED})
    assert got["plan"]["extra_services"] == []


@pytest.mark.parametrize(
    "majors,read,loaded",
    [
        ({"nvidia": 195, "nvidiactl": 195, "nvidia-uvm": 509}, "", ""),
        ({"nvidia": 195, "nvidiactl": 195}, "has no nvidia-uvm", ""),
        ({}, "no nvidia entries", "no nvidia entries"),
        (None, "cannot be read", "cannot be read"),
    ],
)
def test_the_plan_judges_the_units_device_rules_as_read_and_once_uvm_is_loaded(monkeypatch, majors, read, loaded):
    facts = dict(cuda_facts(), gpus=[{"index": 0}], device_majors=majors)
    options = dict(OPTIONS, proc_devices="/run/devices")
    got, _asked = run_action(monkeypatch, {"plan": options}, {"blackwell_cuda": facts, "unit": LOADED})
    refusal = got["plan"]["device_refusal"]
    assert (refusal["read"] == "") is (read == "") and read in refusal["read"]
    assert (refusal["uvm_loaded"] == "") is (loaded == "") and loaded in refusal["uvm_loaded"]
    assert all("/run/devices" in v for v in refusal.values() if v)
    assert refusal["read"] == (devices.refusal(majors, True, source="/run/devices") or "")


@pytest.mark.parametrize(
    "changed, taken",
    [
        ({"toolkit": False, "venv": False}, True),
        ({"toolkit": True, "venv": False}, False),  # the toolkit role changed the host after the lock read it
        ({"toolkit": False, "venv": None}, False),  # the venv role's result unknown: changed
        (None, True),  # not given: the reading is taken when it stands, as the other probes take theirs
    ],
)
def test_the_lock_reading_is_dropped_when_a_role_before_changed_the_host(monkeypatch, changed, taken):
    seen = {}

    def lock_run(action, _name, _options, _task_vars):
        seen.update(action._task.args)
        return {}

    monkeypatch.setattr(ActionBase, "run", lambda self, tmp=None, task_vars=None: {})
    monkeypatch.setattr(service_probe.lock_reading, "run", lock_run)
    action = service_probe.ActionModule.__new__(service_probe.ActionModule)
    args = {"marker": "/m", "reading": {"marker": {}, "failed": False}}
    action._task = FakeTask(dict(args, changed_since_reading=changed) if changed is not None else args)
    action.run(task_vars={})
    assert ("reading" in seen) is taken and "changed_since_reading" not in seen


def test_an_open_port_with_no_key_is_a_warning_unless_it_is_refused(monkeypatch):
    """issue 58 item 6: every run warns of it (the plan, made here, says why); with require_api_key the role refuses
    instead (tasks/facts.yml, tasks/check_play.yml) and there is no warning."""
    open_unit = dict(LOADED, listen={"host": "0.0.0.0", "port": 30000})  # noqa: S104 - the open port under test
    got, _asked = run_action(monkeypatch, {"plan": OPTIONS}, {"blackwell_cuda": cuda_facts(), "unit": open_unit})
    assert got["warnings"] == ["?: sglang.service: " + got["plan"]["exposure"]] and got["plan"]["exposure_refusal"] == ""
    got, _asked = run_action(monkeypatch, {"plan": dict(OPTIONS, require_api_key=True)}, {"blackwell_cuda": cuda_facts(), "unit": open_unit})
    assert "warnings" not in got and got["plan"]["exposure_refusal"].startswith("sglang.service: it serves on 0.0.0.0:30000 with no API key")
    got, _asked = run_action(monkeypatch, {"plan": OPTIONS}, {"blackwell_cuda": cuda_facts(), "unit": LOADED})
    assert "warnings" not in got and got["plan"]["exposure"] == ""
