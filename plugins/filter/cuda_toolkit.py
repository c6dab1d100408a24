# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

# Each filter is documented in its own <name>.yml beside this file (ansible-doc -t filter).
from ansible.errors import AnsibleFilterError

from ansible_collections.blackwell.inference.plugins.module_utils import cuda_plan, jit_smoke


def cuda_package_plan(releases, components, known, overrides=None):
    try:
        return cuda_plan.plan(releases, components, known, overrides)
    except cuda_plan.PlanError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def cuda_toolkit_home(releases, root="/usr/local"):
    try:
        return cuda_plan.home(releases, root)
    except cuda_plan.PlanError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def cuda_nvcc_arch(entry):
    try:
        return jit_smoke.nvcc_arch(entry)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def cuda_package_changes(plan, dpkg_query_stdout):
    return cuda_plan.changes(plan, cuda_plan.parse_installed(dpkg_query_stdout or ""))


def cuda_dpkg_state(dpkg_query_stdout):
    return cuda_plan.dpkg_state(dpkg_query_stdout or "")


def cuda_driver_too_old(driver_version, min_driver):
    return cuda_plan.driver_too_old(driver_version, min_driver)


class FilterModule:
    def filters(self):
        return {
            "cuda_package_plan": cuda_package_plan,
            "cuda_package_changes": cuda_package_changes,
            "cuda_dpkg_state": cuda_dpkg_state,
            "cuda_driver_too_old": cuda_driver_too_old,
            "cuda_nvcc_arch": cuda_nvcc_arch,
            "cuda_toolkit_home": cuda_toolkit_home,
            "cuda_toolkit_summary": cuda_plan.summarize,
            "cuda_toolkit_line": cuda_plan.summary_line,
            "cuda_compile_needed": cuda_plan.compile_needed,
            "cuda_compile_record": cuda_plan.compile_record,
        }
