"""service_health's action (issue 46: the health check's condition judged on the controller instead of a private
filter): given the preflight's look that stands and nothing changed since, the task is skipped without a call to the
host, as the task whose condition was false; otherwise the module asks, with its own options only."""

import pytest
from ansible.plugins.action import ActionBase

from ansible_collections.blackwell.inference.plugins.action import service_health
from ansible_collections.blackwell.inference.plugins.module_utils.service import ready

STANDS = {"stands": True, "answered": True, "status": 200, "sample": {"ok": True}, "not_looked": None}
FALLS = {"stands": False, "answered": False, "status": -1, "sample": None, "not_looked": None}
NOT_LOOKED = {"stands": False, "not_looked": "the ready marker's validation did not pass", "answered": None, "status": None, "sample": None}
NOTHING = {"revalidated": False, "enable_changed": False, "further_services": False}
# what tasks/health.yml gives the module (the role's rollout and rollback give no look)
ASK = {"url": "http://127.0.0.1:30000/health", "unit": "sglang.service", "timeout": 0, "must_answer": False}
ANSWER = {"changed": False, "answered": True, "status": 200, "seconds": 0.1, "gave_up": None}


class FakeTask:
    def __init__(self, args):
        self.args = args


def run_action(monkeypatch, args):
    """The action's result, and the module calls it made on the host."""
    calls = []

    def execute(self, module_name=None, module_args=None, task_vars=None, **kw):
        calls.append((module_name, module_args))
        return dict(ANSWER)

    monkeypatch.setattr(ActionBase, "run", lambda self, tmp=None, task_vars=None: {})
    monkeypatch.setattr(ActionBase, "_execute_module", execute)
    action = service_health.ActionModule.__new__(service_health.ActionModule)
    action._task = FakeTask(dict(args))
    return action.run(task_vars={}), calls


@pytest.mark.parametrize(
    "look, changed, skips",
    [
        # the look found the service answering and sampling, and nothing of it changed since
        (STANDS, {}, True),
        # a validation or rollout ran, the enable task changed the service, or further services follow: asked again
        (STANDS, {"revalidated": True}, False),
        (STANDS, {"enable_changed": True}, False),
        (STANDS, {"further_services": True}, False),
        # a look that did not stand, or none was made: asked (service_health waits and explains)
        (FALLS, {}, False),
        (NOT_LOOKED, {}, False),
        (None, {}, False),
        ({}, {}, False),
    ],
)
def test_the_task_is_skipped_exactly_when_the_look_stands(look, changed, skips):
    since = dict(NOTHING, **changed)
    got = service_health.skipped(look, since)
    assert (got is not None) is skips is ready.health_stands(look, **since)
    if skips:
        assert got == {"changed": False, "skipped": True, "skip_reason": service_health.SKIP_REASON}


@pytest.mark.parametrize(
    "look, changed, asked",
    [
        (STANDS, {}, False),
        (STANDS, {"revalidated": True}, True),
        (FALLS, {}, True),
        (None, {}, True),
    ],
)
def test_a_standing_look_makes_no_call_and_any_other_asks_with_the_modules_own_options(monkeypatch, look, changed, asked):
    got, calls = run_action(monkeypatch, dict(ASK, look=look, changed_since=dict(NOTHING, **changed)))
    if asked:
        assert calls == [("blackwell.inference.service_health", ASK)] and got == ANSWER
    else:
        assert calls == [] and got["skipped"] is True and got["changed"] is False and got["skip_reason"] == service_health.SKIP_REASON


def test_without_a_look_the_module_asks_with_the_tasks_options_as_given(monkeypatch):
    """The rollout's and the rollback's health checks: the module's call as before the action."""
    got, calls = run_action(monkeypatch, ASK)
    assert calls == [("blackwell.inference.service_health", ASK)] and got == ANSWER


def test_changed_since_defaults_to_nothing_changed(monkeypatch):
    got, calls = run_action(monkeypatch, dict(ASK, look=STANDS))
    assert calls == [] and got["skipped"] is True


def test_the_actions_options_are_checked_against_the_modules_spec(monkeypatch):
    with pytest.raises(Exception, match="changed_since"):
        run_action(monkeypatch, dict(ASK, look=STANDS, changed_since={"rolled_out": True}))
    with pytest.raises(Exception, match="sample_body"):
        run_action(monkeypatch, dict(ASK, look=STANDS, sample_url="http://127.0.0.1:30000/generate"))
