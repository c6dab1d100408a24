#!/usr/bin/python
# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: venv_probe
short_description: Everything the sglang_venv role decides from, read in one call
version_added: "0.3.0"
description:
  - Reads, and changes nothing - the interpreter that makes the venvs (its version, and that it has C(venv) and
    C(ensurepip)), the tools asked for, where C(<root>/current) points, and every venv under C(<root>/venvs) with its
    completion marker (the metadata file the build writes last, parsed).
  - A hidden entry under C(<root>/venvs) (a build lock) is not a venv. A marker that is not a JSON object fails the
    module, naming the file - the build writes it whole, so such a venv was changed by hand.
  - A failure whose message or command output is long is told in a few lines (what failed and the line that says
    why, that nothing was changed, the path of a log with the full output in C(/var/log/blackwell-inference/), made
    0750, the log 0640, written only on a failure); the result's C(rc), C(stdout) and C(stderr) are then the last
    40 lines (4 KB) of each.
author:
  - Blackwell Inference maintainers (@blackwell-inference)
options:
  root:
    description: The role's root directory (C(sglang_venv_root)).
    type: path
    required: true
  python:
    description: The interpreter that makes the venvs, a name on C(PATH) or a path.
    type: str
    default: python3
  tools:
    description: Commands the run needs on the host; each is asked for C(--version).
    type: list
    elements: str
    default: []
  plan:
    description:
      - The sglang_venv role's variables without their C(sglang_venv_) prefix (C(root), C(python), C(packages),
        C(lock_file), C(lock_file_sha256) - a list, the lock file's sha256 or none -, C(no_index), C(index_url),
        C(extra_index_urls), C(find_links), C(patches) - their sha256s -, C(packages_no_deps), C(bytecode), C(keep)),
        C(local_facts) (C(ansible_local)) and C(check_mode). Given, the role's plan is worked out from the reading on
        the controller and returned as RV(plan).
    type: dict
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - blackwell.inference.attributes
  - blackwell.inference.lock_reading
"""

EXAMPLES = r"""
- name: Read the interpreter, the venvs and where current points
  blackwell.inference.venv_probe:
    root: /opt/sglang
    python: /usr/bin/python3
    tools: [patch]
  register: probe
"""

RETURN = r"""
python:
  description: The interpreter - C(version) (X.Y.Z, or null when it cannot make venvs), C(rc), C(stderr).
  returned: always
  type: dict
  sample: {version: 3.11.2, rc: 0, stderr: ""}
tools:
  description: Per tool asked for - C(found) (its C(--version) exited 0) and C(version) (its first line).
  returned: always
  type: dict
  sample: {patch: {found: true, version: GNU patch 2.7.6}}
current:
  description: Where C(<root>/current) resolves (as C(stat)'s C(lnk_source)), or an empty string when it is not a link.
  returned: always
  type: str
  sample: /opt/sglang/venvs/2c26817414e442ed
venvs:
  description: >-
    The entries of C(<root>/venvs), hidden ones left out, sorted - C(name), C(path), C(isdir), C(complete) (its marker is there),
    C(marker) (the parsed metadata, or null) and C(marker_mtime).
  returned: always
  type: list
  elements: dict
  sample: [{name: 2c26817414e442ed, path: /opt/sglang/venvs/2c26817414e442ed, isdir: true, complete: true, marker_mtime: 1764683988.1,
            marker: {hash: 2c26817414e442ed, versions: {flashinfer-python: 0.7.4, torch: 2.13.0+cpu}}}]
plan:
  description:
    - With O(plan), what the role does on this host, decided once from this reading - the inputs and the name of
      their venv, whether to build, switch and prune it, pip's command, the venvs a prune removes, the refusals of the
      host. See C(role_plan) in C(module_utils/venv/info.py).
  returned: when O(plan) is given
  type: dict
  sample: {hash: 2c26817414e442ed, dir: /opt/sglang/venvs/2c26817414e442ed, build: false, switch: false, prune: false, remove: [], refusals: []}
read_under_lock:
  description: Whether the result is the O(reading) made under the play's lock (nothing was read by this task).
  returned: always
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.blackwell.inference.plugins.module_utils.common import commands, failure
from ansible_collections.blackwell.inference.plugins.module_utils.venv import info as venv_info


def run_module():
    module = AnsibleModule(
        argument_spec=dict(
            root=dict(type="path", required=True),
            python=dict(type="str", default="python3"),
            tools=dict(type="list", elements="str", default=[]),
            reading=dict(type="dict"),  # the action's (plugins/action/venv_probe.py)
            plan=dict(type="dict"),  # the action's too
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        reading = venv_info.read_host(commands.module_runner(module), p["root"], p["python"], p["tools"])
    except venv_info.VenvError as exc:
        module.fail_json(**failure.result("venv_probe", "read", str(exc), exc.reading, failure.READ_ONLY))
    module.exit_json(changed=False, **reading)


def main():
    run_module()


if __name__ == "__main__":
    main()
