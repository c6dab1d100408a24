# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""blackwell.inference.variables_check, on the controller only: each role's variables as the play has them (templated
one by one: a template that cannot be worked out is passed on as such), checked by module_utils/host/variables.py
against the role's argument specs and its own rules. Nothing is sent to the host."""

from __future__ import annotations

import os

import yaml
from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase

from ansible_collections.blackwell.inference.plugins.module_utils.host import variables

# the roles beside plugins/ in this collection
ROLES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "roles")
_SPECS = {}


def role_options(role):
    """The role's argument_specs main options, read once per process."""
    if role not in _SPECS:
        with open(os.path.join(ROLES_DIR, role, "meta", "argument_specs.yml"), encoding="utf-8") as fh:
            _SPECS[role] = yaml.safe_load(fh)["argument_specs"]["main"]["options"]
    return _SPECS[role]


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        args = self._task.args
        roles = list(args.get("roles") or variables.ROLES)
        unknown = [r for r in roles if r not in variables.ROLES]
        if unknown:
            return dict(result, failed=True, msg="roles: %s, not %s" % (", ".join(variables.ROLES), ", ".join(map(str, unknown))))
        specs = {r: role_options(r) for r in roles} if args.get("variables", True) else {}
        names = {n for options in specs.values() for n in options}
        if "sglang_service" in specs:
            names.add("sglang_venv_root")  # the cache directory stays out of the venv root
        given, unresolved = {}, {}
        for name in sorted(n for n in names if n in task_vars):
            try:
                value = self._templar.template(task_vars[name])
                if isinstance(value, str) and "{{" in value:
                    raise AnsibleError("a template that did not render")
                given[name] = value
            except AnsibleError as exc:
                unresolved[name] = str(exc).splitlines()[0][:200]
        facts = (task_vars.get("ansible_facts") or {}) if args.get("host", True) else None
        checked = variables.check(facts, specs, given, extra_services=args.get("extra_services", True), unresolved=unresolved)
        result.update(checked, changed=False)
        msg = variables.message(checked)
        if msg:
            result.update(failed=True, msg=msg)
        return result
