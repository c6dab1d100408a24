# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

# Each filter is documented in its own <name>.yml beside this file (ansible-doc -t filter). The role's plan is not a
# filter: the toolkit_probe action returns it with its reading (module_utils/cuda/plan.py role_plan).
from ansible_collections.blackwell.inference.plugins.module_utils.cuda import arch as cuda_arch
from ansible_collections.blackwell.inference.plugins.module_utils.cuda import plan as cuda_plan
from ansible_collections.blackwell.inference.plugins.plugin_utils.filters import guard


class FilterModule:
    def filters(self):
        return {
            # general tools, for a playbook of one's own too
            "cuda_nvcc_arch": guard(cuda_arch.nvcc_for_entry),
            "cuda_toolkit_home": guard(cuda_plan.home),
            # the role's checks of its variables, and the results of tasks that run after the probe's plan
            "cuda_toolkit_variable_refusals": cuda_plan.variable_refusals,
            "cuda_apt_dry_run": cuda_plan.dry_run,
            "cuda_compile_needed": cuda_plan.compile_needed,
            "cuda_compile_record": cuda_plan.compile_record,
            "cuda_toolkit_summary": cuda_plan.summarize,
            "cuda_toolkit_line": cuda_plan.summary_line,
        }
