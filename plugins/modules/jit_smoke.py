#!/usr/bin/python
# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: jit_smoke
short_description: Compile (and on a GPU launch) a real CUDA kernel and warm FlashInfer's JIT cache in a service's environment
version_added: "0.2.0"
description:
  - Runs with exactly the service's environment (its unit's C(Environment=)/C(EnvironmentFile=) and O(environment)) and venv.
  - C(compile) builds a saxpy kernel with the nvcc FlashInfer would use in that environment, for every target arch
    (C(FLASHINFER_CUDA_ARCH_LIST) of the service, else the GPUs' compute capabilities), into a temporary directory.
  - C(launch) runs it and checks the numbers when a GPU device node (C(/dev/nvidia0)) exists; otherwise reports
    C(launched=false) with the reason.
  - C(warm) builds FlashInfer's JIT modules (default C(sampling)) into its cache in that environment, loads each one in a
    child process as the service would (a damaged library, e.g. truncated, is rebuilt), and on a GPU host runs
    FlashInfer's sampling once on a tiny tensor. It needs nothing from the saxpy steps, so it runs beside them (it is
    stopped when one of them fails); its verdict is still reported after theirs.
  - Each step reports its status and seconds. C(changed) is true only if something was compiled into FlashInfer's
    cache, so a rerun reports unchanged. In check mode nothing runs.
  - A failed step fails the module with a message of a few lines - what failed and the one line of the output that
    says why (e.g. C(No space left on device), the compiler's first C(error:) line, a Python exception's last line),
    what stays in place, and the path of a log on the host with the full output (the command, its stdout and
    stderr, here the ninja output) in C(/var/log/blackwell-inference/) (made 0750, the log 0640, named
    C(jit_smoke-<unit>-<step>-<UTC time>.log)). The result's C(rc), C(stdout) and C(stderr) are the last 40 lines
    (4 KB) of each; a script passed on the command line is shown by its length. Nothing is logged on success.
author:
  - Blackwell Inference maintainers (@blackwell-inference)
options:
  venv:
    description: The service's venv (its C(bin/python) runs the warm-up). Required when O(warm) is not empty.
    type: path
  environment:
    description: The service's environment, over the unit's. systemd's default PATH when it has none.
    type: dict
    default: {}
  unit:
    description: A systemd unit whose environment is the service's.
    type: str
  archs:
    description: Archs to compile for (C(12.0a), C(9.0)); empty means the service's C(FLASHINFER_CUDA_ARCH_LIST), else the GPUs'.
    type: list
    elements: str
    default: []
  user:
    description:
      - Account the service runs as. The saxpy compile, the launch and the warm-up run as this user (C(setpriv), with
        its groups), so the cache belongs to it, the launch proves its access to the GPU, and root never runs nvcc with
        the unit's environment; C(HOME) is its home unless the environment sets it, as systemd does for C(User=).
    type: str
  nvidia_smi:
    description: Command or path of nvidia-smi (for the GPUs' compute capabilities).
    type: str
    default: nvidia-smi
  launch:
    description: C(auto) launches when a GPU device node exists, C(always) fails without one, C(never) only compiles.
    type: str
    choices: [auto, always, never]
    default: auto
  warm:
    description:
      - FlashInfer JIT modules to build into the cache, those the service loads at start or on its first request.
      - C(sampling) is SGLang's sampler (C(flashinfer.sampling)); C(quantization) is FlashInfer's packbits, loaded by its attention wrappers for custom masks.
    type: list
    elements: str
    choices: [sampling, quantization]
    default: [sampling]
  timeout:
    description: Seconds each step may take (a cold sampling build is about 85 s on 2 cores).
    type: int
    default: 1800
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - blackwell.inference.attributes
notes:
  - The kernel is built with C(nvcc -gencode) per arch and linked against the static CUDA runtime; building needs no GPU.
"""

EXAMPLES = r"""
- name: Smoke-test the service's environment before restarting it
  blackwell.inference.jit_smoke:
    unit: sglang.service
    venv: /opt/sglang/current
  register: smoke

- name: Compile only (a build host without GPUs)
  blackwell.inference.jit_smoke:
    environment:
      CUDA_HOME: /usr/local/cuda-13.0
      FLASHINFER_CUDA_ARCH_LIST: "12.0a"
    launch: never
    warm: []
"""

RETURN = r"""
steps:
  description: Per step - C(ok), C(seconds) and details.
  returned: always
  type: dict
  contains:
    compile:
      description: C(ok), C(seconds), C(archs) (nvcc spelling, e.g. sm_120a), C(nvcc), C(cuda_home).
      type: dict
      returned: unless check mode
    launch:
      description: C(launched), C(ok), C(detail) (e.g. max_error=0) or C(reason) when not launched, C(seconds).
      type: dict
      returned: unless check mode
    warm:
      description:
        - C(modules) (name, library, seconds, compiled, loads, and C(repaired) with the load failure when a cached library
          that ninja considered current did not load and was rebuilt), C(cache_dir), C(gpu_run), C(seconds).
      type: dict
      returned: unless check mode
  sample:
    compile: {ok: true, seconds: 1.9, archs: [sm_120a], nvcc: /usr/local/cuda-13.0/bin/nvcc, cuda_home: /usr/local/cuda-13.0}
    launch: {launched: false, ok: null, reason: no GPU device node (/dev/nvidia0)}
    warm: {modules: [{name: sampling, compiled: true, seconds: 86.2}], cache_dir: /var/cache/sglang/jit/2c26817414e442ed/.cache/flashinfer/0.7.2.post1/120a}
launched:
  description: Whether a kernel ran on a GPU.
  returned: always
  type: bool
log:
  description: The log on the host with the failed step's full output (null when it could not be written; the message says why).
  returned: failure
  type: str
  sample: /var/log/blackwell-inference/jit_smoke-sglang-k26.service-warm-20261206T142301Z.log
"""

import os
import pwd
import shutil
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.blackwell.inference.plugins.module_utils.common import commands, failure
from ansible_collections.blackwell.inference.plugins.module_utils.common import env as service_env
from ansible_collections.blackwell.inference.plugins.module_utils.common import systemd as systemd_env
from ansible_collections.blackwell.inference.plugins.module_utils.cuda import nvidia_smi
from ansible_collections.blackwell.inference.plugins.module_utils.flashinfer import jit_smoke
from ansible_collections.blackwell.inference.plugins.module_utils.flashinfer import rules as flashinfer_rules

# what a failed smoke leaves: it writes FlashInfer's JIT cache and a temporary directory, nothing of the service
KEPT = "nothing else was changed: the smoke writes only FlashInfer's JIT cache; the service was neither stopped nor restarted"


def failed(failure_text, steps, output, unit=None, log_dir=failure.LOG_DIR, now=None):
    """fail_json's arguments for a failed smoke (run_steps' failure, steps and the failed step's command output):
    the message in a few lines (what failed and the cause, what stays, the log), the steps with the failed one's
    error or detail as one line, the command's rc/stdout/stderr bounded, and `log`: the full output on the host."""
    step = list(steps)[-1] if steps else "smoke"
    kept = dict(steps)
    if step in kept:
        kept[step] = dict(kept[step])
        for key in ("error", "detail"):
            if kept[step].get(key):
                kept[step][key] = failure.one_line(kept[step][key])
    msg, fields = failure.report("jit_smoke", step, failure_text, output, KEPT, unit, log_dir, now)
    return dict(fields, msg=msg, steps=kept)


def timed(func, *args, **kw):
    start = time.monotonic()
    res = func(*args, **kw)
    return res, round(time.monotonic() - start, 2)


def as_user_runner(run, account):
    """The same runner, each command started as the account (uid, primary gid, supplementary groups)."""
    prefix = ["setpriv", "--reuid=%d" % account.pw_uid, "--regid=%d" % account.pw_gid, "--init-groups", "--"]

    def run_as(argv, env=None, timeout=60, data=None):
        return run(prefix + list(argv), env=env, timeout=timeout, data=data)

    return run_as


def gpu_ccs(module, run):
    res = run(nvidia_smi.query_argv(module.params["nvidia_smi"]))
    if not res.ok:
        return []
    try:
        return nvidia_smi.summarize_gpus(nvidia_smi.parse_query(res.stdout))
    except nvidia_smi.NvidiaSmiError:
        return []


def run_module():
    module = AnsibleModule(
        argument_spec=dict(
            venv=dict(type="path"),
            environment=dict(type="dict", default={}),
            unit=dict(type="str"),
            user=dict(type="str"),
            archs=dict(type="list", elements="str", default=[]),
            nvidia_smi=dict(type="str", default="nvidia-smi"),
            launch=dict(type="str", choices=["auto", "always", "never"], default="auto"),
            warm=dict(type="list", elements="str", choices=list(jit_smoke.WARMABLE), default=["sampling"]),
            timeout=dict(type="int", default=1800),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if p["warm"] and not p["venv"]:
        module.fail_json(msg="warm=%s needs venv (the service's venv runs FlashInfer)" % ",".join(p["warm"]))
    run = commands.CachingRunner(commands.module_runner(module))
    env, _notes = systemd_env.service_environment(module, run, p["unit"], p["environment"])
    as_user, account = run, None
    if p["user"]:
        try:
            account = pwd.getpwnam(p["user"])
        except KeyError:
            module.fail_json(msg="user %s does not exist on this host" % p["user"])
        env.setdefault("HOME", account.pw_dir)
        if account.pw_uid != os.geteuid():
            as_user = as_user_runner(run, account)
        else:
            account = None
    public = service_env.split_env(env)[0]
    if module.check_mode:
        module.exit_json(changed=False, launched=False, steps={}, msg="check mode: nothing compiled, launched or warmed")

    try:
        cuda_home, _source = flashinfer_rules.resolve_cuda_home(env, run, None)
    except flashinfer_rules.FlashInferError as exc:
        module.fail_json(msg="no CUDA home in the service environment: %s" % exc)
    nvcc = os.path.join(cuda_home, "bin", "nvcc")
    try:
        archs = [jit_smoke.nvcc_arch(a) for a in p["archs"]] if p["archs"] else jit_smoke.archs_for(env, gpu_ccs(module, run))
    except ValueError as exc:
        module.fail_json(msg="archs: %s" % exc)
    if not archs:
        module.fail_json(msg="nothing to compile for: no FLASHINFER_CUDA_ARCH_LIST in the service environment, no GPU found, no archs given")

    # the service's account compiles and launches (issue 58 item 1): root never runs nvcc with the unit's environment
    work = tempfile.mkdtemp(prefix="blackwell-jit-smoke-")
    if account is not None:
        os.chown(work, account.pw_uid, account.pw_gid)
    src, binary = os.path.join(work, "saxpy.cu"), os.path.join(work, "saxpy")
    # FlashInfer's warm-up needs nothing from the saxpy steps: it runs beside them (its import alone takes seconds)
    warm_job = warm_start = None
    if p["warm"]:
        argv, public_env, data = service_env.python_call(os.path.join(p["venv"], "bin", "python"), jit_smoke.WARM_SCRIPT, p["warm"], env)
        warm_start = time.monotonic()
        warm_job = commands.Background(as_user, argv, env=public_env, timeout=p["timeout"], data=data)

    def compile_saxpy():
        with open(src, "w") as fh:
            fh.write(jit_smoke.SAXPY_CU)
        # in the work directory: nvcc looks in its working directory first, and the module's own is root's alone
        res, secs = timed(as_user, ["env", "-C", work, *jit_smoke.saxpy_compile_argv(nvcc, archs, src, binary)], env=public, timeout=p["timeout"])
        return res.ok, {"ok": res.ok, "seconds": secs, "archs": archs, "nvcc": nvcc, "cuda_home": cuda_home}, res.as_dict()

    def launch_saxpy():
        res, secs = timed(as_user, [binary], env=public, timeout=p["timeout"])
        ok, detail = jit_smoke.launch_result(res.rc, res.stdout, res.stderr)
        return ok, {"launched": True, "ok": ok, "detail": detail, "seconds": secs}, res.as_dict()

    def warm():
        res = warm_job.wait()
        ok, step = jit_smoke.warm_result(res.rc if res.os_error is None else -1, res.stdout, res.stderr, round(time.monotonic() - warm_start, 2))
        return ok, step, res.as_dict()

    try:
        failure_text, steps, output = jit_smoke.run_steps(
            compile_saxpy, launch_saxpy, warm if warm_job else None, p["launch"], os.path.exists(jit_smoke.GPU_DEVICE)
        )
    finally:
        if warm_job:
            warm_job.stop()  # ended already, unless a saxpy step failed first: never left running behind the module
        shutil.rmtree(work, ignore_errors=True)
    if failure_text:
        module.fail_json(**failed(failure_text, steps, output, p["unit"]))
    changed = any(m["compiled"] for m in steps.get("warm", {}).get("modules", []))
    module.exit_json(changed=changed, launched=steps["launch"]["launched"], steps=steps)


def main():
    run_module()


if __name__ == "__main__":
    main()
