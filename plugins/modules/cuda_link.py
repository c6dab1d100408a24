#!/usr/bin/python
# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: cuda_link
short_description: Keep /usr/local/cuda and every /usr/local/cuda-<major> where they were, whatever made them
version_added: "0.3.0"
description:
  - NVIDIA's C(cuda-toolkit-X-Y-config-common) packages register C(/usr/local/cuda) and C(/usr/local/cuda-<X>) with
    update-alternatives in auto mode; that replaces any symlink there (a runfile's plain link, a hand-made one) and
    points it at the newest toolkit. This module pins each link before anything is installed - its toolkit registered
    in the link's group when it is not yet, the group set to manual mode on it - so no package can move it.
  - On first contact it writes where each link points to O(record); from then on the record says where the links
    belong. A link moved behind the role's back is put back and reported (O(phase=verify) fails instead).
  - A C(/usr/local/cuda) that is a real directory is kept as it is (update-alternatives never replaces one).
  - A host it cannot keep (a recorded toolkit that is gone, a directory where a link was) is refused before any change,
    with the variable to set.
author:
  - Blackwell Inference maintainers (@blackwell-inference)
options:
  root:
    description: Where the toolkits and the links live.
    type: path
    default: /usr/local
  default:
    description:
      - X.Y of the toolkit C(/usr/local/cuda) must point to (cuda_toolkit_default); moves it on purpose and updates
        the record. Empty keeps the recorded toolkit, or on first contact the one it points to now.
    type: str
    default: ""
  wanted:
    description: X.Y of the toolkits this run installs (a link to one of them is pinned once it is there).
    type: list
    elements: str
    default: []
  phase:
    description:
      - C(before) - pin what is there before anything is installed, write the record.
      - C(after) - pin again after the install (links to toolkits this run installed).
      - C(verify) - change nothing; fail when a link is not where the record says.
    type: str
    choices: [before, after, verify]
    default: before
  record:
    description: Where the links' places are written down.
    type: path
    default: /etc/blackwell-inference/cuda-links.json
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - blackwell.inference.attributes.check_mode_full
  - blackwell.inference.attributes.diff_full
  - blackwell.inference.attributes.debian
"""

EXAMPLES = r"""
- name: Pin /usr/local/cuda before CUDA 13.0 is installed
  blackwell.inference.cuda_link:
    wanted: ["13.0"]
    phase: before

- name: /usr/local/cuda is still where it was (read-only)
  blackwell.inference.cuda_link:
    wanted: ["13.0"]
    phase: verify
"""

RETURN = r"""
keep:
  description: Each link and the toolkit it is kept on (null for a C(/usr/local/cuda) that is a real directory).
  returned: always
  type: dict
  sample: {/usr/local/cuda: /usr/local/cuda-12.8, /usr/local/cuda-12: /usr/local/cuda-12.8}
kept:
  description: The toolkit C(/usr/local/cuda) is kept on, with its X.Y (null when it is a directory or pending).
  returned: always
  type: dict
  sample: {path: /usr/local/cuda-12.8, version: "12.8"}
moved:
  description: Links found away from their recorded toolkit (put back unless O(phase=verify)).
  returned: always
  type: list
  elements: dict
  sample: [{link: /usr/local/cuda, recorded: /usr/local/cuda-12.8, now: /usr/local/cuda-13.0, kind: link}]
actions:
  description: The update-alternatives argument lists run (in check mode and O(phase=verify), that would run).
  returned: always
  type: list
  elements: list
  sample: [[update-alternatives, --install, /usr/local/cuda, cuda, /usr/local/cuda-12.8, "128"], [update-alternatives, --set, cuda, /usr/local/cuda-12.8]]
recorded:
  description: True when the record was (would be) written.
  returned: always
  type: bool
lines:
  description: One line per link for the role's output, then notes and refusals.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.blackwell.inference.plugins.module_utils.common import commands
from ansible_collections.blackwell.inference.plugins.module_utils.cuda import link_host as host


def main():
    module = AnsibleModule(
        argument_spec=dict(
            root=dict(type="path", default="/usr/local"),
            default=dict(type="str", default=""),
            wanted=dict(type="list", elements="str", default=[]),
            phase=dict(type="str", choices=["before", "after", "verify"], default="before"),
            record=dict(type="path", default="/etc/blackwell-inference/cuda-links.json"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    # in check mode nothing was installed: a link to a wanted toolkit is still to be pinned, not refused
    phase = "before" if module.check_mode else p["phase"]
    try:
        state = host.gather(commands.module_runner(module), p["root"], p["record"], p["wanted"], p["default"])
        result, out = host.assess(state, p["default"], p["wanted"], phase, verify=p["phase"] == "verify")
    except host.ReadError as exc:
        module.fail_json(msg=exc.msg, **exc.result)
    out["changed"] = False
    if result["refusals"]:
        module.fail_json(msg="Refused before any change. " + " ".join(result["refusals"]), **out)
    if p["phase"] == "verify":
        if result["moved"] and not module.check_mode:  # a checked run's pin phase says it would put them back
            module.fail_json(msg=host.verify_refusal(result["moved"]), **out)
        module.exit_json(**out)

    out["changed"] = bool(result["actions"]) or out["recorded"]
    if module.check_mode or not out["changed"]:
        module.exit_json(**out)
    for argv in result["actions"]:
        rc, stdout, stderr = module.run_command(argv)
        if rc != 0:
            module.fail_json(msg="%s failed" % " ".join(argv), cmd=argv, rc=rc, stdout=stdout, stderr=stderr, **out)
    if result["record"]:
        host.write_record(p["record"], result["record"])
    module.exit_json(**out)


if __name__ == "__main__":
    main()
