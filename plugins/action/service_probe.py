# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of blackwell.inference.service_probe: a reading made under the play's lock with the same options
(host_lock's read.service, given as `reading`) is returned as this task's result, its facts included, without a call
to the host; otherwise the module reads."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

# what host_lock adds to a reading, not part of service_probe's result
_LOCK_KEYS = ("options", "failed", "msg")


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        reading = args.pop("reading", None)
        if reading:
            result.update({k: v for k, v in reading.items() if k not in _LOCK_KEYS})
            result.update(changed=False, read_under_lock=True)
            return result
        result.update(self._execute_module(module_name="blackwell.inference.service_probe", module_args=args, task_vars=task_vars))
        result["read_under_lock"] = False
        return result
