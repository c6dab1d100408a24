# -*- coding: utf-8 -*-
# Copyright: blackwell.inference contributors
# Apache License 2.0 (see https://www.apache.org/licenses/LICENSE-2.0)
"""Run a command from an argument list with an exact environment.

The result keeps the OS error class (FileNotFoundError, PermissionError) because FlashInfer's
own lookup reacts to them differently; flashinfer_rules needs to see which one happened.
"""

from __future__ import annotations

import subprocess

# systemd's built-in PATH for services (split-usr build, as on Debian 12 / Ubuntu 24.04):
# what a unit without Environment=PATH=... sees.
SYSTEMD_DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class CommandResult:
    """Outcome of one command: rc/stdout/stderr, or the OSError that prevented the exec."""

    __slots__ = ("argv", "rc", "stdout", "stderr", "os_error")

    def __init__(self, argv, rc=None, stdout="", stderr="", os_error=None):
        self.argv = list(argv)
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr
        self.os_error = os_error  # e.g. "FileNotFoundError", "PermissionError"

    @property
    def ok(self):
        return self.os_error is None and self.rc == 0

    def as_dict(self):
        return {
            "cmd": self.argv,
            "rc": self.rc,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "os_error": self.os_error,
        }


def run(argv, env=None, timeout=60):
    """Run argv (a list, never a shell string). env=None inherits, a dict replaces the environment."""
    try:
        proc = subprocess.run(  # noqa: S603 - argument list, no shell
            list(argv),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return CommandResult(argv, rc=None, stderr="timed out after %ss" % timeout, os_error="TimeoutExpired")
    except OSError as exc:
        return CommandResult(argv, rc=None, stderr=str(exc), os_error=type(exc).__name__)
    return CommandResult(
        argv,
        rc=proc.returncode,
        stdout=proc.stdout.decode("utf-8", "replace"),
        stderr=proc.stderr.decode("utf-8", "replace"),
    )


class CachingRunner:
    """Runs each distinct (argv, env) once per module invocation (nvcc --version is asked twice)."""

    def __init__(self, runner=run):
        self._runner = runner
        self._cache = {}
        self.calls = []

    def __call__(self, argv, env=None, timeout=60):
        key = (tuple(argv), tuple(sorted(env.items())) if env is not None else None)
        if key not in self._cache:
            self.calls.append(list(argv))
            self._cache[key] = self._runner(argv, env=env, timeout=timeout)
        return self._cache[key]
