"""The three roles' variables checked at once (host/variables.py, the variables_check action; issue 47 item 5): the
host first, then each role's argument specs, then its rules, one refusal per wrong variable naming it; and the action
takes the play's variables as site.yml has them, on the controller."""

import os
import re

import pytest
import yaml

from ansible_collections.blackwell.inference.plugins.action import variables_check as action
from ansible_collections.blackwell.inference.plugins.module_utils.host import variables

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", ".."))
SPECS = {role: action.role_options(role) for role in variables.ROLES}
NAMES = {n for options in SPECS.values() for n in options}
FACTS = {
    "os_family": "Debian",
    "distribution": "Debian",
    "distribution_version": "12.8",
    "service_mgr": "systemd",
    "python": {"version": {"major": 3, "minor": 11, "micro": 2}},
}


def defaults(role):
    with open(os.path.join(ROOT, "roles", role, "defaults", "main.yml")) as fh:
        return yaml.safe_load(fh)


# the roles' defaults, with what their templates give on the lab host
GOOD = dict(
    defaults("cuda_toolkit"),
    **defaults("sglang_venv"),
    **dict(defaults("sglang_service"), sglang_service_venv="/opt/sglang/current", sglang_service_cuda_home="/usr/local/cuda-13.0"),
)


def named(msg):
    return {n for n in NAMES if re.search(r"(?<![A-Za-z0-9_])%s(?![A-Za-z0-9_])" % n, msg)}


def test_the_roles_defaults_pass():
    assert variables.check(FACTS, SPECS, GOOD) == {"host": "", "refusals": []}
    assert variables.message(variables.check(FACTS, SPECS, GOOD)) == ""


def test_the_roles_argument_specs_are_what_the_action_reads():
    for role in variables.ROLES:
        with open(os.path.join(ROOT, "roles", role, "meta", "argument_specs.yml")) as fh:
            assert SPECS[role] == yaml.safe_load(fh)["argument_specs"]["main"]["options"]


@pytest.mark.parametrize(
    "name, value",
    [
        # a rule of each role
        ("cuda_toolkit_root", "usr/local"),
        ("cuda_toolkit_repo_arch", "arm64"),
        ("sglang_venv_keep", 1),
        ("sglang_venv_root", "/opt"),
        ("sglang_service_cache_dir", "/opt"),
        ("sglang_service_cache_dir", "/srv/c /etc"),
        ("sglang_service_cache_dir", "/opt/sglang/cache"),  # inside the venv root (sglang_venv_root's default)
        ("sglang_service_port", 70000),
        # a type or a choice of each role's argument specs (the role's own rules would not see them)
        ("cuda_toolkit_apt_retries", "many"),
        ("cuda_toolkit_method", "not-a-choice"),
        ("sglang_venv_bytecode", "perhaps"),
        ("sglang_venv_packages", {"not": "a list"}),
        ("sglang_service_port", "many"),
        ("sglang_service_mode", "sidecar"),
        ("sglang_service_environment", "not-a-dict"),
        ("sglang_service_extra_services", [{"name": "sglang-eagle3", "mode": "sidecar"}]),
    ],
)
def test_each_wrong_variable_is_refused_by_its_name_only(name, value):
    got = variables.check(FACTS, SPECS, dict(GOOD, **{name: value}))
    assert got["host"] == ""
    (msg,) = got["refusals"]
    assert named(msg) <= {name, "sglang_service_name"} and name in named(msg), msg  # an extra service names its first
    assert variables.message(got).startswith("Refused before any change. ")


def test_a_refusal_of_each_role_in_one_message_in_the_roles_order():
    got = variables.check(FACTS, SPECS, dict(GOOD, sglang_service_port=0, sglang_venv_keep=1, cuda_toolkit_repo_arch="arm64"))
    assert [next(iter(named(m))) for m in got["refusals"]] == ["cuda_toolkit_repo_arch", "sglang_venv_keep", "sglang_service_port"]


def test_only_the_roles_asked_for_are_checked():
    bad = dict(GOOD, sglang_service_port=0, sglang_venv_keep=1)
    assert variables.check(FACTS, {"sglang_venv": SPECS["sglang_venv"]}, bad)["refusals"] == [
        "sglang_venv_keep: >= 2, the current venv counts and a rollback needs the previous one (got 1)."
    ]
    assert variables.check(FACTS, {}, bad) == {"host": "", "refusals": []}


def test_a_string_of_digits_is_taken_where_the_spec_converts_it():
    assert variables.check(FACTS, SPECS, dict(GOOD, sglang_service_smoke_timeout="1800", sglang_venv_keep="3"))["refusals"] == []


def test_the_host_first_and_alone():
    got = variables.check(dict(FACTS, os_family="RedHat"), SPECS, dict(GOOD, sglang_venv_keep=1))
    assert "OS family is RedHat" in got["host"]
    assert variables.message(got) == got["host"]
    assert "no facts about this host" in variables.check({}, SPECS, GOOD)["host"]
    assert variables.check(None, SPECS, GOOD)["host"] == ""  # not judged


def test_extra_services_are_checked_with_the_first_service_only():
    extras = dict(GOOD, sglang_service_extra_services=[{"name": GOOD["sglang_service_name"]}])  # the first one's name again
    (msg,) = variables.check(FACTS, SPECS, extras)["refusals"]
    assert msg.startswith("sglang_service_extra_services")
    assert variables.check(FACTS, SPECS, extras, extra_services=False)["refusals"] == []


def test_a_template_that_cannot_be_worked_out_is_left_to_the_task_that_uses_it():
    # cuda_toolkit_versions ['13.x'] breaks sglang_service_cuda_home's default: the toolkit's plan refuses it by name
    why = {"sglang_service_cuda_home": "boom"}
    unset = {k: v for k, v in GOOD.items() if k != "sglang_service_cuda_home"}
    assert variables.check(FACTS, SPECS, unset, unresolved=why)["refusals"] == []
    (msg,) = variables.check(FACTS, SPECS, dict(unset, cuda_toolkit_versions={"not": "a list"}), unresolved=why)["refusals"]
    assert "cuda_toolkit_versions" in msg


def test_an_empty_interpreter_is_refused_by_name():
    (msg,) = variables.check(FACTS, SPECS, dict(GOOD, sglang_venv_python=""))["refusals"]
    assert msg.startswith("sglang_venv_python: ")


def test_the_rules_see_the_value_as_written():
    # type: path would expand ~ and $HOME on the controller; the rule judges what the host would get
    (msg,) = variables.check(FACTS, SPECS, dict(GOOD, sglang_venv_root="~/venvs"))["refusals"]
    assert "(got ~/venvs)" in msg


def test_a_wrong_type_and_a_broken_rule_of_one_role_are_both_named():
    got = variables.check(FACTS, SPECS, dict(GOOD, sglang_service_port="many", sglang_service_cache_dir="/srv/c /etc", sglang_venv_keep="x"))
    assert [sorted(named(m)) for m in got["refusals"]] == [["sglang_venv_keep"], ["sglang_service_port"], ["sglang_service_cache_dir"]]
    assert "unable to convert to int" in got["refusals"][1] and "one path" in got["refusals"][2]


def test_the_cache_dir_stays_out_of_the_venv_root_the_service_runs_from_when_the_play_has_no_venv_root():
    # site.yml's check play runs each role on its own: the venv role's defaults are not the service role's variables
    service = {k: v for k, v in GOOD.items() if k.startswith("sglang_service_")}
    only = {"sglang_service": SPECS["sglang_service"]}
    (msg,) = variables.check(FACTS, only, dict(service, sglang_service_cache_dir="/opt/sglang/cache"))["refusals"]
    assert "not inside or above the venv root /opt/sglang" in msg
    moved = dict(service, sglang_service_venv="/srv/inference/current", sglang_service_cache_dir="/srv/inference")
    assert "the venv root /srv/inference" in variables.check(FACTS, only, moved)["refusals"][0]
    assert variables.check(FACTS, only, dict(service, sglang_service_venv="/root/venv_sglang211", sglang_service_cache_dir="/root/cache"))["refusals"] == []
