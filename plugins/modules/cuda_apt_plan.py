#!/usr/bin/python
# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: cuda_apt_plan
short_description: apt's dry run of the pinned CUDA packages, and its verdict
version_added: "0.4.0"
description:
  - Runs C(apt-get --simulate --no-install-recommends --allow-change-held-packages install) with the packages given
    (an argument list) and judges what apt would do from its C(Inst) and C(Remv) lines. Changes nothing, also in check
    mode (apt only simulates).
  - Refused, and the module fails with the reason as its message and apt's C(rc), C(stdout) and C(stderr) - apt cannot
    plan the packages (the message names O(repo_base_url)), the plan installs a driver package (C(nvidia-*),
    C(libnvidia-*), C(cuda-drivers*)), or it removes any package. Otherwise RV(msg) says what apt would install (the
    cuda_toolkit role shows it with a C(debug) task).
  - The logic lives in C(module_utils/cuda/plan.py) (C(dry_run)).
author:
  - Blackwell Inference maintainers (@blackwell-inference)
options:
  packages:
    description: The pinned packages (C(name=version)), as the role's plan lists them.
    type: list
    elements: str
    required: true
  repo_base_url:
    description: C(cuda_toolkit_repo_base_url), named in the refusal when apt cannot plan; credentials in it are left out.
    type: str
    default: ""
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - blackwell.inference.attributes.check_mode_full
  - blackwell.inference.attributes.diff_none
  - blackwell.inference.attributes.debian
attributes:
  action:
    description: A plain module; no controller side.
    support: none
"""

EXAMPLES = r"""
- name: The plan installs no driver and removes nothing
  blackwell.inference.cuda_apt_plan:
    packages: [cuda-toolkit-config-common=13.0.96-1, cuda-nvcc-13-0=13.0.88-1]
    repo_base_url: https://developer.download.nvidia.com/compute/cuda/repos
"""

RETURN = r"""
ok:
  description: Whether the plan is accepted (false only in a failed result).
  returned: always
  type: bool
installs:
  description: The package names apt would install or upgrade.
  returned: always
  type: list
  elements: str
  sample: [cuda-nvcc-13-0, cuda-cudart-13-0]
msg:
  description: What apt would install, or why the plan is refused.
  returned: always
  type: str
  sample: "apt would install 2 package(s): cuda-nvcc-13-0, cuda-cudart-13-0"
cmd:
  description: apt's argument list.
  returned: always
  type: list
  elements: str
rc:
  description: apt's exit status.
  returned: always
  type: int
stdout:
  description: apt's output.
  returned: always
  type: str
stderr:
  description: apt's errors.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.blackwell.inference.plugins.module_utils.cuda import plan as cuda_plan


def main():
    module = AnsibleModule(
        argument_spec=dict(
            packages=dict(type="list", elements="str", required=True),
            repo_base_url=dict(type="str", default=""),
        ),
        supports_check_mode=True,
    )
    argv = cuda_plan.dry_run_argv(module.params["packages"])
    try:
        rc, stdout, stderr = module.run_command(argv, handle_exceptions=False)
    except OSError as exc:  # no apt-get: apt cannot plan (rc: the error's number)
        rc, stdout, stderr = exc.errno, "", ""
    res = {"cmd": argv, "rc": rc, "stdout": stdout.rstrip("\r\n"), "stderr": stderr.rstrip("\r\n")}
    verdict = cuda_plan.dry_run(res, module.params["repo_base_url"])
    res.update(verdict, changed=False)
    if not verdict["ok"]:
        module.fail_json(**res)
    module.exit_json(**res)


if __name__ == "__main__":
    main()
