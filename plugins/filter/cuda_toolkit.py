# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

# Each filter is documented in its own <name>.yml beside this file (ansible-doc -t filter).
from ansible_collections.blackwell.inference.plugins.module_utils.cuda import arch as cuda_arch
from ansible_collections.blackwell.inference.plugins.module_utils.cuda import plan as cuda_plan
from ansible_collections.blackwell.inference.plugins.module_utils.flashinfer import jit_smoke
from ansible_collections.blackwell.inference.plugins.plugin_utils.filters import guard


def cuda_package_changes(plan, dpkg_query_stdout):
    return cuda_plan.changes(plan, cuda_plan.parse_installed(dpkg_query_stdout or ""))


def cuda_dpkg_state(dpkg_query_stdout):
    return cuda_plan.dpkg_state(dpkg_query_stdout or "")


def cuda_driver_too_old(driver_version, min_driver):
    return cuda_plan.driver_too_old(driver_version, min_driver)


class FilterModule:
    def filters(self):
        return {
            "cuda_package_plan": guard(cuda_plan.plan),
            "cuda_package_changes": cuda_package_changes,
            "cuda_apt_dry_run": cuda_plan.dry_run,
            "cuda_dpkg_state": cuda_dpkg_state,
            "cuda_driver_too_old": cuda_driver_too_old,
            "cuda_toolkit_host_refusals": cuda_plan.host_refusals,
            "cuda_nvcc_arch": guard(jit_smoke.nvcc_arch),
            "cuda_nvcc_arch_refusals": cuda_arch.nvcc_refusals,
            "cuda_toolkit_home": guard(cuda_plan.home),
            "cuda_toolkit_newest": guard(cuda_plan.newest),
            "cuda_toolkit_repo_url": cuda_plan.repo_url,
            "cuda_toolkit_work": cuda_plan.work,
            "cuda_toolkit_verify_work": cuda_plan.verify_work,
            "cuda_toolkit_variable_refusals": cuda_plan.variable_refusals,
            "cuda_toolkit_summary": cuda_plan.summarize,
            "cuda_toolkit_line": cuda_plan.summary_line,
            "cuda_compile_needed": cuda_plan.compile_needed,
            "cuda_compile_record": cuda_plan.compile_record,
        }
