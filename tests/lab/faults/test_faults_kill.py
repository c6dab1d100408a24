"""Fault injection on ct200 after converge: kill -9 of the play at its long steps (the toolkit install, the JIT smoke;
the venv build's is tests/lab/after/test_sglang_venv.py's kill test). Each test asserts the remote step really ran when the play was killed, that the
service kept serving its previous state, and that the next run converges. Each test starts from a fresh copy
of the converged image (`fresh`), so none has to converge back to the lab's inputs after itself.
"""

import os
import shlex
import signal
import subprocess

import pytest

from ..conftest import ROOT, on_host_until, playbook_command
from .test_faults import back_and_held, converges, installed, marker, remove_pinned_package, serving

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


def test_play_killed_during_the_smoke(run):
    pid, before = serving(run), marker(run)
    changed = {"sglang_service_environment": {"NCCL_DEBUG": "WARN"}}
    smoke = "blackwell.inference.sglang_service : Run the JIT smoke in the service's environment]"  # a handler's included task
    kill_play_when(run, smoke, "[b]in/nvcc", extra_vars=changed)
    assert serving(run) == pid  # not restarted onto an unvalidated state
    assert marker(run)["inputs"] == before["inputs"]  # nothing vouched for the new inputs
    converges(changed)  # revalidated (marker inputs differ), then restarted
    assert marker(run)["ready"] and marker(run)["inputs"] != before["inputs"] and serving(run) != pid
