# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The three roles' variables checked at once, before any role changes anything (the variables_check action): the host
first (common/platform.py), then each role's variables against its argument specs (their types and choices), then
each role's own rules (cuda/plan.py, venv/info.py, service/plan.py variable_refusals). One refusal per wrong variable,
each naming it."""

from __future__ import annotations

import posixpath

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.blackwell.inference.plugins.module_utils.common import platform
from ansible_collections.blackwell.inference.plugins.module_utils.cuda import plan as cuda_plan
from ansible_collections.blackwell.inference.plugins.module_utils.service import list as service_list
from ansible_collections.blackwell.inference.plugins.module_utils.service import plan as service_plan
from ansible_collections.blackwell.inference.plugins.module_utils.venv import info as venv_info

# in the order site.yml runs them
ROLES = ("cuda_toolkit", "sglang_venv", "sglang_service")
RULES = {"cuda_toolkit": cuda_plan.variable_refusals, "sglang_venv": venv_info.variable_refusals, "sglang_service": service_plan.variable_refusals}
# the first service's variables sglang_service_extra_services is resolved against (service/list.py extra_services)
_PRIMARY = ("name", "mode", "venv", "environment", "model_path", "port", "args", "command", "marker")


def _validate(options, given):
    result = ArgumentSpecValidator(options).validate(dict(given), validate_role_argument_spec=True)
    return result.validated_parameters, ["%s." % str(m).rstrip(".") for m in result.error_messages]


def spec_refusals(options, given):
    """(the variables as the role's argument specs take them - their defaults filled in, their types converted -,
    the names of those the specs refuse, the refusals). options: the role's argument_specs main options; given: the
    variables that are set, by name. Each variable is judged on its own first, so that every wrong one is named."""
    bad, refusals = set(), []
    for name, value in given.items():
        _v, msgs = _validate({name: options[name]}, {name: value})
        if msgs:
            bad.add(name)
            refusals += msgs
    v, msgs = _validate(options, {k: val for k, val in given.items() if k not in bad})
    return v, bad, refusals + [m for m in msgs if m not in refusals]


def extras_error(v):
    """sglang_service_extra_services' refusal (resolved against the first service's variables), or None."""
    primary = {k: v["sglang_service_" + k] for k in _PRIMARY}
    return service_list.extra_services(v.get("sglang_service_extra_services"), primary)["error"]


def venv_root(given, v):
    """The venv root the service's cache directory stays out of: sglang_venv_root where the play has it, else the
    directory of the service's venv link when it is a venv role's <root>/current (sglang_service_venv's default), else
    None."""
    if given.get("sglang_venv_root") is not None:
        return given["sglang_venv_root"]
    venv = str(v.get("sglang_service_venv") or "")
    return posixpath.dirname(venv) if venv.startswith("/") and venv.endswith("/current") else None


def check(facts, specs, given, extra_services=True, unresolved=None):
    """{"host": why the roles cannot serve this host or "", "refusals": one per wrong variable}.

    facts: ansible_facts, or None not to judge the host; specs: {role: its argument_specs main options} for the
    roles to check (in ROLES' order); given: every variable that is set, by name (the roles' and sglang_venv_root, the
    venv root the service's cache directory stays out of); extra_services: whether sglang_service_extra_services is
    checked (the first service's run: yes; a further service's own run: no); unresolved: {name: why} for the variables
    whose templates could not be worked out - left to the task that uses them (a wrong variable they derive from is
    refused there, or here, by its own name)."""
    host = (platform.refusal(facts) or "") if facts is not None else ""
    refusals = []
    for role in (r for r in ROLES if r in specs):
        options = specs[role]
        mine = {k: val for k, val in given.items() if k in options}
        v, bad, wrong = spec_refusals(options, mine)
        refusals += wrong
        if wrong and not bad:
            continue  # a rule of the specs across variables (none of them wrong alone): the role's rules need them whole
        # the rules judge the values as written (a path type would expand ~ and $VARS on the controller); a variable of
        # the wrong type is judged as its default, and named once (by the specs)
        v.update({k: val for k, val in mine.items() if k not in bad})
        if role == "sglang_service":
            v["sglang_venv_root"] = venv_root(given, v)
            v["extras_error"] = extras_error(v) if extra_services else None
        refusals += [m for m in RULES[role](v) if not any(m.startswith(n + ":") or m.startswith(n + " ") for n in bad)]
    # a variable whose template could not be worked out is left to the task that uses it (a wrong variable it derives
    # from is refused there, or above, by its own name); the rules saw its default in its place
    skip = tuple(unresolved or ())
    refusals = [m for m in refusals if not any(m.startswith(n + ":") or m.startswith(n + " ") for n in skip)]
    return {"host": host, "refusals": refusals}


def message(result):
    """The one message of a check that refused: the host's reason alone, else every refusal."""
    return result["host"] or ("Refused before any change. " + " ".join(result["refusals"]) if result["refusals"] else "")
