# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of blackwell.inference.toolkit_probe: the reading site.yml's lock made with the same options (given
as `reading`) is returned without a call to the host (its facts are already the lock task's); otherwise the module
reads."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.blackwell.inference.plugins.plugin_utils import lock_reading

# the options host_lock's read.toolkit is given (the cuda_toolkit role's __cuda_toolkit_read_options)
OPTIONS = ("nvidia_smi", "toolkit_root", "packages", "apt_sources", "compile_record", "links", "apt_repo")


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        result.update(lock_reading.run(self, "blackwell.inference.toolkit_probe", lambda args: {k: args.get(k) for k in OPTIONS}, task_vars))
        return result
