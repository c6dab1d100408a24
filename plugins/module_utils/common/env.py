# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How a service's environment is handed to a command run in it: the part a process needs on its command line,
the rest (tokens, passwords from EnvironmentFile=) on stdin, so no secret shows up in the host's process list.
The runner (module_utils/common/commands.py) executes what this decides."""

from __future__ import annotations

import json

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


def python_call(python, script, args=(), env=None):
    """(argv, command-line env, stdin) of `python -c script args...` under exactly env: the command-line part via
    env -i, the rest as JSON on stdin (the script starts with os.environ.update(json.load(sys.stdin)))."""
    public, private = split_env(env or {})
    return [python, "-c", script, *args], public, json.dumps(private)
