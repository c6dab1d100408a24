#!/usr/bin/python
# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: toolkit_probe
short_description: Everything the cuda_toolkit role decides from, read in one call
version_added: "0.3.0"
description:
  - Reads, and changes nothing - the GPUs, the driver and the CUDA toolkits as M(blackwell.inference.cuda_facts)
    measures them (set as C(ansible_facts.blackwell_cuda), one C(nvidia-smi) call, one C(nvcc --version) per toolkit),
    every package's version and dpkg status (one C(dpkg-query)), the Secure Boot state (C(mokutil --sb-state)), the
    apt source files that already name the role's repository URL and the record of the kernel compiles that passed.
  - With O(links), also what pinning C(/usr/local/cuda) and C(/usr/local/cuda-<major>) before an install would do
    (M(blackwell.inference.cuda_link) with C(phase=before), read only), so a run whose links are where they belong
    makes no cuda_link call.
  - A host without C(mokutil) is not a failure; the state is then unknown (C(secure_boot.rc) is null).
  - A failure whose message or command output is long is told in a few lines (what failed and the line that says
    why, that nothing was changed, the path of a log with the full output in C(/var/log/blackwell-inference/), made
    0750, the log 0640, written only on a failure); the result's C(rc), C(stdout) and C(stderr) are then the last
    40 lines (4 KB) of each.
author:
  - Blackwell Inference maintainers (@blackwell-inference)
options:
  nvidia_smi:
    description: Command name or path of C(nvidia-smi).
    type: str
    default: nvidia-smi
  toolkit_root:
    description: Directory holding C(cuda-X.Y) toolkits and the C(cuda) link.
    type: path
    default: /usr/local
  method:
    description:
      - The role's install method. Given, it decides what is read for apt - O(packages), O(apt_sources) and O(apt_repo)
        only with C(apt) - in place of those options.
    type: str
    choices: [apt, runfile]
  packages:
    description: Read every package's version and status with C(dpkg-query) (the apt method).
    type: bool
    default: true
  apt_sources:
    description:
      - Read the URIs of every C(*.list) and C(*.sources) file under C(/etc/apt) (commented lines and disabled stanzas
        left out) as RV(apt_sources). The plan picks the files that name its repository (RV(plan)'s C(sources_naming)),
        so the reading needs no URL worked out from the host's facts.
    type: bool
    default: false
  compile_record:
    description:
      - JSON file of the kernel compiles that passed, per toolkit path and arch the toolkit's C(identity) then (written by
        the role). Returned as RV(compile_record); none read when empty.
    type: path
    default: ""
  links:
    description:
      - Read the cuda links too, with these options of M(blackwell.inference.cuda_link) (C(root), C(default),
        C(wanted), C(record)); C(wanted) may name releases (X.Y.Z), their X.Y is taken. Omitted, RV(links) is null.
    type: dict
  apt_repo:
    description:
      - Read the role's own apt source too - C(source) (its C(.sources) file) and C(key) (the key file its C(Signed-By)
        names), both paths - as RV(apt_repo). Omitted, RV(apt_repo) is null.
    type: dict
  apt_access:
    description:
      - Read apt's proxy file C(proxy) (apt.conf.d) and logins file C(auth) (auth.conf.d) too, both paths, as
        RV(apt_access). Omitted, RV(apt_access) is null.
    type: dict
  plan:
    description:
      - The cuda_toolkit role's variables without their C(cuda_toolkit_) prefix (C(versions), C(components),
        C(releases), C(package_versions), C(method), C(repo_source), C(hold), C(repo_name), C(source_file),
        C(repo_base_url), C(repo_distro), C(repo_arch), C(repo_key_url), C(key_fingerprint), C(root), C(default),
        C(check_driver), C(require_open_kernel_module), C(verify_archs)) and C(live) (C(--tags verify)) and
        C(check_mode). Given, the role's plan is worked out from the reading on the controller and returned as
        RV(plan); releases or pins the plan cannot make fail the task before anything is read.
    type: dict
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - blackwell.inference.attributes
  - blackwell.inference.attributes.facts
  - blackwell.inference.lock_reading
  - ansible.builtin.action_common_attributes.facts
seealso:
  - module: blackwell.inference.cuda_facts
"""

EXAMPLES = r"""
- name: Read the host once for the toolkit role
  blackwell.inference.toolkit_probe:
    toolkit_root: /usr/local
    apt_sources: true
  register: probe

- name: Show the Secure Boot state
  ansible.builtin.debug:
    msg: "{{ probe.secure_boot.stdout }}"
"""

RETURN = r"""
ansible_facts:
  description: C(blackwell_cuda) as M(blackwell.inference.cuda_facts) returns it without a venv or an environment.
  returned: always
  type: dict
packages:
  description: >-
    C(dpkg-query -W -f='${Package} ${Version} ${Status}\n') over every package - C(rc) and C(stdout)
    (what RV(plan) reads the packages' states from). Empty with O(packages=false).
  returned: always
  type: dict
  sample: {rc: 0, stdout: "cuda-nvcc-13-0 13.0.88-1 hold ok installed\n"}
secure_boot:
  description: C(mokutil --sb-state) - C(rc) (null when it could not run), C(stdout), C(stderr).
  returned: always
  type: dict
  sample: {rc: 0, stdout: SecureBoot disabled, stderr: ""}
apt_sources:
  description: With O(apt_sources), each apt source file and the URIs apt fetches from by it; empty otherwise.
  returned: always
  type: dict
  sample: {/etc/apt/sources.list.d/cuda-debian12-x86_64.list: ["https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/"]}
compile_record:
  description: The content of O(compile_record); empty when it is not given, not there or not a JSON object of objects.
  returned: always
  type: dict
  sample: {/usr/local/cuda-13.0: {sm_120a: 3f0c2a9b1d4e5f60}}
links:
  description:
    - With O(links), what M(blackwell.inference.cuda_link) with C(phase=before) would return, nothing applied, plus
      C(refusals), C(error) (the links or their record could not be read) and C(needed) (the pin has anything to do or
      say - actions, a record to write, a refusal, an error). Null without O(links).
  returned: always
  type: dict
  sample: {needed: false, actions: [], recorded: false, pending: [], refusals: [], error: null, lines: ["/usr/local/cuda -> /usr/local/cuda-12.8 (kept)"]}
apt_access:
  description:
    - With O(apt_access), the proxy file (C(exists), C(mode), C(uid), C(content) - it holds no credentials) and the
      logins file (C(exists), C(mode), C(uid) only - never its text nor a digest of it). With O(plan) (the action),
      C(auth_matches) too - whether the logins file holds what the role would write (asked of
      M(blackwell.inference.secret_file) only when the file is there and the role has logins to write). Null without
      O(apt_access).
  returned: always
  type: dict
  sample: {proxy: {exists: false}, auth: {exists: true, mode: 384, uid: 0}, auth_matches: true}
apt_repo:
  description:
    - With O(apt_repo), the source file (C(path), C(present), C(mode), C(stanzas) - its deb822 stanzas as field-value
      maps - and C(error)) and the key file (C(path), C(present), C(mode), C(armored), C(fingerprints) of its primary
      keys, C(error)). C(error) says why a file that is there could not be read or parsed. Null without O(apt_repo).
  returned: always
  type: dict
  sample:
    source: {path: /etc/apt/sources.list.d/cuda-toolkit.sources, present: true, mode: "0644", error: null,
             stanzas: [{X-Repolib-Name: cuda-toolkit, Signed-By: /etc/apt/keyrings/cuda-archive-keyring.asc, Suites: /, Types: deb,
                        URIs: "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/"}]}
    key: {path: /etc/apt/keyrings/cuda-archive-keyring.asc, present: true, mode: "0644", armored: true, error: null,
          fingerprints: [EB693B3035CD5710E231E123A4B469963BF863CC]}
plan:
  description:
    - With O(plan), what the role does on this host, decided once from this reading - the packages to pin and install,
      apt's work, the repository's work and why, the links to pin, the refusals of the host and of a change, what
      verify compiles for and whether it has anything to check. See C(role_plan) in C(module_utils/cuda/plan.py).
  returned: when O(plan) is given
  type: dict
  sample: {versions: ["13.0"], apt: false, repo: false, links: false, any: false, refusals: [], change_refusals: [], verify: false}
read_under_lock:
  description: Whether the result is the O(reading) made under the play's lock (nothing was read by this task).
  returned: always
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.blackwell.inference.plugins.module_utils.common import commands, failure
from ansible_collections.blackwell.inference.plugins.module_utils.host import toolkit_read

D = toolkit_read.DEFAULTS


def run_module():
    module = AnsibleModule(
        argument_spec=dict(
            nvidia_smi=dict(type="str", default=D["nvidia_smi"]),
            toolkit_root=dict(type="path", default=D["toolkit_root"]),
            method=dict(type="str", choices=["apt", "runfile"]),
            packages=dict(type="bool", default=D["packages"]),
            apt_sources=dict(type="bool", default=D["apt_sources"]),
            compile_record=dict(type="path", default=D["compile_record"]),
            links=dict(type="dict"),
            apt_repo=dict(type="dict"),
            apt_access=dict(type="dict"),
            reading=dict(type="dict"),  # the action's (plugins/action/toolkit_probe.py)
            plan=dict(type="dict"),  # the action's too
        ),
        supports_check_mode=True,
    )
    run = commands.CachingRunner(commands.module_runner(module))
    try:
        result = toolkit_read.read_for(module, run, module.params)
    except toolkit_read.ReadError as exc:
        module.fail_json(**failure.result("toolkit_probe", "read", exc.msg, exc.result, failure.READ_ONLY))
    module.exit_json(changed=False, commands_run=run.calls, **result)


def main():
    run_module()


if __name__ == "__main__":
    main()
