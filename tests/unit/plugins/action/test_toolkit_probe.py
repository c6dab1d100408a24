"""The toolkit probe's action: apt's logins file is compared with what the role would write on the host
(secret_file's state checked), never by its text or a digest of it in the reading; a changed credential on a host whose
pins are met makes the plan's apt_access (issue 47)."""

import json
import os

import pytest
from ansible.plugins.action import ActionBase

from ansible_collections.blackwell.inference.plugins.action import toolkit_probe
from ansible_collections.blackwell.inference.plugins.modules import secret_file

AUTH = "/etc/apt/auth.conf.d/90blackwell-inference.conf"
PROXY = "/etc/apt/apt.conf.d/90blackwell-inference-proxy"


class FakeTask:
    def __init__(self, args):
        self.args = args


def run_action(monkeypatch, reading, options, matches=True):
    """The action's run over a reading, with the role's plan options: (result, the secret_file calls it made)."""
    calls = []
    monkeypatch.setattr(ActionBase, "run", lambda self, tmp=None, task_vars=None: {})
    monkeypatch.setattr(toolkit_probe.lock_reading, "run", lambda _a, _n, _o, _v: json.loads(json.dumps(reading)))
    monkeypatch.setattr(toolkit_probe.cuda_plan, "released", lambda *a: None)
    monkeypatch.setattr(toolkit_probe.cuda_plan, "role_plan", lambda r, f, o: {"reading": r})
    action = toolkit_probe.ActionModule.__new__(toolkit_probe.ActionModule)
    action._task = FakeTask({"apt_access": {"proxy": PROXY, "auth": AUTH}, "plan": options})

    def execute(module_name, module_args, task_vars):
        calls.append((module_name, module_args))
        return {"changed": False, "matches": matches} if matches is not None else {"failed": True, "msg": "boom"}

    action._execute_module = execute
    return action.run(task_vars={}), calls


THERE = {"apt_access": {"proxy": {"exists": False}, "auth": {"exists": True, "mode": 0o600, "uid": 0}}}
GONE = {"apt_access": {"proxy": {"exists": False}, "auth": {"exists": False}}}
WITH_LOGIN = {"repo_base_url": "https://u:s3cret@m.example/r", "repo_key_url": "", "http_proxy": "", "https_proxy": ""}
WITHOUT = {"repo_base_url": "https://m.example/r", "repo_key_url": "", "http_proxy": "", "https_proxy": ""}


@pytest.mark.parametrize(
    "reading, options, matches, asked, auth_matches",
    [
        (THERE, WITH_LOGIN, True, True, True),
        (THERE, WITH_LOGIN, False, True, False),  # another password in the file: written again
        (THERE, WITHOUT, True, False, None),  # no logins to write: the file goes, nothing to ask
        (GONE, WITH_LOGIN, True, False, None),  # no file: written, nothing to ask
    ],
)
def test_the_logins_file_is_compared_on_the_host_only_when_both_are_there(monkeypatch, reading, options, matches, asked, auth_matches):
    got, calls = run_action(monkeypatch, reading, options, matches)
    assert bool(calls) is asked and got["plan"]["reading"]["apt_access"].get("auth_matches") is auth_matches
    if asked:
        assert calls == [("blackwell.inference.secret_file", {"path": AUTH, "logins": ["https://u:s3cret@m.example/r"], "state": "checked"})]
    assert "s3cret" not in json.dumps({k: v for k, v in got.items() if k != "plan"})


def test_a_comparison_that_fails_fails_the_probe(monkeypatch):
    got, _calls = run_action(monkeypatch, THERE, WITH_LOGIN, None)
    assert got["failed"] and got["msg"] == "cannot compare apt's logins file %s with the role's: boom" % AUTH


class Done(Exception):
    pass


def run_secret_file(monkeypatch, params, check_mode=False):
    got = {}

    class Module:
        def __init__(self, argument_spec, mutually_exclusive, supports_check_mode):
            self.params = {k: params.get(k, spec.get("default")) for k, spec in argument_spec.items()}
            self.check_mode = check_mode

        def exit_json(self, **result):
            got.update(result)
            raise Done

        fail_json = exit_json

    monkeypatch.setattr(secret_file, "AnsibleModule", Module)
    with pytest.raises(Done):
        secret_file.main()
    return got


def test_secret_files_state_checked_compares_and_changes_nothing(monkeypatch, tmp_path):
    path = tmp_path / "auth.conf"
    logins = ["https://u:s3cret@m.example/r"]
    got = run_secret_file(monkeypatch, {"path": str(path), "logins": logins, "state": "checked"})
    assert (got["changed"], got["matches"], got["present"]) == (False, False, False) and not path.exists()
    got = run_secret_file(monkeypatch, {"path": str(path), "logins": logins})  # present: written
    assert got["changed"] and got["matches"] is False and oct(path.stat().st_mode & 0o777) == "0o600"
    was = path.read_bytes()
    got = run_secret_file(monkeypatch, {"path": str(path), "logins": logins, "state": "checked"})
    assert (got["changed"], got["matches"], got["present"]) == (False, True, True)
    got = run_secret_file(monkeypatch, {"path": str(path), "logins": ["https://u:other@m.example/r"], "state": "checked"})
    assert (got["changed"], got["matches"]) == (False, False) and path.read_bytes() == was
    os.chmod(path, 0o644)  # the right logins, readable by others: not as present leaves it
    assert run_secret_file(monkeypatch, {"path": str(path), "logins": logins, "state": "checked"})["matches"] is False
    got = run_secret_file(monkeypatch, {"path": str(path), "logins": [], "state": "checked"})  # none wanted: it would go
    assert (got["changed"], got["matches"]) == (False, False) and path.exists()
