# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of blackwell.inference.venv_probe: the reading site.yml's lock made with the same options (given as
`reading`) is returned without a call to the host; otherwise the module reads. With `plan`, the role's plan worked out
from that reading is returned beside it (module_utils/venv/info.py role_plan)."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.blackwell.inference.plugins.module_utils.venv import info as venv_info
from ansible_collections.blackwell.inference.plugins.plugin_utils import lock_reading

# the options host_lock's read.venv is given (the sglang_venv role's sglang_venv_read_options)
OPTIONS = ("root", "python", "tools")


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        options = self._task.args.pop("plan", None)
        result.update(lock_reading.run(self, "blackwell.inference.venv_probe", lambda args: {k: args.get(k) for k in OPTIONS}, task_vars))
        if options is not None and not result.get("failed"):
            result["plan"] = venv_info.role_plan(result, options)
        return result
