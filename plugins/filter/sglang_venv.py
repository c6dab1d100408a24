# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

# Each filter is documented in its own <name>.yml beside this file (ansible-doc -t filter).
from ansible_collections.blackwell.inference.plugins.module_utils.venv import info as venv_info


def sglang_venv_pip_check(result, no_deps=None):
    if isinstance(result, str):  # pip check's output alone
        result = {"rc": 1 if result.strip() and result.strip() != "No broken requirements found." else 0, "stdout": result}
    passed, kept, skipped = venv_info.pip_check_verdict(result, no_deps or [])
    return {"passed": passed, "problems": kept, "set_aside": skipped}


def sglang_venv_prune_plan(venvs, this_dir, link_target, local_facts=None, keep=2):
    return venv_info.prune_plan(venvs or [], this_dir, link_target or "", local_facts or {}, keep)


class FilterModule:
    def filters(self):
        return {
            "sglang_venv_pip_check": sglang_venv_pip_check,
            "sglang_venv_no_deps_accepted": venv_info.no_deps_accepted,
            "sglang_venv_prune_plan": sglang_venv_prune_plan,
            "sglang_venv_inputs_plan": venv_info.inputs_plan,
            "sglang_venv_current": venv_info.current,
            "sglang_venv_variable_refusals": venv_info.variable_refusals,
        }
