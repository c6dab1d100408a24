#!/usr/bin/python
# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: service_ready
short_description: The sglang_service role's judgements of what its tasks found (READY's steps), on the controller
version_added: "0.4.0"
description:
  - One step per call, each a function of C(module_utils/service) (C(ready.py), C(plan.py), C(settings.py)); this
    plugin only passes the task's values to it and returns its result. Changes nothing.
  - C(fingerprint) - what a validation vouches for (the GPUs, driver, toolkit, venv, environment, units and the
    validation's policy), its digest, whether the host needs a validation against the ready marker (C(need)), why this
    run validates again (C(why), C(revalidate)), and the boot validator's settings that carry the fingerprint
    (C(settings_paths), C(settings_pending)). What the fingerprinted files hold comes from O(written) and O(observed);
    only when neither says it (O(reread)) are they read on the host, with P(blackwell.inference.service_snapshot#module)
    (C(state=inspect)).
  - C(verdict) - the JIT smoke's verdict (C(ready), C(reason)).
  - C(marker) - the ready marker a phase of the play writes (C(marker), null when the phase leaves it as it is).
  - C(last_good) - the JIT modules and user of the last good state a rollback puts back.
  - C(rollback) - what a rollback says when every step of it has run (C(note), C(errors), C(reason), C(msg)).
  - C(files) - which of the role's paths this run writes (C(account), C(unit_files)), whether a
    P(blackwell.inference.paths#module) call would change any of them as the preflight's probe saw the host
    (C(account_pending), C(unit_files_pending)), the JIT workspaces of venvs that are gone (C(stale_workspaces)), whether
    a ready state becomes the last good one (C(adopt)), and whether the account and units phase has anything to do
    (C(work)).
  - The sglang_service role calls it; a playbook of one's own has no need to.
author:
  - Blackwell Inference maintainers (@blackwell-inference)
options:
  step:
    description: What to judge.
    type: str
    required: true
    choices: [fingerprint, verdict, marker, last_good, rollback, files]
  marker:
    description: C(fingerprint), C(last_good) - the ready marker as it was before this run (null or V({}) when none).
    type: raw
  facts:
    description: C(fingerprint) - the service's C(blackwell_cuda) facts as the preflight's probe gathered them.
    type: dict
  cuda_home:
    description: C(fingerprint) - C(sglang_service_cuda_home).
    type: str
  env:
    description: C(fingerprint) - the unit's environment as systemd runs it.
    type: dict
  venv_target:
    description: C(fingerprint) - the venv the service's link points at.
    type: str
  archs:
    description: C(fingerprint) - the archs FlashInfer compiles for.
    type: str
  policy:
    description: C(fingerprint) - the validation's policy (C(warm), C(ready_without_launch), C(timeout), C(user), C(boot_validation)).
    type: dict
  files:
    description: C(fingerprint) - the fingerprinted files.
    type: list
    elements: str
  written:
    description: C(fingerprint) - this run's unit files call's checksums, null when it did not write them.
    type: dict
  observed:
    description: C(fingerprint) - the preflight's observation of the role's paths (service_probe's C(observed)).
    type: dict
  look:
    description:
      - C(fingerprint) - the preflight's look at the service (service_probe's C(health)). A validation that passed, which the
        play never saw serve, and which the look finds answered by the unit's own process started after it, is confirmed
        instead of validated again (RV(resume)).
    type: dict
    version_added: 0.4.0
  reread:
    description: C(fingerprint) - a fingerprinted file was written since the observation (the secrets file), so they are read.
    type: bool
    default: false
  store:
    description: C(fingerprint) - the last good state's store (for the read).
    type: path
  keyed:
    description: C(fingerprint) - the files fingerprinted by a keyed digest, and the key (service_snapshot's O(keyed)).
    type: dict
  settings:
    description: C(fingerprint) - the boot validator's settings without the fingerprint; null for none.
    type: dict
  settings_path:
    description: C(fingerprint) - where the boot validator's settings are written.
    type: path
  toolkit_installed:
    description: C(fingerprint) - the toolkit role installed in this run.
    type: bool
    default: false
  venv_switched:
    description: C(fingerprint) - the venv role switched C(current) in this run.
    type: bool
    default: false
  units_changed:
    description: C(fingerprint) - the unit files or the secrets file were written in this run.
    type: bool
    default: false
  runtime_changed:
    description: C(fingerprint) - the C(blackwell_inference runtime changed) topic was notified in this run.
    type: bool
    default: false
  foreign:
    description: C(fingerprint) - another file of the unit that overrides what the role set (null for none); no revalidation then.
    type: str
  smoke:
    description: C(verdict) - the registered result of P(blackwell.inference.jit_smoke#module).
    type: dict
  ready_without_launch:
    description: C(verdict) - C(sglang_service_ready_without_launch).
    type: bool
    default: false
  previous:
    description: C(marker) - the marker as it was.
    type: raw
  phase:
    description: C(marker) - the phase written.
    type: str
    choices: [validated, serving, failed, overridden]
  reason:
    description: C(marker) - its reason.
    type: str
  state:
    description:
      - C(marker) - what was validated (C(inputs), C(venv), C(toolkit), C(archs), C(versions), C(vouched), C(smoke),
        C(restart)); not for C(overridden).
    type: dict
  warm:
    description: C(last_good) - C(sglang_service_jit_warm), used when neither the restored settings nor the marker say.
    type: list
    elements: str
  user:
    description: C(last_good) - the account the service runs as now, likewise.
    type: str
  restore:
    description: C(rollback) - the registered result of service_snapshot's restore (C(settings) for C(last_good) is the slurped restored settings file).
    type: dict
  cause:
    description: C(rollback) - why the rollback ran.
    type: str
  host:
    description: C(rollback) - the host's inventory name.
    type: str
  marker_path:
    description: C(rollback) - the ready marker's path.
    type: path
  unit:
    description: C(rollback) - the service's unit.
    type: str
  restart:
    description: C(rollback) - C(sglang_service_restart).
    type: bool
  restarted:
    description: C(rollback) - the failed state had been restarted.
    type: bool
  venv:
    description: C(rollback) - the venv role's rollback result (C(sglang_venv_rollback)).
    type: dict
  venv_back:
    description: C(rollback) - the rescue's C({failed, msg}) when the venv role's rollback failed.
    type: dict
  reload:
    description: C(rollback) - the daemon-reload's result.
    type: dict
  start:
    description: C(rollback) - the start's result.
    type: dict
  stop:
    description: C(rollback) - the stop's result.
    type: dict
  rewarm:
    description: C(rollback) - the JIT re-warm's result.
    type: dict
  health_back:
    description: C(rollback) - the health check's result.
    type: dict
  plan:
    description: C(files) - the preflight's plan (service_probe's C(plan)); its C(env) names this run's JIT workspace.
    type: dict
  probe:
    description:
      - C(files) - the preflight's probe, as registered (C(observed), C(gone_venv_links), C(snapshot), C(marker) are
        read).
    type: dict
  paths:
    description:
      - C(files) - the role's paths as P(blackwell.inference.paths#module) takes them, rendered - C(account) and
        C(validator) (lists), and one entry each for C(unit), C(dropin), C(modules_load), C(validate_unit),
        C(ready_unit), C(secrets_gone), C(validate_unit_gone) and C(ready_unit_gone); C(check) and C(check_gone) (lists). Only the entries this run wants
        are used (the task renders every one).
    type: dict
  mode:
    description: C(files) - C(sglang_service_mode).
    type: str
    choices: [unit, dropin]
  has_secrets:
    description: C(files) - C(sglang_service_secret_environment) is not empty (the secrets file is kept).
    type: bool
    default: false
  boot_validation:
    description: C(files) - C(sglang_service_boot_validation).
    type: bool
    default: true
  check:
    description: C(files) - the check timer is on (C(sglang_service_check_interval) above 0; with boot validation only).
    type: bool
    default: false
    version_added: 0.4.0
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - blackwell.inference.attributes
attributes:
  action:
    description: Runs on the controller; only the C(fingerprint) step may run P(blackwell.inference.service_snapshot#module) on the host.
    support: full
"""

EXAMPLES = r"""
- name: Judge the smoke
  blackwell.inference.service_ready:
    step: verdict
    smoke: "{{ smoke }}"
    ready_without_launch: false
  register: verdict

- name: The marker of a passed validation whose service is restarted next
  blackwell.inference.service_ready:
    step: marker
    previous: "{{ ansible_facts['ansible_local']['blackwell_inference'] | default({}) }}"
    phase: validated
    reason: "{{ verdict.reason }}"
    state: "{{ validated_state }}"
  register: marker
"""

RETURN = r"""
inputs:
  description: C(fingerprint) - what a validation vouches for.
  returned: step is fingerprint
  type: dict
digest:
  description: C(fingerprint) - their digest (the marker's C(inputs)).
  returned: step is fingerprint
  type: str
need:
  description:
    - C(fingerprint) - whether the host needs a validation against its marker, and why; C(current) and C(stale) -
      whether the marker vouches for the current inputs; C(resume) and C(reason) - a validation the look found served.
  returned: step is fingerprint
  type: dict
  sample: {needed: true, why: "validated inputs differ from the current ones (toolkit)", current: false, stale: "validated inputs differ"}
resume:
  description:
    - C(fingerprint) - this run confirms the marker's validation instead of validating again (O(look) found it served
      by the unit's own process, and nothing of this run asks for a validation).
  returned: step is fingerprint
  type: bool
  version_added: 0.4.0
read:
  description: C(fingerprint) - the fingerprinted files were read on the host.
  returned: step is fingerprint
  type: bool
why:
  description: C(fingerprint) - the first reason this run validates again, empty for none.
  returned: step is fingerprint
  type: str
revalidate:
  description: C(fingerprint) - this run validates (C(why) is not empty, and no other file of the unit overrides the role's).
  returned: step is fingerprint
  type: bool
settings_paths:
  description: C(fingerprint) - the boot validator's settings file, as P(blackwell.inference.paths#module) writes it.
  returned: step is fingerprint and settings is given
  type: list
  elements: dict
settings_pending:
  description: C(fingerprint) - writing C(settings_paths) would change what the preflight observed.
  returned: step is fingerprint and settings is given
  type: bool
ready:
  description: C(verdict) - the smoke passed.
  returned: step is verdict
  type: bool
reason:
  description: C(verdict), C(rollback) - why.
  returned: step is verdict or rollback
  type: str
marker:
  description: C(marker) - the marker to write, null when the phase leaves it as it is.
  returned: step is marker
  type: dict
warm:
  description: C(last_good) - the JIT modules to re-warm.
  returned: step is last_good
  type: list
  elements: str
user:
  description: C(last_good) - the account to re-warm as.
  returned: step is last_good
  type: str
source:
  description: C(last_good) - where they come from (C(settings), C(marker) or C(variables)).
  returned: step is last_good
  type: str
note:
  description: C(rollback) - one sentence of what the rollback did.
  returned: step is rollback
  type: str
errors:
  description: C(rollback) - each restore step that failed.
  returned: step is rollback
  type: list
  elements: str
msg:
  description: C(rollback) - the play's one failure message.
  returned: step is rollback
  type: str
account:
  description: C(files) - the account phase's entries (the directories, the workspace's link, the boot validator's files).
  returned: step is files
  type: list
  elements: dict
unit_files:
  description: C(files) - the unit files' entries (and those no longer wanted, absent).
  returned: step is files
  type: list
  elements: dict
account_pending:
  description: C(files) - writing C(account) would change what the preflight observed.
  returned: step is files
  type: bool
unit_files_pending:
  description: C(files) - writing C(unit_files) would change what the preflight observed.
  returned: step is files
  type: bool
stale_workspaces:
  description: C(files) - the JIT workspaces whose venv link no longer resolves (never this run's).
  returned: step is files
  type: list
  elements: str
adopt:
  description: C(files) - the ready marker's state becomes the last good one (no readable snapshot is there).
  returned: step is files
  type: bool
work:
  description: C(files) - the account and units phase has anything to do.
  returned: step is files
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule

ARGUMENT_SPEC = {
    "step": {"type": "str", "required": True, "choices": ["fingerprint", "verdict", "marker", "last_good", "rollback", "files"]},
    "marker": {"type": "raw"},
    "facts": {"type": "dict"},
    "cuda_home": {"type": "str"},
    "env": {"type": "dict"},
    "venv_target": {"type": "str"},
    "archs": {"type": "str"},
    "policy": {"type": "dict"},
    "files": {"type": "list", "elements": "str"},
    "written": {"type": "dict"},
    "observed": {"type": "dict"},
    "look": {"type": "dict"},
    "reread": {"type": "bool", "default": False},
    "store": {"type": "path"},
    "keyed": {"type": "dict", "no_log": False},  # the key file's path and the files' paths, no secret
    "settings": {"type": "dict"},
    "settings_path": {"type": "path"},
    "toolkit_installed": {"type": "bool", "default": False},
    "venv_switched": {"type": "bool", "default": False},
    "units_changed": {"type": "bool", "default": False},
    "runtime_changed": {"type": "bool", "default": False},
    "foreign": {"type": "str"},
    "smoke": {"type": "dict"},
    "ready_without_launch": {"type": "bool", "default": False},
    "previous": {"type": "raw"},
    "phase": {"type": "str", "choices": ["validated", "serving", "failed", "overridden"]},
    "reason": {"type": "str"},
    "state": {"type": "dict"},
    "warm": {"type": "list", "elements": "str"},
    "user": {"type": "str"},
    "restore": {"type": "dict"},
    "cause": {"type": "str"},
    "host": {"type": "str"},
    "marker_path": {"type": "path"},
    "unit": {"type": "str"},
    "restart": {"type": "bool"},
    "restarted": {"type": "bool"},
    "venv": {"type": "dict"},
    "venv_back": {"type": "dict"},
    "reload": {"type": "dict"},
    "start": {"type": "dict"},
    "stop": {"type": "dict"},
    "rewarm": {"type": "dict"},
    "health_back": {"type": "dict"},
    "plan": {"type": "dict"},
    "probe": {"type": "dict"},
    "paths": {"type": "dict"},
    "mode": {"type": "str", "choices": ["unit", "dropin"]},
    "has_secrets": {"type": "bool", "default": False},
    "boot_validation": {"type": "bool", "default": True},
    "check": {"type": "bool", "default": False},
}


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    module.fail_json(msg="blackwell.inference.service_ready runs on the controller (its action plugin)")


if __name__ == "__main__":
    main()
