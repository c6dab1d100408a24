# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of blackwell.inference.service_probe: the reading site.yml's lock made with the same options (given
as `reading`) is returned, facts included, without a call to the host; otherwise the module reads."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.blackwell.inference.plugins.plugin_utils import lock_reading

# the options host_lock's read.service is given (module_utils/service_read.py PARAMS)
OPTIONS = ("marker", "cuda_home", "jit_dir", "snapshot_store", "unit", "facts", "summary_facts", "health", "observe")


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        result.update(lock_reading.run(self, "blackwell.inference.service_probe", lambda args: {k: args.get(k) for k in OPTIONS}, task_vars))
        return result
