"""Fault injection on ct200 after converge: kill -9 of the play at its long steps (the toolkit install, the
venv build, the JIT smoke). Each test asserts the remote step really ran when the play was killed, that the
service kept serving its previous state, and that the next run converges. Each test starts from a fresh copy
of the converged image (`fresh`), so none has to converge back to the lab's inputs after itself.
"""

import os
import shlex
import signal
import subprocess

import pytest

from ..conftest import ROOT, on_host_until, playbook, playbook_command
from .test_faults import back_and_held, converges, health, installed, marker, remove_pinned_package, serving
from .test_ready_rollback import LAB_COMMAND

pytestmark = pytest.mark.usefixtures("fresh")


def kill_play_when(run, text, running, extra_vars=None, settle=True):
    """Start site.yml; once `text` shows and a process matching `running` (a pgrep -f regex, written so
    that it does not match the polling shell itself: `[b]in/nvcc`) runs on the host,
    SIGKILL the whole ansible-playbook process group. With `settle`, wait for that process to end (it
    finishes or dies with its session) before the test looks at the host."""
    cmd, env = playbook_command(extra_vars=extra_vars)
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if text in line:
            on_host_until(run, "pgrep -f %s >/dev/null" % shlex.quote(running), running)  # the fault hits this process
            os.killpg(proc.pid, signal.SIGKILL)
            break
    proc.wait()
    out = "".join(seen)
    assert text in out and proc.returncode == -signal.SIGKILL, out[-3000:]
    if settle:
        on_host_until(run, "! pgrep -f %s >/dev/null" % shlex.quote(running), "the end of " + running, timeout=300)
    return out


# -- kill -9 of the play ----------------------------------------------------------------------------


def test_play_killed_during_the_toolkit_install(run):
    pid = serving(run)
    remove_pinned_package(run)
    run("apt-mark unhold libcurand-13-0 >/dev/null && apt-get remove -y -q libcurand-13-0 >/dev/null")  # more to unpack
    kill_play_when(run, "TASK [blackwell.inference.cuda_toolkit : Install the pinned components]", "^/usr/bin/dpkg ")
    assert serving(run) == pid and run("readlink -f /usr/local/cuda").strip() == "/usr/local/cuda-12.8"
    # the install is finished (by the killed run's dpkg, or by this run: a toolkit change that revalidates the service)
    converges()
    back_and_held(run)
    assert installed(run, "libcurand-13-0")
    serving(run)
    assert marker(run)["ready"]


def test_play_killed_during_the_venv_build(run):
    pid, current = serving(run), run("readlink /opt/sglang/current").strip()
    # without bytecode (a third of the build: the service, run as root, writes what it imports on first use)
    pins = {
        "sglang_venv_packages": ["flashinfer-python==0.7.4", "torch==2.13.0", "tabulate==0.9.0"],
        "sglang_venv_packages_no_deps": [],  # FlashInfer alone in this venv (no SGLang layer)
        "sglang_venv_check_imports": ["flashinfer", "torch"],
        "sglang_venv_bytecode": False,
        # the service on it loads and warms FlashInfer's quantization module (a cold build of about a minute of CPU), not a second
        # cold sampling build in the suite: the rerun still builds, checks, switches, smoke-tests and restarts
        "sglang_service_command": [*LAB_COMMAND, "--module", "quantization"],
        "sglang_service_jit_warm": ["quantization"],
    }
    kill_play_when(run, "TASK [blackwell.inference.sglang_venv : Install the pinned packages", "[b]in/python -m pip install", extra_vars=pins, settle=False)
    assert run("readlink /opt/sglang/current").strip() == current and serving(run) == pid
    assert marker(run)["ready"]
    rc, out, _recap = playbook(extra_vars=pins)  # the build is redone, checked, switched, smoke-tested and restarted on it
    assert rc == 0, out[-4000:]
    # the variables' command replaced the unit's own, and the summary shows both
    flat = " ".join(out.split())
    assert "service command (from the variables): " + " ".join(pins["sglang_service_command"]) in flat, flat[-3000:]
    assert "it replaced the unit's own: /root/venv_sglang211/bin/python /usr/local/libexec/sglang-standin.py --model-path" in flat
    assert run("readlink /opt/sglang/current").strip() != current and serving(run) != pid and marker(run)["ready"]
    assert [load["name"] for load in health(run)["loads"]] == ["quantization"]


def test_play_killed_during_the_smoke(run):
    pid, before = serving(run), marker(run)
    changed = {"sglang_service_environment": {"NCCL_DEBUG": "WARN"}}
    smoke = "blackwell.inference.sglang_service : Run the JIT smoke in the service's environment]"  # a handler's included task
    kill_play_when(run, smoke, "[b]in/nvcc", extra_vars=changed)
    assert serving(run) == pid  # not restarted onto an unvalidated state
    assert marker(run)["inputs"] == before["inputs"]  # nothing vouched for the new inputs
    converges(changed)  # revalidated (marker inputs differ), then restarted
    assert marker(run)["ready"] and marker(run)["inputs"] != before["inputs"] and serving(run) != pid
