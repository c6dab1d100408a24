#!/usr/bin/python
# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: cuda_compile
short_description: Each toolkit compiles a kernel for the GPUs' archs, and the record of the compiles that passed
version_added: "0.4.0"
description:
  - For each toolkit wanted (O(versions)) and arch (O(archs)), runs C(<root>/cuda-X.Y/bin/nvcc -arch=<arch> -cubin -x cu
    -o /dev/null /dev/stdin) with a small kernel on its stdin (an argument list; nothing is written). A toolkit that is
    not among O(toolkits) is not compiled for, nor is a toolkit and arch the record (O(record)) vouches for with the
    toolkit's compile chain as it is now (its C(identity)), unless O(live).
  - A compile that fails fails the module once every compile ran, naming each that failed with nvcc's rc and the line
    that says why; the first failed compile's C(cmd), C(rc), C(stdout) and C(stderr) are attached, every compile's in
    RV(results). Nothing is recorded then.
  - Writes the record after this run to O(compile_record) (root's, 0644; its directory made when missing) when it
    differs from O(record) and not O(live). In check mode it compiles (that only reads) and writes nothing.
  - The logic lives in C(module_utils/cuda/plan.py) (C(compiles), C(compile_record)).
author:
  - Blackwell Inference maintainers (@blackwell-inference)
options:
  root:
    description: Where the toolkits live (C(cuda_toolkit_root)).
    type: path
    default: /usr/local
  versions:
    description: X.Y of each toolkit wanted.
    type: list
    elements: str
    required: true
  archs:
    description: The archs to compile for (nvcc's spelling, C(sm_120a)).
    type: list
    elements: str
    required: true
  toolkits:
    description: The toolkits as M(blackwell.inference.cuda_facts) measured them (C(blackwell_cuda.toolkits)).
    type: list
    elements: dict
    required: true
  record:
    description: The record as read before this run (M(blackwell.inference.toolkit_probe)'s C(compile_record)).
    type: dict
    default: {}
  compile_record:
    description: The record's file.
    type: path
    default: /var/lib/blackwell-inference/cuda-compiles.json
  live:
    description: Compile every one and write no record (C(--tags verify)).
    type: bool
    default: false
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - blackwell.inference.attributes
"""

EXAMPLES = r"""
- name: Each toolkit compiles a kernel for the GPUs' archs
  blackwell.inference.cuda_compile:
    versions: ["13.0"]
    archs: [sm_120a]
    toolkits: "{{ ansible_facts['blackwell_cuda']['toolkits'] }}"
    record: "{{ probe.compile_record }}"
"""

RETURN = r"""
results:
  description:
    - One per toolkit and arch, in order - C(version), C(arch), C(skipped) (not compiled - the toolkit is not there, or
      the record vouches for it), and for a compile C(cmd), C(rc), C(stdout), C(stderr).
  returned: always
  type: list
  elements: dict
  sample: [{version: "13.0", arch: sm_120a, skipped: false, cmd: [/usr/local/cuda-13.0/bin/nvcc, -arch=sm_120a, -cubin, -x, cu,
            -o, /dev/null, /dev/stdin], rc: 0, stdout: "", stderr: ""}, {version: "12.8", arch: sm_120a, skipped: true}]
record:
  description: The record after this run - per toolkit path and arch, the toolkit's identity when a compile passed with it.
  returned: always
  type: dict
  sample: {/usr/local/cuda-13.0: {sm_120a: 3f0c2a9b1d4e5f60}}
recorded:
  description: Whether the record was (in check mode, would be) written.
  returned: always
  type: bool
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.blackwell.inference.plugins.module_utils.common import files
from ansible_collections.blackwell.inference.plugins.module_utils.cuda import plan as cuda_plan


def compile_one(module, root, job):
    argv = cuda_plan.compile_argv(root, job["version"], job["arch"])
    try:
        rc, stdout, stderr = module.run_command(argv, data=cuda_plan.KERNEL, handle_exceptions=False)
    except OSError as exc:  # no nvcc there
        rc, stdout, stderr = exc.errno, "", str(exc)
    out = {"version": job["version"], "arch": job["arch"], "skipped": False, "cmd": argv, "rc": rc}
    return dict(out, stdout=stdout.rstrip("\r\n"), stderr=stderr.rstrip("\r\n"))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            root=dict(type="path", default="/usr/local"),
            versions=dict(type="list", elements="str", required=True),
            archs=dict(type="list", elements="str", required=True),
            toolkits=dict(type="list", elements="dict", required=True),
            record=dict(type="dict", default={}),
            compile_record=dict(type="path", default="/var/lib/blackwell-inference/cuda-compiles.json"),
            live=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    p = module.params
    results = []
    before = p["record"] or {}  # the record as read
    for job in cuda_plan.compiles(p["versions"], p["archs"], p["toolkits"], before, p["live"]):
        if job["needed"]:
            results.append(compile_one(module, p["root"], job))
        else:
            results.append({"version": job["version"], "arch": job["arch"], "skipped": True})
    record = cuda_plan.compile_record(p["toolkits"], results, before)
    out = {"changed": False, "results": results, "record": record, "recorded": False}
    msg = cuda_plan.compile_failure(results)
    if msg:
        first = next(r for r in results if not r["skipped"] and r["rc"] != 0)
        module.fail_json(msg=msg, **dict(out, **{k: first[k] for k in ("cmd", "rc", "stdout", "stderr")}))
    out["recorded"] = out["changed"] = not p["live"] and record != before
    if out["recorded"] and not module.check_mode:
        path = p["compile_record"]
        try:
            files.write_atomic(path, cuda_plan.compile_record_text(record).encode("utf-8"))
            os.chown(path, 0, 0)
        except OSError as exc:
            module.fail_json(msg="%s: %s" % (path, exc), **out)
    module.exit_json(**out)


if __name__ == "__main__":
    main()
