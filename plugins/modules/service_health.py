#!/usr/bin/python
# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: service_health
short_description: Wait for a service's health endpoint, and stop waiting as soon as its unit died
version_added: "0.3.0"
description:
  - Asks O(url) on the host every O(interval) seconds until it answers HTTP 200, up to O(timeout) seconds.
  - Between tries it reads the state of O(unit) from systemd. A unit that is failed or dead and not about to be
    restarted, or that crashed O(crash_limit) times since the wait began, will never answer, so the wait ends there
    (seconds, not the whole timeout) and the failure says why, in systemd's words.
  - When the wait fails and O(unit) is given, the unit's journal since its last start is read for the causes this fleet
    has met (FlashInfer's empty arch set or CUDA gate, a JIT build without C(curand.h), an OOM kill, a driver older
    than torch's CUDA); each one found is named in the message with its journal line and its fix. FlashInfer's causes
    name the CUDA version its lookup found (O(cuda_version), or the unit's own environment's), the driver's names
    torch's CUDA and the driver's when O(torch_driver) says so. A unit that systemd restarted by itself (C(Restart=))
    and whose current run shows no known cause yet (it is loading again) is explained from the run before.
  - With O(sample_url), an answer of O(url) is not enough - one sampled request (SGLang's C(/generate) with a
    temperature > 0 that filters, 0 < top_p < 1 and top_k > 1) must then succeed too. SGLang's C(/health) generates
    greedily and never touches FlashInfer's sampling kernels, the path that crashed in the incident, and neither does a
    request that samples without filtering (SGLang samples it in plain torch); the sampled request takes them in the
    service's own workers. It is asked once; its failure ends the wait with its answer and the journal's known causes.
  - With O(unit), an answer counts only when the port's listening socket is held by a process in the unit's cgroup
    (read from C(/proc), as C(ss -ltnp) does); with O(invocation_before) also only from a new start of the unit. An
    answer from another process (a server started by hand on the same port) ends the wait at once, naming that
    process (pid, user, command).
  - Read-only; C(changed) is always false. It also waits in check mode (nothing is changed by asking).
  - With O(look), an earlier look that stands and that nothing of O(changed_since) made stale is taken instead - the
    task is skipped without a call to the host (module_utils/service/ready.py C(health_stands)).
  - A failure to measure the summary's facts (O(facts)) whose message or command output is long is told in a few
    lines, with the full output in a log in C(/var/log/blackwell-inference/) (0750, the log 0640) and the result's
    C(rc), C(stdout) and C(stderr) cut to their last 40 lines (4 KB).
author:
  - Blackwell Inference maintainers (@blackwell-inference)
options:
  url:
    description: The health endpoint (SGLang's C(/health)).
    type: str
    required: true
  unit:
    description: The service's systemd unit. Without it the wait only asks O(url).
    type: str
  timeout:
    description: Seconds to wait for an answer at most.
    type: int
    default: 120
  interval:
    description: Seconds between tries.
    type: float
    default: 2
  request_timeout:
    description: Seconds one request may take.
    type: int
    default: 5
  crash_limit:
    description: Restarts of O(unit) during the wait after which it is a crash loop; 0 never gives up on restarts.
    type: int
    default: 3
  must_answer:
    description:
      - Whether no answer fails the task. V(false) returns the same result (C(answered) false, C(msg), C(causes)) without
        failing, for a read-only look at a service (O(timeout=0) asks once).
    type: bool
    default: true
  sample_url:
    description: After O(url) answers, POST O(sample_body) here (SGLang's C(/generate)); it must answer too.
    type: str
  sample_body:
    description:
      - The sampled request, SGLang's native C(/generate) body - C(text) and C(sampling_params) with C(temperature) > 0,
        0 < C(top_p) < 1 and C(top_k) > 1. Any other body is refused - a greedy one, or one that samples without
        filtering, never reaches FlashInfer's sampling kernels, so it would prove nothing C(/health) did not.
    type: dict
  sample_timeout:
    description: Seconds the sampled request may take (a cold JIT compile of the sampling module takes minutes).
    type: int
    default: 300
  cuda_version:
    description:
      - The CUDA version FlashInfer computes in the unit's environment (cuda_facts), named in the explanation of a
        failure whose journal shows FlashInfer's CUDA gate.
      - Omitted, or not applying to the unit (O(environment)), the version FlashInfer's lookup finds in the unit's
        environment as systemd has it loaded is named instead (C(CUDA_HOME), C(CUDA_PATH), C(which nvcc) on its
        C(PATH), C(/usr/local/cuda); that home's C(nvcc --version)), when a C(nvcc) answers there.
    type: str
  torch_driver:
    description:
      - cuda_facts' C(torch_driver) verdict for the service's venv (C(torch_cuda), C(driver_cuda), C(ok)). When it is
        not ok, a journal that shows torch's CUDA runtime newer than the driver names both versions and the fix with
        them.
    type: dict
    version_added: 0.3.0
  environment:
    description:
      - The environment O(cuda_version) and O(torch_driver) were computed for (the one the role wrote for the unit).
        Given, they are named only when the unit's environment as systemd has it loaded now (C(Environment=),
        C(EnvironmentFile=)) has each of these keys at this value - a unit put back to another state, or edited since,
        keeps the journal's own words. Omitted, they are named as given.
    type: dict
    version_added: 0.3.0
  facts:
    description:
      - Gather C(blackwell_cuda) too when the wait ends, with these options of M(blackwell.inference.cuda_facts)
        (C(nvidia_smi), C(unit), C(venv), C(venv_optional), C(flashinfer_version), C(toolkit_root), C(services)), so a
        play's summary after the health check needs no call of its own. Omitted, no facts are returned.
      - The facts' C(nvcc) answers also serve the journal's explanation (one C(nvcc --version) per toolkit).
    type: dict
    version_added: 0.3.0
  invocation_before:
    description:
      - The unit's C(InvocationID) before this run restarted it; an answer counts only from a later start of it.
    type: str
  look:
    description:
      - An earlier look at the service, as M(blackwell.inference.service_probe) returns it (its C(health)).
      - When it stands (the health endpoint answered, and the sampled request when there was one) and nothing of
        O(changed_since) happened since, the action plugin answers on the controller, without a call to the host - the
        task is skipped (C(skipped), C(skip_reason)), as a task whose condition is false. Otherwise, and without it, the
        module asks the service.
      - Handled on the controller (the action plugin), never sent to the host.
    type: dict
    version_added: 0.4.0
  changed_since:
    description:
      - With O(look), what happened since it was taken; any one of them means the service is asked again. Handled on
        the controller, never sent to the host.
    type: dict
    version_added: 0.4.0
    suboptions:
      revalidated:
        description: A validation or a rollout ran in this run.
        type: bool
        default: false
      enable_changed:
        description: The task that enables and starts the service changed it (it may have started it).
        type: bool
        default: false
      further_services:
        description: Further services of the host follow (the summary's O(facts) are gathered after the last of them).
        type: bool
        default: false
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - blackwell.inference.attributes
attributes:
  action:
    description: The controller side answers without a call to the host when O(look) stands; otherwise the module asks.
    support: full
"""

EXAMPLES = r"""
- name: Wait for the restarted service to answer
  blackwell.inference.service_health:
    url: http://127.0.0.1:30000/health
    unit: sglang-k26.service
    timeout: 600
    # then one sampled request: FlashInfer's sampling kernels in the service's own workers
    sample_url: http://127.0.0.1:30000/generate
    sample_body:
      text: The capital of France is
      sampling_params: {temperature: 0.7, top_p: 0.9, top_k: 20, max_new_tokens: 4}
  register: health
  ignore_errors: true
"""

RETURN = r"""
skip_reason:
  description: Why the service was not asked - O(look) stands for this check (the task is skipped).
  returned: when O(look) stands
  type: str
answered:
  description: Whether the endpoint answered HTTP 200 (and, with O(sample_url), the sampled request succeeded).
  returned: unless the task is skipped (O(look) stands)
  type: bool
msg:
  description: Why it did not answer (the unit's state, the known causes from its journal).
  returned: when it did not answer
  type: str
status:
  description: HTTP status of the last request (the sampled request's when the endpoint answered; -1 when nothing answered).
  returned: unless the task is skipped (O(look) stands)
  type: int
sample:
  description: The sampled request - C(url), C(status), C(ok), C(detail), C(seconds), C(meta_info) of the answer.
  returned: when sample_url is given and the endpoint answered
  type: dict
seconds:
  description: Seconds waited.
  returned: unless the task is skipped (O(look) stands)
  type: float
unit_state:
  description: >-
    The unit's C(ActiveState), C(SubState), C(Result), C(ExecMainStatus), C(NRestarts), C(MainPID), C(ControlGroup)
    and C(InvocationID) when the wait ended.
  returned: when unit is given
  type: dict
not_the_unit:
  description: Why an answer on the port did not count (another process holds the port), when that ended the wait.
  returned: when another process answered
  type: str
gave_up:
  description: Why the wait ended before the timeout (the unit died or crash-looped), or null.
  returned: unless the task is skipped (O(look) stands)
  type: str
causes:
  description:
    - The known causes found in the unit's journal since its last start (C(name), C(cause), C(fix), C(line)).
    - When that run shows none yet and systemd restarted the unit into it by itself (C(Restart=)), the causes of the run
      before, each with C(run=previous) - a service that crashes after minutes of loading shows its cause there while
      it loads again.
  returned: when the wait failed and unit is given
  type: list
  elements: dict
  sample: [{name: flashinfer_no_arch, line: "RuntimeError: FlashInfer requires GPUs with sm75 or higher",
            cause: "FlashInfer found no target arch: ...", fix: "point the unit at CUDA >= 12.9 ..."}]
journal_error:
  description: The command (C(cmd), C(rc), C(stdout), C(stderr)) that could not read the unit's journal.
  returned: when the journal could not be read
  type: dict
ansible_facts:
  description: With O(facts), C(blackwell_cuda) as M(blackwell.inference.cuda_facts) returns it, read when the wait ended.
  returned: when facts is given
  type: dict
"""

import os
import pwd
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.blackwell.inference.plugins.module_utils.common import commands, failure
from ansible_collections.blackwell.inference.plugins.module_utils.common import systemd as systemd_env
from ansible_collections.blackwell.inference.plugins.module_utils.host import measure as cuda_measure
from ansible_collections.blackwell.inference.plugins.module_utils.service import health, journal
from ansible_collections.blackwell.inference.plugins.module_utils.service import http as service_http

FACTS_OPTIONS = ("nvidia_smi", "unit", "venv", "venv_optional", "flashinfer_version", "toolkit_root", "services")
# the action plugin checks the same options when it answers on the controller (plugins/action/service_health.py)
ARGUMENT_SPEC = {
    "url": {"type": "str", "required": True},
    "unit": {"type": "str"},
    "timeout": {"type": "int", "default": 120},
    "interval": {"type": "float", "default": 2},
    "request_timeout": {"type": "int", "default": 5},
    "crash_limit": {"type": "int", "default": 3},
    "must_answer": {"type": "bool", "default": True},
    "sample_url": {"type": "str"},
    "sample_body": {"type": "dict"},
    "sample_timeout": {"type": "int", "default": 300},
    "cuda_version": {"type": "str"},
    "torch_driver": {"type": "dict"},
    "environment": {"type": "dict"},
    "facts": {"type": "dict"},
    "invocation_before": {"type": "str"},
    # the action's, never sent
    "look": {"type": "dict"},
    "changed_since": {
        "type": "dict",
        "apply_defaults": True,
        "options": {
            "revalidated": {"type": "bool", "default": False},
            "enable_changed": {"type": "bool", "default": False},
            "further_services": {"type": "bool", "default": False},
        },
    },
}
REQUIRED_BY = {"sample_url": "sample_body"}


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, required_by=REQUIRED_BY, supports_check_mode=True)
    p = module.params
    refused = health.sample_checked(p["sample_body"]) if p["sample_url"] else None
    if refused:
        module.fail_json(msg="sample_body: %s" % refused)

    def unit_state():
        return service_http.unit_state(module, p["unit"])

    # one runner for the facts and the journal's CUDA lookup: each nvcc answers once
    run = commands.CachingRunner(commands.module_runner(module))

    def facts_now():
        if p["facts"] is None:
            return {}
        try:
            given = cuda_measure.facts_options(p["facts"], FACTS_OPTIONS)
            facts = cuda_measure.in_unit(module, run, given, module.boolean, pwd.getpwuid(os.getuid()).pw_dir)[0]
        except cuda_measure.MeasureError as exc:
            module.fail_json(**failure.result("service_health", "facts", exc.msg, exc.result, failure.READ_ONLY, p["unit"]))
        return {"ansible_facts": {"blackwell_cuda": facts}}

    start = time.monotonic()
    restarts_before = unit_state().get("NRestarts", 0)
    props, reason = {}, None
    while True:
        status = service_http.ask(p["url"], p["request_timeout"])
        seconds = round(time.monotonic() - start, 1)
        if status == 200 and p["unit"]:  # the answer counts only from the unit's own process
            props = unit_state()
            ok, why = service_http.answer_owner(p["url"], props, p["invocation_before"])
            if not ok:
                msg = "answered on %s, but not from %s: %s" % (p["url"], p["unit"], why)
                result = dict(msg=msg, answered=False, status=status, seconds=seconds, unit_state=props, gave_up=why, not_the_unit=why)
                if p["must_answer"]:
                    module.fail_json(**result)
                module.exit_json(changed=False, **result, **facts_now())
        if status == 200 and not p["sample_url"]:
            module.exit_json(changed=False, answered=True, status=status, seconds=seconds, unit_state=unit_state(), gave_up=None, **facts_now())
        if status == 200:  # alive: now the sampled request, once
            # with the key the unit's own process was given (its --api-key): SGLang's /generate wants it
            key = service_http.socket_owner.api_key_of(props) if p["unit"] else None
            sampled = service_http.sample(p["sample_url"], p["sample_body"], p["sample_timeout"], key)
            seconds = round(time.monotonic() - start, 1)
            if sampled["ok"]:
                done = dict(answered=True, status=sampled["status"], seconds=seconds, unit_state=unit_state(), gave_up=None, sample=sampled)
                module.exit_json(changed=False, **done, **facts_now())
            finish(module, p, run, dict(status=sampled["status"], seconds=seconds, props=unit_state(), reason=None, sample=sampled), facts_now())
        props = unit_state()
        reason = health.gave_up(props, restarts_before, p["crash_limit"])
        if reason or seconds >= p["timeout"]:
            break
        time.sleep(min(p["interval"], max(0.0, p["timeout"] - seconds)))
    finish(module, p, run, dict(status=status, seconds=seconds, props=props, reason=reason, sample=None), facts_now())


def finish(module, p, run, end, facts):
    """The result of a wait that ended without an answer (or with a failed sampled request)."""
    if end["sample"]:
        msg = health.sample_failure(p["url"], end["sample"], end["props"])
    else:
        msg = health.failure(p["url"], p["timeout"], end["seconds"], end["status"], end["props"], end["reason"])
    extra = dict(facts, **({"sample": end["sample"]} if end["sample"] else {}))
    if p["unit"]:
        extra.update(explain_failure(module, p["unit"], p["cuda_version"], p["torch_driver"], p["environment"], run))
        if extra["causes"]:
            where = "the run systemd restarted it from" if extra["causes"][0].get("run") == "previous" else "its journal"
            msg += "; %s says why: %s" % (where, journal.summary(extra["causes"]))
    result = dict(msg=msg, answered=False, status=end["status"], seconds=end["seconds"], unit_state=end["props"], gave_up=end["reason"], **extra)
    if p["must_answer"]:
        module.fail_json(**result)
    module.exit_json(changed=False, **result)


def explain_failure(module, unit, cuda_version, torch_driver=None, environment=None, lookup=None):
    """The known causes in the unit's journal since its last start (what journalctl keeps, when it never started),
    with cuda_version and torch_driver when they describe the unit as systemd has it now (environment).
    A journal that cannot be read does not hide the failure being reported: its command's rc/stderr come along."""

    def run(argv):
        rc, out, err = module.run_command(argv)
        error = None if rc == 0 else {"cmd": argv, "rc": rc, "stdout": out[-2000:], "stderr": err[-2000:]}
        return out, error

    shown, error = run(health.start_argv(unit))
    if error:
        return {"causes": [], "journal_error": error}
    out, error = run(journal.journal_argv(unit, health.parse_start(shown)))
    if error:
        return {"causes": [], "journal_error": error}
    props = systemd_env.parse_show(shown)
    unit_env, _notes = systemd_env.unit_environment(props, systemd_env.read_text)
    if not journal.facts_apply(environment, unit_env):
        cuda_version = torch_driver = None
    previous, invocation = False, (props.get("InvocationID") or [""])[-1]
    matches = journal.match(out)  # each journal text is read once; describe() words what it showed
    if not matches and invocation:
        # nothing known in this run yet: a unit systemd restarted by itself shows why in the run before
        runs, error = run(journal.runs_argv(unit))
        before = journal.match(journal.previous_run(runs, invocation)) if not error else []
        if before:
            matches, previous = before, True
    causes = journal.describe(matches, cuda_version, torch_driver)
    if not cuda_version and journal.names_cuda(causes):  # what FlashInfer's lookup finds in the unit's own environment
        cuda_version = journal.effective_cuda(unit_env, lookup or commands.module_runner(module))
        causes = journal.describe(matches, cuda_version, torch_driver) if cuda_version else causes
    if previous:
        causes = [dict(c, run="previous") for c in causes]
    return {"causes": causes}


if __name__ == "__main__":
    main()
