# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of blackwell.inference.cuda_apt_plan: the module's answer, its message shown also when the plan is
accepted (what apt would install), as ansible.builtin.assert shows its success_msg."""

from __future__ import annotations

from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        result.update(self._execute_module(module_name="blackwell.inference.cuda_apt_plan", module_args=self._task.args, task_vars=task_vars))
        if not result.get("failed"):
            result["_ansible_verbose_always"] = True
        return result
