# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

# Each filter is documented in its own <name>.yml beside this file (ansible-doc -t filter).
from ansible_collections.blackwell.inference.plugins.module_utils import venv_info


def sglang_venv_pip_check(stdout, no_deps=None):
    kept, skipped = venv_info.pip_check_problems(stdout, no_deps or [])
    return {"problems": kept, "set_aside": skipped}


class FilterModule:
    def filters(self):
        return {"sglang_venv_pip_check": sglang_venv_pip_check}
