# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    # the probes' option `reading` and their action plugins (plugins/action, plugin_utils/lock_reading.py)
    DOCUMENTATION = r"""
options:
  reading:
    description:
      - A reading made under the play's lock, as M(blackwell.inference.host_lock) returns it under C(read) for this
        probe (C(read.toolkit), C(read.venv) or C(read.service)).
      - The action returns it as this task's result, its facts included, and reads nothing when it was made with exactly
        this task's other options and did not fail; otherwise the module reads. The module itself never sees this
        option.
    type: dict
attributes:
  action:
    description: The controller side returns a given O(reading) that stands without a call to the host.
    support: full
"""
