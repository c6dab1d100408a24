# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

# Each filter is documented in its own <name>.yml beside this file (ansible-doc -t filter). The role's plan is not a
# filter: the toolkit_probe action returns it with its reading (module_utils/cuda/plan.py role_plan). Each filter
# imports its module_utils when called (plugin_utils/filters.py).
from ansible_collections.blackwell.inference.plugins.plugin_utils.filters import call


class FilterModule:
    def filters(self):
        return {
            # general tools, for a playbook of one's own too
            "cuda_nvcc_arch": call("cuda.arch", "nvcc_for_entry", guarded=True),
            "cuda_toolkit_home": call("cuda.plan", "home", guarded=True),
            # the role's summary of the toolkits, from the results of tasks that run after the probe's plan
            "cuda_toolkit_summary": call("cuda.plan", "summarize"),
            "cuda_toolkit_line": call("cuda.plan", "summary_line"),
        }
