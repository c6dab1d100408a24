# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: cuda_package_plan
short_description: The exact NVIDIA packages (name=version) that make up the CUDA toolkits wanted
version_added: "0.1.0"
description:
  - Expands full CUDA releases (X.Y.Z) into NVIDIA's per-version package names with pinned versions,
    config-common packages first. Fails on an unknown pin or a package that pulls the driver or floats.
author:
  - Blackwell Inference maintainers (@blackwell-inference)
positional: components, known, overrides
options:
  _input:
    description: Full releases wanted, e.g. C(["13.0.2"]).
    type: list
    elements: str
    required: true
  components:
    description: C(slim) or C(full).
    type: str
    required: true
  known:
    description: "Release table, C({release: {min_driver, packages: {name: version}}})."
    type: dict
    required: true
  overrides:
    description: "Extra pins per release, C({release: {name: version}})."
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Plan
  ansible.builtin.debug:
    msg: "{{ ['13.0.2'] | blackwell.inference.cuda_package_plan('slim', releases_table) }}"
"""

RETURN = r"""
_value:
  description: "One entry per release - C(release), C(version) (X.Y) and C(packages) (name=version, in install order)."
  type: list
  elements: dict
"""

from ansible.errors import AnsibleFilterError  # noqa: E402 - after the documentation, as in every plugin

from ansible_collections.blackwell.inference.plugins.module_utils import cuda_plan, jit_smoke  # noqa: E402


def cuda_package_plan(releases, components, known, overrides=None):
    try:
        return cuda_plan.plan(releases, components, known, overrides)
    except cuda_plan.PlanError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def cuda_nvcc_arch(entry):
    try:
        return jit_smoke.nvcc_arch(entry)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc)) from exc


def cuda_driver_too_old(driver_version, min_driver):
    return cuda_plan.driver_too_old(driver_version, min_driver)


class FilterModule:
    def filters(self):
        return {
            "cuda_package_plan": cuda_package_plan,
            "cuda_driver_too_old": cuda_driver_too_old,
            "cuda_nvcc_arch": cuda_nvcc_arch,
            "cuda_toolkit_summary": cuda_plan.summarize,
            "cuda_toolkit_line": cuda_plan.summary_line,
        }
