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
  - With O(unit), also the unit as systemd and its files say and the command the role's drop-in gives it (what
    M(blackwell.inference.unit_command) returns); with O(facts), also what FlashInfer would compute in the service's
    environment (what M(blackwell.inference.cuda_facts) returns, as C(ansible_facts.blackwell_cuda)). One call for
    what the role decides from, instead of three.
  - With O(observe), also what is at each of those paths (as M(blackwell.inference.paths) sees it), so the role skips
    a C(paths) call that would change nothing and takes the fingerprint's checksums from this one read.
  - With O(health), also one look at the service as it runs now - its health endpoint and, when that answers, one
    sampled request (as M(blackwell.inference.service_health) asks them, without waiting). When it stands (both
    answered as a ready service must) and the run changes nothing of the service after this read, the role takes it
    instead of asking again; a service that does not answer is left to M(blackwell.inference.service_health), which
    waits and explains.
  - With O(summary_facts), also C(blackwell_cuda) of the service as its unit has it now, and every FlashInfer service
    on the host (what M(blackwell.inference.service_health) gathers with its C(facts) for the play's summary), as
    C(ansible_facts.blackwell_cuda), when the look stands; the facts of O(facts) are returned as RV(blackwell_cuda).
  - The C(sglang_service) role gives it the lock's O(reading) with O(changed_since_reading), the toolkit and venv
    roles' results, so that the reading is taken only when neither changed the host after the lock read it.
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
  unit:
    description:
      - Read the unit too, with these options of M(blackwell.inference.unit_command) (C(unit) and C(venv)
        required). Omitted, RV(unit) is null.
    type: dict
  observe:
    description:
      - Paths to look at (not followed); a pattern with C(*) stands for the paths that match it. Returned as
        RV(observed).
    type: list
    elements: str
    default: []
  keyed:
    description:
      - The secret files among O(observe) - C(paths) - are returned with an HMAC-SHA256 of their sha256 under the host's
        key C(key) (a root-only 0600 file of random bytes; made when absent and C(create) is true) in place of their
        sha256, so that nothing shown or written lets a guess at the secret be tested. Omitted, every sha256 is plain.
    type: dict
  facts:
    description:
      - Gather C(blackwell_cuda) too, with these options of M(blackwell.inference.cuda_facts) (C(nvidia_smi),
        C(environment), C(venv), C(venv_optional), C(toolkit_root), C(proc_devices)). Omitted, no facts are returned.
      - Instead of C(environment), C(service_environment) - what the environment is worked out from, the service
        role's variables - C(environment) (C(sglang_service_environment)), C(cuda_home) and C(venv) (both required),
        C(arch_list) (C(sglang_service_arch_list), empty for none). The environment is then C(environment) with
        C(CUDA_HOME) set to C(cuda_home), C(PATH) to the unit's (C(<cuda_home>/bin:<venv>/bin:) and systemd's default
        PATH) and C(FLASHINFER_CUDA_ARCH_LIST) to C(arch_list) when it is not empty
        (C(module_utils/service/settings.py) C(probe_environment)). Given the same options, the lock's reading and
        this module work it out alike.
    type: dict
  health:
    description:
      - Look at the service once, with these options - C(path) of its health endpoint (required), C(sample_path) and
        C(sample_body) of the sampled request (as M(blackwell.inference.service_health)'s), C(listen) (C(host) and
        C(port); default, where the unit read in this call listens), C(unit) (its state comes along), C(venv) (the
        service's venv link), C(request_timeout) (default 5) and C(sample_timeout) (default 30; a service slower than
        that is left to M(blackwell.inference.service_health)). Returned as RV(health). A C(sample_body) that would not
        reach FlashInfer's sampling is refused.
      - It does not look (C(not_looked) in RV(health) says why) unless the ready marker says ready and was written
        for the venv the link points at now - a sampled request to a service whose venv link moved under it makes it
        load code from the new venv.
    type: dict
  summary_facts:
    description:
      - Gather the summary's C(blackwell_cuda) too, with these options of M(blackwell.inference.cuda_facts)
        (C(nvidia_smi), C(unit), C(venv), C(venv_optional), C(flashinfer_version), C(toolkit_root), C(services)),
        when the look of O(health) stands (otherwise M(blackwell.inference.service_health) gathers them after the
        run's changes).
    type: dict
  validator:
    description:
      - Return the boot validator's files too, as RV(validator_paths) - handled on the controller (the action plugin),
        never sent to the host.
      - C(root) (the directory the package tree goes under), C(dirs), C(files) and C(gone) (to remove; relative to C(root)),
        C(dir_entry) and C(file_entry) (the M(blackwell.inference.paths) attributes of each). A file under
        C(ansible_collections/blackwell/inference/plugins/) gets the text of this collection's own file of that name,
        so the host runs the same code as the modules (one source); every C(__init__.py) is empty.
    type: dict
  changed_since_reading:
    description:
      - What ran between the lock's reading and this task, each by name (the C(sglang_service) role gives C(toolkit),
        C(cuda_toolkit_changed), and C(venv), C(sglang_venv_current.changed)), with whether it changed the host; null
        when that is not known (the step did not run or its result is not there), which counts as changed.
      - The given O(reading) is taken only when every value is false; otherwise the module reads the host itself.
        Omitted, O(reading) is taken whenever it stands. Handled on the controller (the action plugin), never sent to
        the host.
    type: dict
  plan:
    description:
      - Return the service role's preflight plan worked out from this reading, as RV(plan) - handled on the controller
        (the action plugin), never sent to the host.
      - The role's variables the plan needs, by name - C(cuda_home), C(venv), C(cache_dir), C(arch_list), C(build_log)
        (C(sglang_service_jit_build_log)), C(ld_library_path), C(extra) (C(sglang_service_environment)), C(check_mode),
        C(checked) (the unit as site.yml's check play read it, used when O(unit) is null), C(mode), C(name), C(user),
        C(health_path), C(sample_path) and C(sample_request); C(proc_devices) (where the NVIDIA majors were read
        from, named in a device refusal), C(extra_services) (C(sglang_service_extra_services), or C([]) for none) and
        C(primary) (the first service's C(name), C(mode), C(venv), C(environment), C(model_path), C(port), C(args),
        C(command) and C(marker), which they are resolved against); C(group) (C(sglang_service_group)) and
        C(role_files) (the role's files by name - C(unit), C(dropin), C(validate_unit), C(ready_unit), C(secrets),
        C(validate_config)).
      - A plan the variables cannot make (C(extra) sets a key the plan derives) fails the task, naming the variable.
    type: dict
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - blackwell.inference.attributes
  - blackwell.inference.lock_reading
"""

EXAMPLES = r"""
- name: Read the marker, the toolkit, the workspaces and the snapshot
  blackwell.inference.service_probe:
    marker: /etc/ansible/facts.d/blackwell_inference.fact
    cuda_home: /usr/local/cuda-13.0
    jit_dir: /var/cache/sglang/jit
    snapshot_store: /var/lib/blackwell-inference/sglang-k26/last-good
  register: probe

- name: The same, with the unit's command and FlashInfer's view in the service's environment
  blackwell.inference.service_probe:
    marker: /etc/ansible/facts.d/blackwell_inference.fact
    cuda_home: /usr/local/cuda-13.0
    jit_dir: /var/cache/sglang/jit
    unit: {unit: sglang.service, venv: /opt/sglang/current, keep: true}
    facts:
      environment: {CUDA_HOME: /usr/local/cuda-13.0, PATH: "/usr/local/cuda-13.0/bin:/opt/sglang/current/bin:/usr/bin:/bin"}
      venv: /opt/sglang/current
      venv_optional: true
  register: probe

- name: The same, in the environment the unit would get (worked out from the service role's variables)
  blackwell.inference.service_probe:
    marker: /etc/ansible/facts.d/blackwell_inference.fact
    cuda_home: /usr/local/cuda-13.0
    jit_dir: /var/cache/sglang/jit
    facts:
      service_environment: {environment: {NCCL_DEBUG: WARN}, cuda_home: /usr/local/cuda-13.0, venv: /opt/sglang/current, arch_list: ""}
      venv: /opt/sglang/current
      venv_optional: true
  register: probe
"""

RETURN = r"""
validator_paths:
  description:
    - With O(validator), the entries of M(blackwell.inference.paths) for the boot validator's package tree
      (directories first, then the files with their C(content)).
  returned: when O(validator) is given
  type: list
  elements: dict
plan:
  description:
    - With O(plan), the preflight's plan (module_utils/service/plan.py probe_plan). From the unit (O(unit)'s reading,
      else O(plan)'s C(checked)) - C(unit) (the reading that counts), C(dropin_refusal) (C('') for none), C(run_user),
      C(health_url), C(sample_url) (C('') without a sampled request) and C(device_allow) (the units' C(DeviceAllow=)
      rules).
    - C(error), the first refusal (a toolkit and arch list FlashInfer in the service's venv would not accept, an arch
      list SGLang's workers would contradict or could not agree on), or null; without one also C(archs),
      C(arch_source), C(env), C(venv_target), C(versions) (the venv's packages), C(toolkit) (C(cuda_home),
      C(cuda_version)), C(foreign) (another file of the unit that overrides the role's environment or command, or
      null) and C(effective_env) (C(env) with what the unit's other files add).
    - C(device_refusal) - C(read) (why the units' C(DeviceAllow=) rules would deny the GPUs nvidia-smi answers with,
      as the majors were read) and C(uvm_loaded) (the same once C(nvidia-uvm) was loaded since), each C('') for none;
      C(extra_services) - the further services, each resolved against O(plan)'s C(primary) (C([]) without it).
    - C(cache_owner) - C(owner) (C(run_user), else C(root)) and C(group) (O(plan)'s C(group) in unit mode, C('') in
      dropin mode) of the cache directories; with O(plan)'s C(role_files), C(fingerprinted_files) (what a validation
      vouches for - the unit only in unit mode, then the drop-in, the boot validation units and the secrets file) and
      C(state_files) (the last good state's - those, the unit in both modes, and the boot validator's settings).
  returned: when O(plan) is given
  type: dict
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
unit:
  description:
    - With O(unit), what M(blackwell.inference.unit_command) returns for it (null without O(unit)), and C(refusal) - why
      systemd could not start the unit whatever the run changes (a drop-in's unit that is not there, a required
      C(EnvironmentFile=) that is gone), C('') for none; C(playbooks/site.yml) refuses it under the lock on a run over one
      host, before the first role changes anything.
  returned: always
  type: dict
  sample: {load_state: loaded, source: unit, argv: [/opt/sglang/current/bin/python, -m, sglang.launch_server], listen: {host: 0.0.0.0, port: 30000}}
ansible_facts:
  description:
    - C(blackwell_cuda) as M(blackwell.inference.cuda_facts) returns it - with O(summary_facts) of those when they were
      gathered, else with O(facts) of those.
  returned: when facts is given, or summary_facts and the look stands
  type: dict
blackwell_cuda:
  description: With O(facts), C(blackwell_cuda) of those options (the service's planned environment).
  returned: when facts is given
  type: dict
health:
  description:
    - With O(health), the look - C(stands), C(answered), C(status) (the sampled request's when there was one; -1 when
      nothing answered), C(seconds), C(unit_state), C(gave_up) (null), C(sample) (null without one), C(not_looked) (why
      there was no look; null when there was). Null without O(health).
  returned: always
  type: dict
  sample: {stands: true, answered: true, status: 200, seconds: 0.1, unit_state: {ActiveState: active}, gave_up: null, sample: {ok: true}}
observed:
  description:
    - Per path of O(observe) (the matches of a pattern), what is there - C(exists), C(type), C(uid), C(gid), C(mode),
      C(owner) and C(group) (names), C(sha256) (a file), C(target) (a link). The input of the C(paths_pending)
      filter.
  returned: always
  type: dict
  sample: {/etc/blackwell-inference/sglang-validate.json: {exists: true, type: file, mode: 420, owner: root, uid: 0, sha256: 9f2c}}
commands_run:
  description: The commands run for O(unit), O(facts) and O(summary_facts), each once.
  returned: always
  type: list
  elements: list
read_under_lock:
  description: Whether the result is the O(reading) made under the play's lock (nothing was read by this task).
  returned: always
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.blackwell.inference.plugins.module_utils.common import commands
from ansible_collections.blackwell.inference.plugins.module_utils.host import service_read


def run_module():
    module = AnsibleModule(
        argument_spec=dict(
            marker=dict(type="path", required=True),
            cuda_home=dict(type="path", required=True),
            jit_dir=dict(type="path", required=True),
            snapshot_store=dict(type="path"),
            unit=dict(type="dict"),
            facts=dict(type="dict"),
            summary_facts=dict(type="dict"),
            health=dict(type="dict"),
            observe=dict(type="list", elements="str", default=[]),
            keyed=dict(type="dict", no_log=False),  # paths, not secrets
            reading=dict(type="dict"),  # the action's (plugins/action/service_probe.py)
            validator=dict(type="dict"),  # the action's, never sent
            plan=dict(type="dict"),  # the action's, never sent
            changed_since_reading=dict(type="dict"),  # the action's, never sent
        ),
        supports_check_mode=True,
    )
    run = commands.CachingRunner(commands.module_runner(module))
    try:
        reading = service_read.read(module, run, {k: module.params[k] for k in service_read.PARAMS})
    except service_read.ReadError as exc:
        module.fail_json(msg=exc.msg, commands_run=run.calls, **exc.result)
    module.exit_json(changed=False, **reading)


def main():
    run_module()


if __name__ == "__main__":
    main()
