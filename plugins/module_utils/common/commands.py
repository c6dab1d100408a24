# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run a command from an argument list, optionally under an exact environment (what part of a service's
environment may go on a command line is module_utils/common/env.py's policy).

FlashInfer reacts differently to a missing nvcc (FileNotFoundError, caught) and to one that
cannot be executed (PermissionError, not caught), so the result keeps that distinction. Commands
run as `timeout T [env -i K=V ...] argv`: `env -i` gives the process exactly the service's
environment (and finds argv[0] on *that* PATH, as Python's subprocess does), and the exit codes
of timeout/env tell an exec failure from the program's own status (127: not found, 126: found
but not executable, 124: timed out).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading

from ansible_collections.blackwell.inference.plugins.module_utils.common import env as service_env

RC_TIMEOUT = 124
RC_CANNOT_EXECUTE = 126
RC_NOT_FOUND = 127


class CommandResult:
    """Outcome of one command: rc/stdout/stderr, or the OS error that prevented the exec."""

    __slots__ = ("argv", "os_error", "rc", "stderr", "stdout")

    def __init__(self, argv, rc=None, stdout="", stderr="", os_error=None):
        self.argv = list(argv)
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr
        self.os_error = os_error  # "FileNotFoundError", "PermissionError" or "TimeoutExpired"

    @property
    def ok(self):
        return self.os_error is None and self.rc == 0

    def as_dict(self):
        return {"cmd": self.argv, "rc": self.rc, "stdout": self.stdout, "stderr": self.stderr, "os_error": self.os_error}


def wrap(argv, env=None, timeout=60):
    """The argument list actually executed: `timeout T [env -i K=V ...] argv`."""
    cmd = ["timeout", "--kill-after=5", str(int(timeout))]
    if env is not None:
        cmd += ["env", "-i"] + ["%s=%s" % (k, v) for k, v in sorted(env.items())]
    return cmd + list(argv)


def interpret(argv, rc, stdout, stderr, timeout=60):
    """Turn the wrapped command's exit status back into the program's outcome."""
    if rc == RC_TIMEOUT:
        return CommandResult(argv, stdout=stdout, stderr="timed out after %ss" % timeout, os_error="TimeoutExpired")
    if rc == RC_NOT_FOUND:
        return CommandResult(argv, stdout=stdout, stderr=stderr.strip() or "No such file or directory", os_error="FileNotFoundError")
    if rc == RC_CANNOT_EXECUTE:
        return CommandResult(argv, stdout=stdout, stderr=stderr.strip() or "Permission denied", os_error="PermissionError")
    return CommandResult(argv, rc=rc, stdout=stdout, stderr=stderr)


def module_runner(module):
    """run(argv, env=None, timeout=60, data=None) -> CommandResult, through AnsibleModule.run_command."""

    def run(argv, env=None, timeout=60, data=None):
        rc, out, err = module.run_command(wrap(argv, env, timeout), check_rc=False, data=data)
        return interpret(argv, rc, out, err, timeout)

    return run


def run_python(run, python, script, args=(), env=None, timeout=60):
    """Run `python -c script args...` under exactly env (service_env.python_call)."""
    argv, public, data = service_env.python_call(python, script, args, env)
    return run(argv, env=public, timeout=timeout, data=data)


class Background:
    """A command started now through a runner and collected later, so that it runs beside the module's next steps."""

    def __init__(self, run, argv, env=None, timeout=60, data=None):
        self.argv = list(argv)
        self._result = None
        self._thread = threading.Thread(target=self._run, args=(run, env, timeout, data), daemon=True)
        self._thread.start()

    def _run(self, run, env, timeout, data):
        try:
            self._result = run(self.argv, env=env, timeout=timeout, data=data)
        except BaseException as exc:  # whatever stopped the runner (fail_json: SystemExit) is this command's result
            self._result = CommandResult(self.argv, stderr=str(exc), os_error=type(exc).__name__)

    def wait(self):
        """The CommandResult, once the command has ended (the same one when asked again)."""
        self._thread.join()
        return self._result

    def stop(self, proc="/proc"):
        """End it early: SIGTERM to this process's child running it (timeout(1), which passes it on to the command's
        process group), then its result."""
        while self._thread.is_alive():  # again until it ends: the runner may not have started it yet
            for pid in running_children(self.argv, proc):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
            self._thread.join(0.5)
        return self.wait()


class ModuleFailure(Exception):
    """What fail_json would have answered, raised instead (Quiet): msg and the result's other keys."""

    def __init__(self, msg, result=None):
        super().__init__(msg)
        self.msg = msg
        self.result = result or {}


class Quiet:
    """A module as code run aside (aside()) sees it: fail_json raises ModuleFailure instead of printing the module's
    answer and exiting, and run_command raises where it would have failed the module (an OSError; check_rc), so only
    the main thread ever answers. Everything else is the module's."""

    def __init__(self, module):
        self._module = module

    def __getattr__(self, name):
        return getattr(self._module, name)

    def fail_json(self, msg, **result):
        raise ModuleFailure(msg, result)

    def run_command(self, args, check_rc=False, **kwargs):
        kwargs["handle_exceptions"] = False
        rc, out, err = self._module.run_command(args, check_rc=False, **kwargs)
        if check_rc and rc != 0:
            raise ModuleFailure("%s: rc %s" % (args, rc), {"rc": rc, "stdout": out, "stderr": err})
        return rc, out, err


class Unanswered(RuntimeError):
    """A call made aside that ended without a value or an exception (SystemExit from a fail_json, say)."""


def aside(fn, *args):
    """Start fn(*args) in a thread of its own, so it runs beside what the caller does next. Returns a function that
    waits for it and returns what it returned, or raises what it raised (an Exception), in the caller's thread; one
    stopped by anything else raises Unanswered. Give fn Quiet(module), never the module: a fail_json in the thread
    would print an answer of its own before the module's."""
    done = {}

    def target():
        try:
            done["value"] = fn(*args)
        except Exception as exc:  # raised again by the caller, in its own thread
            done["error"] = exc
        except BaseException as exc:  # SystemExit, say: fn was given a module, not Quiet(module)
            done["stopped"] = type(exc).__name__

    thread = threading.Thread(target=target, daemon=True)
    thread.start()

    def result():
        thread.join()
        if "error" in done:
            raise done["error"]
        if "value" not in done:
            raise Unanswered("stopped without an answer (%s)" % done.get("stopped", "no result"))
        return done["value"]

    return result


def running_children(argv, proc="/proc"):
    """PIDs of this process's children whose command line ends with argv (a runner's wrapped command)."""
    tail = [a.encode() for a in argv]
    found = []
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        try:
            with open(os.path.join(proc, entry, "stat"), "rb") as fh:
                ppid = int(fh.read().rsplit(b")", 1)[1].split()[1])
            with open(os.path.join(proc, entry, "cmdline"), "rb") as fh:
                cmdline = fh.read().split(b"\0")[:-1]
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid() and cmdline[-len(tail) :] == tail:
            found.append(int(entry))
    return found


def last_json_line(stdout):
    """The result line a script printed last (libraries may log to stdout before it)."""
    lines = [ln for ln in (stdout or "").splitlines() if ln.strip().startswith("{")]
    if not lines:
        raise ValueError("no JSON result line")
    return json.loads(lines[-1])


class CachingRunner:
    """Runs each distinct (argv, env) once per module invocation (nvcc --version is asked twice)."""

    def __init__(self, runner):
        self._runner = runner
        self._cache = {}
        self.calls = []

    def __call__(self, argv, env=None, timeout=60, data=None):
        key = (tuple(argv), tuple(sorted(env.items())) if env is not None else None, data)
        if key not in self._cache:
            self.calls.append(list(argv))
            self._cache[key] = self._runner(argv, env=env, timeout=timeout, data=data)
        return self._cache[key]
