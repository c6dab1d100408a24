# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

# Each filter is documented in its own <name>.yml beside this file (ansible-doc -t filter). The role's plan is not a
# filter: the venv_probe action returns it with its reading (module_utils/venv/info.py role_plan).
from ansible_collections.blackwell.inference.plugins.plugin_utils.filters import module


def sglang_venv_pip_check(result, no_deps=None):
    if isinstance(result, str):  # pip check's output alone
        result = {"rc": 1 if result.strip() and result.strip() != "No broken requirements found." else 0, "stdout": result}
    passed, kept, skipped = module("venv.info").pip_check_verdict(result, no_deps or [])
    return {"passed": passed, "problems": kept, "set_aside": skipped}


class FilterModule:
    def filters(self):
        return {
            # a venv's pip check, for a playbook of one's own too
            "sglang_venv_pip_check": sglang_venv_pip_check,
        }
