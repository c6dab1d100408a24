# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of blackwell.inference.venv_current: with `marker` (the venv probe's reading of the venv current
points at) the role's result is worked out here, without a call to the host; otherwise the module reads current's
marker (module_utils/venv/info.py current)."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.blackwell.inference.plugins.module_utils.venv import info as venv_info
from ansible_collections.blackwell.inference.plugins.modules.venv_current import ARGUMENT_SPEC  # the module's options


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        if self._task.args.get("marker") is None:
            result.update(self._execute_module(module_name="blackwell.inference.venv_current", module_args=self._task.args, task_vars=task_vars))
            return result
        _validation, p = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        result.update(changed=False, current=venv_info.current(p["marker"], p["root"], p["inputs_hash"], p["changed"], p["switched"], p["previous"]))
        return result
