# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of blackwell.inference.service_health: given `look` (an earlier look at the service, service_probe's
`health`) that stands and that nothing of `changed_since` made stale (module_utils/service/ready.py health_stands), the
task is skipped without a call to the host, as a task whose condition is false; otherwise the module asks the service,
with the module's own options only."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.blackwell.inference.plugins.module_utils.service import ready
from ansible_collections.blackwell.inference.plugins.modules.service_health import ARGUMENT_SPEC, REQUIRED_BY  # the module's options

# the action's options, never sent to the host
OWN = ("look", "changed_since")
SKIP_REASON = "the look given stands: the service answered it, and nothing of it changed since"


def skipped(look, changed_since):
    """The task's result when the look stands for the health check (a skipped task's), else None."""
    if not ready.health_stands(look, **changed_since):
        return None
    return {"changed": False, "skipped": True, "skip_reason": SKIP_REASON}


def module_args(args):
    """The task's options without the action's own."""
    return {k: v for k, v in args.items() if k not in OWN}


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        if any(k in self._task.args for k in OWN):
            _validation, p = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC, required_by=REQUIRED_BY)
            answer = skipped(p["look"], p["changed_since"])
            if answer is not None:
                result.update(answer)
                return result
        result.update(self._execute_module(module_name="blackwell.inference.service_health", module_args=module_args(self._task.args), task_vars=task_vars))
        return result
