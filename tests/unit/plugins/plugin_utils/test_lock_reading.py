"""A probe's action returns the reading made under the play's lock when it was made with exactly its options."""

import pytest

from ansible_collections.blackwell.inference.plugins.plugin_utils import lock_reading as lr

OPTIONS = {"root": "/opt/sglang", "python": "/usr/bin/python3", "tools": []}
READING = {"python": {"version": "3.11.2"}, "current": "/opt/sglang/venvs/119f0a510a34ff5f", "venvs": [], "options": OPTIONS, "failed": False}


@pytest.mark.parametrize(
    "reading, options, expected",
    [
        (READING, dict(OPTIONS), True),
        (READING, dict(OPTIONS, tools=["patch"]), False),  # patches given since: GNU patch was not read
        (READING, dict(OPTIONS, root="/srv/sglang"), False),
        (dict(READING, failed=True, msg="python3: not found"), OPTIONS, False),
        ({k: v for k, v in READING.items() if k != "failed"}, OPTIONS, False),  # not made by the lock
        ({}, OPTIONS, False),
        (None, OPTIONS, False),
        ("__omit_place_holder__", OPTIONS, False),
    ],
)
def test_a_reading_stands_only_for_the_same_options_and_when_it_did_not_fail(reading, options, expected):
    assert lr.stands(reading, options) is expected


def test_the_result_is_the_probes_without_what_the_lock_added():
    got = lr.as_result(READING)
    assert got == {"python": {"version": "3.11.2"}, "current": "/opt/sglang/venvs/119f0a510a34ff5f", "venvs": [], "changed": False, "read_under_lock": True}


class Task:
    def __init__(self, args):
        self.args = args


class Action:
    """The part of ActionBase the helper uses: the task's arguments and the module call."""

    def __init__(self, args, answer):
        self._task = Task(args)
        self.calls = []
        self.answer = answer

    def _execute_module(self, module_name, module_args, task_vars):
        self.calls.append((module_name, module_args))
        return dict(self.answer)


def options_of(args):
    return {k: args.get(k) for k in ("root", "python", "tools")}


def test_run_returns_the_lock_reading_without_calling_the_module():
    action = Action(dict(OPTIONS, reading=READING), {"current": "read again"})
    got = lr.run(action, "blackwell.inference.venv_probe", options_of, {})
    assert got["read_under_lock"] is True and got["current"] == READING["current"] and action.calls == []


def test_run_calls_the_module_without_the_reading_when_it_does_not_stand():
    action = Action(dict(OPTIONS, tools=["patch"], reading=READING), {"current": "read again", "changed": False})
    got = lr.run(action, "blackwell.inference.venv_probe", options_of, {})
    assert got == {"current": "read again", "changed": False, "read_under_lock": False}
    assert action.calls == [("blackwell.inference.venv_probe", dict(OPTIONS, tools=["patch"]))]
    # no reading at all (the check play, a role run on its own): the module reads
    plain = Action(dict(OPTIONS), {"current": "read"})
    assert lr.run(plain, "blackwell.inference.venv_probe", options_of, {})["read_under_lock"] is False and len(plain.calls) == 1


@pytest.mark.parametrize(
    "changed, expected",
    [
        (None, True),  # no condition given: the reading stands on its options alone
        ({}, True),
        ({"toolkit": False, "venv": False}, True),
        ({"toolkit": True, "venv": False}, False),  # the toolkit role installed or relinked
        ({"toolkit": False, "venv": True}, False),  # the venv role built or switched
        ({"toolkit": None, "venv": False}, False),  # cuda_toolkit_changed unknown (the role did not run): changed
        ({"toolkit": False, "venv": None}, False),  # sglang_venv_current unknown
        ({"toolkit": None, "venv": None}, False),  # a run with the service role alone
        ({"toolkit": 0, "venv": ""}, True),  # Jinja's falsy values: what `not (x | default(true))` took as unchanged
        ({"toolkit": "False", "venv": False}, False),  # a non-empty string is true to Jinja too
    ],
)
def test_a_reading_stands_only_when_nothing_since_changed_the_host(changed, expected):
    assert lr.unchanged_since(changed) is expected
