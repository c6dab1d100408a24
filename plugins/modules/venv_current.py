#!/usr/bin/python
# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: venv_current
short_description: The sglang_venv role's result sglang_venv_current, from the marker of the venv current points at
version_added: "0.4.0"
description:
  - Reads C(<root>/current/.blackwell-venv.json), the completion marker of the venv C(current) points at, and returns
    the role's result from it as RV(current). Changes nothing, also in check mode.
  - With O(marker) (the marker as the role's probe read it, when C(current) points at that venv), nothing is read - the
    action plugin answers on the controller, without a call to the host.
  - No C(current), or no marker there, gives a result without a venv (C(hash) null, no versions). A marker that is not
    JSON fails the module, naming the file - the build writes it whole, so it was changed by hand.
  - The logic lives in C(module_utils/venv/info.py) (C(current)).
author:
  - Blackwell Inference maintainers (@blackwell-inference)
options:
  root:
    description: The role's root directory (C(sglang_venv_root)), as the result names it.
    type: str
    required: true
  inputs_hash:
    description: The name of the venv of this run's inputs (RV(current.matches_inputs) says whether current points at it).
    type: str
    required: true
  changed:
    description: Returned as RV(current.changed) - the role built, switched or pruned in this run.
    type: bool
    default: false
  switched:
    description: Returned as RV(current.switched) - C(current) moved in this run.
    type: bool
    default: false
  marker:
    description: The marker of the venv C(current) points at, as already read (parsed); given, nothing is read.
    type: dict
  previous:
    description: Returned as RV(current.previous) - where C(current) pointed before this run (the venv role's plan).
    type: str
    version_added: 0.4.0
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - blackwell.inference.attributes
attributes:
  action:
    description: The controller side answers without a call to the host when O(marker) is given.
    support: full
"""

EXAMPLES = r"""
- name: The venv current points at, after a build or a switch
  blackwell.inference.venv_current:
    root: /opt/sglang
    inputs_hash: 119f0a510a34ff5f
    changed: true
    switched: true
  register: venv
"""

RETURN = r"""
current:
  description: The sglang_venv role's result (C(sglang_venv_current)).
  returned: always
  type: dict
  contains:
    path:
      description: The stable link, C(<root>/current).
      type: str
      sample: /opt/sglang/current
    dir:
      description: C(<root>/venvs/<hash>) of the marker's hash (C(<root>/venvs/) without a marker).
      type: str
      sample: /opt/sglang/venvs/119f0a510a34ff5f
    hash:
      description: The venv's name, the hash of its inputs (null without a marker).
      type: str
      sample: 119f0a510a34ff5f
    versions:
      description: The versions of the packages the build recorded.
      type: dict
      sample: {sglang: 0.5.23, flashinfer-python: 0.7.2, torch: 2.14.1, sglang-kernel: 0.4.10}
    torch_cuda:
      description: torch's CUDA lane (null for a CPU torch or without a marker).
      type: str
      sample: "13.0"
    patches:
      description: The file names of the patches applied.
      type: list
      elements: str
    no_deps:
      description: The packages installed without their dependencies.
      type: list
      elements: str
    pip_check_set_aside:
      description: How many lines of pip check about those packages were set aside.
      type: int
    matches_inputs:
      description: Whether current is the venv of this run's inputs (O(inputs_hash)).
      type: bool
    changed:
      description: Built, switched or pruned in this run, as given (O(changed)).
      type: bool
    switched:
      description: C(current) moved in this run, as given (O(switched)).
      type: bool
    previous:
      description: Where C(current) pointed before this run, as given (O(previous)); the link a later refusal puts back.
      type: str
      version_added: 0.4.0
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.blackwell.inference.plugins.module_utils.venv import info as venv_info

# the action plugin checks the same options when it answers on the controller (plugins/action/venv_current.py)
ARGUMENT_SPEC = dict(
    root=dict(type="str", required=True),
    inputs_hash=dict(type="str", required=True),
    changed=dict(type="bool", default=False),
    switched=dict(type="bool", default=False),
    marker=dict(type="dict"),
    previous=dict(type="str"),
)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    marker = p["marker"]
    if marker is None:
        try:
            marker = venv_info.read_current(p["root"])
        except venv_info.VenvError as exc:
            module.fail_json(msg=str(exc))
    module.exit_json(changed=False, current=venv_info.current(marker, p["root"], p["inputs_hash"], p["changed"], p["switched"], p["previous"]))


if __name__ == "__main__":
    main()
