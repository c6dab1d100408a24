# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    # the collection's callbacks (plugins/callback): what they read to stay quiet under a JSON stdout callback
    DOCUMENTATION = r"""
options:
  stdout_callback:
    description:
      - The run's stdout callback, read from ansible-core's own setting; under one whose name ends in C(json) the
        callback prints nothing, so the output stays JSON.
    type: str
    default: ansible.builtin.default
    env:
      - name: ANSIBLE_STDOUT_CALLBACK
    ini:
      - section: defaults
        key: stdout_callback
"""
