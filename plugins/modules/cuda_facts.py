#!/usr/bin/python
# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: cuda_facts
short_description: GPUs, driver, CUDA toolkits and FlashInfer's effective CUDA as the service sees them
version_added: "0.1.0"
description:
  - Gathers C(ansible_facts.blackwell_cuda) and changes nothing.
  - GPUs and driver come from one C(nvidia-smi --query-gpu) call. A host without C(nvidia-smi)
    or without a working driver is not a failure; it is reported as C(driver.present=false).
  - Toolkits are the C(<toolkit_root>/cuda-X.Y) directories, versioned from their own
    C(bin/nvcc --version) banner; C(default_toolkit) is where C(<toolkit_root>/cuda) resolves.
  - C(flashinfer) predicts what the installed C(flashinfer-python) would compute in
    O(environment) - its CUDA home and the source of it, its CUDA version (nvcc banner or torch
    fallback), its target archs with the a/f suffix, and the error it would raise or log -
    following the version-dependent rules of FlashInfer 0.4.0 .. 0.7.4.
  - Nothing is imported from the venv unless O(probe=true); torch's version and CUDA lane are
    read from C(torch/version.py).
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
  environment:
    description:
      - The environment of the process whose view is wanted, normally the service unit's.
      - Keys FlashInfer reads are C(CUDA_HOME), C(CUDA_PATH), C(PATH), C(FLASHINFER_CUDA_ARCH_LIST),
        C(FLASHINFER_WORKSPACE_BASE), C(HOME) and C(CUDA_VISIBLE_DEVICES).
      - When C(PATH) is missing, systemd's default PATH for services is used.
    type: dict
    default: {}
  unit:
    description:
      - A systemd unit whose environment (C(Environment=) and C(EnvironmentFile=), as C(systemctl show)
        reports them) is the environment wanted. O(environment) entries override it.
      - The unit must be loaded; secrets read from its environment files are not returned
        (only the keys FlashInfer reads are kept in C(blackwell_cuda.environment)).
    type: str
  venv:
    description:
      - Path of the service's Python virtual environment. FlashInfer's and torch's versions are
        read from its files.
    type: path
  venv_optional:
    description:
      - When O(venv) does not exist (before the first run, in check mode), report as if no venv were given
        instead of failing. A venv that exists but is not one still fails.
    type: bool
    default: false
    version_added: 0.3.0
  flashinfer_version:
    description:
      - Predict for this flashinfer-python version instead of the one installed in O(venv)
        (for example before the venv is built).
    type: str
  torch_cuda:
    description:
      - CUDA lane of torch to assume for FlashInfer's fallback (for example C(13.0)) when O(venv)
        has no torch. Ignored when torch is found in O(venv).
    type: str
  probe:
    description:
      - Also run the venv's Python under exactly O(environment) and ask FlashInfer itself
        (imports torch and flashinfer; takes seconds). Requires O(venv).
    type: bool
    default: false
  toolkit_root:
    description: Directory holding C(cuda-X.Y) toolkits and the C(cuda) link.
    type: path
    default: /usr/local
  proc_devices:
    description:
      - The table of registered device majors whose C(nvidia*) character devices are reported in C(device_majors)
        (one read, no command).
      - Another path only for a test double (the lab has no NVIDIA driver in its kernel).
    type: path
    default: /proc/devices
    version_added: 0.3.0
  services:
    description:
      - Also list every FlashInfer service on the host - each loaded systemd service whose command starts in a
        Python venv (C(<venv>/bin/...) with C(pyvenv.cfg)) that has C(flashinfer-python) - with FlashInfer's verdict,
        and SGLang's layer when that venv has SGLang, in the unit's own environment.
      - One C(systemctl show) for all units; the venvs are read from their files, nothing is imported.
      - Units not in systemd's memory (disabled and never started) are not listed.
    type: bool
    default: false
    version_added: 0.3.0
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - blackwell.inference.attributes
  - blackwell.inference.attributes.facts
  - ansible.builtin.action_common_attributes.facts
notes:
  - FlashInfer's rules were read from its sources; versions newer than 0.7.4 are predicted with
    the 0.7.1+ rules and say so in C(flashinfer.notes).
"""

EXAMPLES = r"""
- name: What would FlashInfer do in the service's environment?
  blackwell.inference.cuda_facts:
    venv: /opt/sglang/current
    environment:
      CUDA_HOME: /usr/local/cuda-13.0
      PATH: /usr/local/cuda-13.0/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin
      FLASHINFER_CUDA_ARCH_LIST: "12.0a"

- name: The environment of an existing unit, as systemd gives it to the service
  blackwell.inference.cuda_facts:
    unit: sglang-k26.service
    venv: /root/venv_sglang211

- name: Stop before the service crashes
  ansible.builtin.assert:
    that: ansible_facts['blackwell_cuda']['flashinfer']['accepted']
    fail_msg: "{{ ansible_facts['blackwell_cuda']['flashinfer']['error'] }}"

- name: Every FlashInfer service on the host, each judged in its own environment
  blackwell.inference.cuda_facts:
    unit: sglang-k26.service
    venv: /opt/sglang/current
    services: true

- name: Cross-check the prediction with FlashInfer itself
  blackwell.inference.cuda_facts:
    venv: /opt/sglang/current
    probe: true
"""

RETURN = r"""
ansible_facts:
  description: Facts under C(blackwell_cuda).
  returned: always
  type: dict
  contains:
    blackwell_cuda:
      description: Everything measured.
      returned: always
      type: dict
      contains:
        gpus:
          description: One entry per GPU, from a single nvidia-smi call.
          type: list
          elements: dict
          returned: always
          sample:
            - {index: 0, name: NVIDIA RTX PRO 6000 Blackwell Server Edition,
               uuid: GPU-5d1b2c3e-0000-4000-8000-000000000000, compute_capability: "12.0", memory_mib: 97887}
        compute_capabilities:
          description: Distinct compute capabilities present, sorted.
          type: list
          elements: str
          returned: always
          sample: ["12.0"]
        driver:
          description: C(present), C(version), C(cuda_version) (highest CUDA it supports) and its
            C(cuda_version_source), C(branch), C(open_kernel_module) (null when unknown), C(error).
          type: dict
          returned: always
          sample: {present: true, version: 580.95.05, branch: 580, cuda_version: "13.0",
                   cuda_version_source: driver_branch_table, open_kernel_module: true, error: null}
        device_majors:
          description:
            - The C(nvidia*) character devices O(proc_devices) registers, name to major - what C(DeviceAllow=char-NAME)
              of a hardened unit matches when it starts. Major 195 is C(nvidia-frontend) before driver 550.40,
              C(nvidia) and C(nvidiactl) from it on; C(nvidia-uvm) is there only once that module is loaded.
            - Null when O(proc_devices) cannot be read (C(device_majors_error) says why).
          type: dict
          returned: always
          version_added: 0.3.0
          sample: {nvidia: 195, nvidiactl: 195, nvidia-uvm: 509, nvidia-caps: 510, nvidia-caps-imex-channels: 511}
        device_majors_error:
          description: Why O(proc_devices) could not be read, or null.
          type: str
          returned: always
          version_added: 0.3.0
        toolkits:
          description: Every C(cuda-X.Y) directory with C(version) from nvcc's banner, C(path),
            C(has_curand_headers), C(has_driver_stubs), C(nvcc_error), C(identity) (a digest of the size
            and modification time of C(nvcc), C(nvcc.profile), C(cicc) and C(ptxas), which an upgrade or a
            reinstall of the toolkit changes).
          type: list
          elements: dict
          returned: always
        default_toolkit:
          description: Where C(<toolkit_root>/cuda) resolves (C(path), C(version), C(via_alternatives)), or null.
          type: dict
          returned: always
        environment:
          description: The keys of the environment FlashInfer reads (C(PATH) filled in), as used for the prediction.
          type: dict
          returned: always
        venv:
          description:
            - C(path), C(target) (where C(path) resolves when it is a link, else C(path)), C(python), installed
              C(packages) versions (sglang, flashinfer-python, torch, ...), or null.
          type: dict
          returned: always
        torch:
          description: C(version) and C(cuda) lane read from torch/version.py without importing torch, or null.
          type: dict
          returned: always
          sample: {version: 2.14.1+cu130, cuda: "13.0"}
        torch_driver:
          description:
            - Whether the venv's torch CUDA runtime fits the driver, compared as MAJOR.MINOR - C(torch_cuda) (the
              C(torch.cuda) lane), C(driver_cuda) (C(driver.cuda_version)), C(ok) and C(msg) (why, and when not ok the
              fix - a driver that supports torch's CUDA, or a torch built for CUDA <= the driver's).
            - C(ok) is true when torch's CUDA is not newer than the driver supports, false when it is (a newer major is
              refused outright; a newer minor of the same major would run only under CUDA minor-version compatibility,
              without PTX JIT of torch's newer code, and counts as not ok), null when either side is unknown (no torch,
              a CPU or ROCm torch, no driver, a driver branch whose CUDA is not known).
            - O(torch_cuda) is not judged; only a torch found in O(venv) is.
          type: dict
          returned: always
          sample: {torch_cuda: "12.8", driver_cuda: "12.4", ok: false,
                   msg: "torch 2.9.1+cu128 is built for CUDA 12.8, newer than driver 550.127.05 supports (CUDA 12.4): ...;
                         fix: upgrade the NVIDIA driver to one that supports CUDA 12.8 (R570 or later), or pin a torch
                         built for CUDA <= 12.4 (a +cuXYZ wheel no newer than cu124)"}
        flashinfer:
          description:
            - What FlashInfer would compute - C(version), C(rules) (version band), C(cuda_home),
              C(cuda_home_source) (CUDA_HOME, CUDA_PATH, PATH or default), C(cuda_version),
              C(cuda_version_source) (nvcc or torch), C(target_archs) (cache directory spelling
              such as 120a), C(cache_dir), C(accepted), C(error), C(error_kind), C(error_stage)
              (import, detection, first_jit), C(symptom) and C(notes).
          type: dict
          returned: always
          sample: {version: 0.7.0, cuda_home: /usr/local, cuda_home_source: PATH, cuda_version: "12.8",
                   cuda_version_source: nvcc, target_archs: [], accepted: false,
                   error: SM 12.x requires CUDA >= 12.9, error_stage: detection}
        sglang:
          description:
            - When the venv has SGLang, what FlashInfer computes inside SGLang's workers, whose C(set_cuda_arch())
              rewrites C(FLASHINFER_CUDA_ARCH_LIST) for the worker's GPU (SGLang 0.5.4.post3 and later) - C(version),
              C(sets) (the variable it writes), C(arch_list) (the value that makes both import orders agree, null when the
              GPUs disagree), C(workers) (per compute capability - C(arch_list), C(target_archs), C(cache_dir),
              C(accepted), C(error), C(same_workspace) as the unit's environment), C(orders_agree) and C(notes).
            - Null without SGLang in the venv.
          type: dict
          returned: always
          sample: {version: 0.5.23, sets: FLASHINFER_CUDA_ARCH_LIST, arch_list: 12.0a, orders_agree: false,
                   workers: [{compute_capability: "12.0", arch_list: 12.0a, target_archs: [120a], same_workspace: false,
                              cache_dir: /var/cache/sglang/jit/2c26817414e442ed/.cache/flashinfer/0.7.4/120a, accepted: true}]}
        services:
          description:
            - With O(services=true), one row per FlashInfer service, the unit O(unit) first, then the other units with
              the service role's drop-in, then the rest, by name (C(managed) for the first two groups) -
              C(unit), C(managed), C(active) and C(sub) (its systemd state), C(venv), C(packages), C(flashinfer),
              C(sglang), C(cuda_home), C(cuda_version), C(target_archs) (the unit's environment), C(worker_archs) (in
              SGLang's workers), C(orders_agree), C(accepted), C(error), C(cold_jit) (why an accepted unit's SGLang
              workers would still compile FlashInfer cold - several GPU kinds in one service, or a unit environment
              whose JIT workspace is not the workers' - empty when they would not) and C(symptom) (how it would crash).
          type: list
          elements: dict
          returned: when services is true
          sample:
            - {unit: sglang-eagle3.service, managed: false, active: failed, sub: failed, venv: /root/venv_eagle3,
               flashinfer: 0.7.0, sglang: null, cuda_home: /usr/local/cuda-12.8, cuda_version: "12.8", target_archs: [],
               accepted: false, error: SM 12.x requires CUDA >= 12.9, symptom: FlashInfer requires GPUs with sm75 or higher}
        probe:
          description: With O(probe=true) - C(cuda_home), C(cuda_version), C(target_archs), C(error)
            as FlashInfer itself reported them, and C(agrees) with the prediction (C(differences) lists why not).
          type: dict
          returned: when probe is true
"""

import os
import pwd

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.blackwell.inference.plugins.module_utils.common import commands, failure
from ansible_collections.blackwell.inference.plugins.module_utils.flashinfer import probe as flashinfer_probe
from ansible_collections.blackwell.inference.plugins.module_utils.flashinfer import rules as flashinfer_rules
from ansible_collections.blackwell.inference.plugins.module_utils.host import measure as cuda_measure


def run_module():
    module = AnsibleModule(
        argument_spec=dict(
            nvidia_smi=dict(type="str", default="nvidia-smi"),
            environment=dict(type="dict", default={}),
            unit=dict(type="str"),
            venv=dict(type="path"),
            venv_optional=dict(type="bool", default=False),
            flashinfer_version=dict(type="str"),
            torch_cuda=dict(type="str"),
            probe=dict(type="bool", default=False),
            toolkit_root=dict(type="path", default="/usr/local"),
            services=dict(type="bool", default=False),
            proc_devices=dict(type="path", default="/proc/devices"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if p["probe"] and not p["venv"]:
        module.fail_json(msg="probe=true needs venv (the Python that runs FlashInfer)")
    run = commands.CachingRunner(commands.module_runner(module))
    try:
        facts, env = cuda_measure.in_unit(module, run, dict(p), module.boolean, pwd.getpwuid(os.getuid()).pw_dir)
    except cuda_measure.MeasureError as exc:
        module.fail_json(**failure.result("cuda_facts", "measure", exc.msg, exc.result, failure.READ_ONLY, p["unit"]))
    venv, flashinfer = facts["venv"], facts["flashinfer"]
    ccs = flashinfer_rules.visible_ccs(facts["gpus"], env)
    if p["probe"]:
        res = commands.run_python(run, venv["python"], flashinfer_probe.PROBE_SCRIPT, env=env, timeout=600)
        try:
            probe = commands.last_json_line(res.stdout)
        except ValueError as exc:
            msg, fields = failure.report(
                "cuda_facts", "probe", "FlashInfer probe in %s printed no result: %s" % (p["venv"], exc), res.as_dict(), failure.READ_ONLY, p["unit"]
            )
            module.fail_json(msg=msg, **fields)
        comparable = "FLASHINFER_CUDA_ARCH_LIST" in env or (bool(ccs) and probe.get("gpu_count") == len(ccs))
        probe["agrees"], probe["differences"] = flashinfer_probe.compare(flashinfer, probe, comparable)
        probe["archs_compared"] = comparable
        facts["probe"] = probe
    module.exit_json(changed=False, ansible_facts={"blackwell_cuda": facts}, commands_run=run.calls)


def main():
    run_module()


if __name__ == "__main__":
    main()
