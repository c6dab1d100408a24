#!/usr/bin/python
# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: service_probe
short_description: What the sglang_service role reads of the host before it changes anything, in one call
version_added: "0.3.0"
description:
  - Reads, and changes nothing - the service's ready marker as it is before this run (parsed), whether the toolkit the
    unit is pointed at has C(bin/nvcc), the JIT workspaces whose C(venv) link no longer resolves (their venv was
    pruned), and whether a last good snapshot is already there.
  - A marker that cannot be read or is not a JSON object is reported as no marker with C(marker_error); the host is
    then not ready, so the role validates it again and rewrites the marker.
author:
  - Blackwell Inference maintainers (@blackwell-inference)
options:
  marker:
    description: The ready marker (a local fact under C(/etc/ansible/facts.d)).
    type: path
    required: true
  cuda_home:
    description: The toolkit the service's unit is pointed at.
    type: path
    required: true
  jit_dir:
    description: The directory of the service's JIT workspaces (one per venv, each with a C(venv) link).
    type: path
    required: true
  snapshot_store:
    description: The last good snapshot's store (a link to its directory).
    type: path
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
"""

EXAMPLES = r"""
- name: Read the marker, the toolkit, the workspaces and the snapshot
  blackwell.inference.service_probe:
    marker: /etc/ansible/facts.d/blackwell_inference.fact
    cuda_home: /usr/local/cuda-13.0
    jit_dir: /var/cache/sglang/jit
    snapshot_store: /var/lib/blackwell-inference/sglang-k26/last-good
  register: probe
"""

RETURN = r"""
marker:
  description: The ready marker as it is now; an empty dict when there is none (or it cannot be read).
  returned: always
  type: dict
  sample: {ready: true, inputs: a65627bf5947ccf0, last_good: {venv: /opt/sglang/venvs/2c26817414e442ed}}
marker_error:
  description: Why a marker that is there could not be used (null when it could).
  returned: always
  type: str
nvcc:
  description: C(path) (C(<cuda_home>/bin/nvcc)) and whether it C(exists).
  returned: always
  type: dict
  sample: {path: /usr/local/cuda-13.0/bin/nvcc, exists: true}
gone_venv_links:
  description: The C(<jit_dir>/<workspace>/venv) links that no longer resolve, sorted.
  returned: always
  type: list
  elements: str
snapshot:
  description: Whether the last good snapshot's manifest C(exists), and the C(error) reading it (null when it reads).
  returned: always
  type: dict
  sample: {exists: true, error: null}
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.blackwell.inference.plugins.module_utils import service_probe


def run_module():
    module = AnsibleModule(
        argument_spec=dict(
            marker=dict(type="path", required=True),
            cuda_home=dict(type="path", required=True),
            jit_dir=dict(type="path", required=True),
            snapshot_store=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    marker, marker_error = service_probe.read_marker(p["marker"])
    nvcc = os.path.join(p["cuda_home"], "bin", "nvcc")
    snapshot = service_probe.snapshot_state(p["snapshot_store"]) if p["snapshot_store"] else {"exists": False, "error": None}
    module.exit_json(
        changed=False,
        marker=marker,
        marker_error=marker_error,
        nvcc={"path": nvcc, "exists": os.path.exists(nvcc)},
        gone_venv_links=service_probe.gone_venv_links(p["jit_dir"]),
        snapshot=snapshot,
    )


def main():
    run_module()


if __name__ == "__main__":
    main()
