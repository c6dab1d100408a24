# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run a command from an argument list, optionally under an exact environment.

FlashInfer reacts differently to a missing nvcc (FileNotFoundError, caught) and to one that
cannot be executed (PermissionError, not caught), so the result keeps that distinction. Commands
run as `timeout T [env -i K=V ...] argv`: `env -i` gives the process exactly the service's
environment (and finds argv[0] on *that* PATH, as Python's subprocess does), and the exit codes
of timeout/env tell an exec failure from the program's own status (127: not found, 126: found
but not executable, 124: timed out).
"""

from __future__ import annotations

import json

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


# What a process needs on its command line because it is read before any code runs (the dynamic
# loader, the interpreter) or because FlashInfer's lookup commands use it. Everything else of a
# service environment (tokens, passwords from EnvironmentFile=) is handed over on stdin where a
# command takes it, so it never shows up in the host's process list.
COMMAND_LINE_KEYS = ("PATH", "HOME", "CUDA_HOME", "CUDA_PATH", "TMPDIR", "LANG", "LC_ALL")
COMMAND_LINE_PREFIXES = ("LD_", "PYTHON", "NVCC_")


def split_env(env):
    """(on the command line, on stdin) parts of an environment."""
    public = {k: v for k, v in env.items() if k in COMMAND_LINE_KEYS or k.startswith(COMMAND_LINE_PREFIXES)}
    return public, {k: v for k, v in env.items() if k not in public}


def module_runner(module):
    """run(argv, env=None, timeout=60, data=None) -> CommandResult, through AnsibleModule.run_command."""

    def run(argv, env=None, timeout=60, data=None):
        rc, out, err = module.run_command(wrap(argv, env, timeout), check_rc=False, data=data)
        return interpret(argv, rc, out, err, timeout)

    return run


def run_python(run, python, script, args=(), env=None, timeout=60):
    """Run `python -c script args...` under exactly env: the command-line part via env -i, the rest
    as JSON on stdin (the script starts with os.environ.update(json.load(sys.stdin)))."""
    public, private = split_env(env or {})
    return run([python, "-c", script, *args], env=public, timeout=timeout, data=json.dumps(private))


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
