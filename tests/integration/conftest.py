"""Shared helpers: run the collection's modules through Ansible, build the oracle venv."""

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
NVIDIA_SMI_DOUBLE = os.path.join(FIXTURES, "bin", "nvidia-smi")
CACHE = os.environ.get("BLACKWELL_CACHE_DIR", "/var/cache/blackwell-inference")
HERE = os.path.dirname(os.path.abspath(__file__))


def _ansible_env(extra_env=None):
    env = dict(os.environ)
    env.update(
        ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
        ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
        ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
        ANSIBLE_PYTHON_INTERPRETER=sys.executable,
        ANSIBLE_LOCALHOST_WARNING="0",
        ANSIBLE_INVENTORY_UNPARSED_WARNING="0",
    )
    env.update(extra_env or {})
    return env


def _json_run(argv, env, timeout):
    """Run an Ansible command whose stdout callback is JSON; its parsed output (a failure shows what it printed)."""
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    try:
        return json.loads(proc.stdout)
    except ValueError as exc:
        raise AssertionError("%s printed no JSON (rc=%s):\n%s\n%s" % (os.path.basename(argv[0]), proc.returncode, proc.stdout, proc.stderr)) from exc


def ansible_module_calls(module, calls, tmp_dir):
    """Run blackwell.inference.<module> once per args dict in `calls`, as the tasks of one play on localhost (one
    Ansible start for all, each call its own module run); return their result dicts in order."""
    play = [
        {
            "hosts": "localhost",
            "gather_facts": False,
            "tasks": [{"name": "call %d" % i, "blackwell.inference." + module: args, "ignore_errors": True} for i, args in enumerate(calls)],
        }
    ]
    path = os.path.join(str(tmp_dir), "calls.yml")
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(play, fh)  # JSON is YAML: the arguments go in literally, nothing is templated
    out = _json_run([os.path.join(BIN, "ansible-playbook"), "-i", "localhost,", "-c", "local", path], _ansible_env(), timeout=1800)
    results = [task["hosts"]["localhost"] for task in out["plays"][0]["tasks"]]
    assert len(results) == len(calls), json.dumps(out)[-3000:]
    return results


def ansible_module(module, args, extra_env=None, extra_args=()):
    """Run `ansible localhost -m blackwell.inference.<module>` and return its result dict."""
    argv = [
        os.path.join(BIN, "ansible"),
        "localhost",
        "-i",
        "localhost,",
        "-c",
        "local",
        "-m",
        "blackwell.inference." + module,
        "-a",
        json.dumps(args),
        *extra_args,
    ]
    out = _json_run(argv, _ansible_env(extra_env), timeout=900)
    return out["plays"][0]["tasks"][0]["hosts"]["localhost"]


def _python311():
    for cand in ("python3.11", os.path.expanduser("~/.pyenv/versions/3.11.7/bin/python3")):
        path = shutil.which(cand) or (cand if os.path.exists(cand) else None)
        if path:
            return path
    return None


@pytest.fixture(scope="session")
def oracle_venv():
    """A venv with real flashinfer-python 0.7.2.post1 + CPU torch 2.13.0, cached by its inputs."""
    try:
        return build_oracle_venv()
    except RuntimeError as exc:
        pytest.fail(str(exc))


def build_oracle_venv():
    """Build (or find) the oracle venv; `make test` starts this early, in the background (tools/test.sh)."""
    reqs = [os.path.join(FIXTURES, "flashinfer-cpu-requirements.txt"), os.path.join(HERE, "oracle-flashinfer.txt")]
    python = _python311()
    if python is None:
        raise RuntimeError("the oracle needs Python 3.11 (the CPU torch wheel on this machine kind is cp311)")
    digest = hashlib.sha256(python.encode())
    for r in reqs:
        with open(r, "rb") as fh:
            digest.update(fh.read())
    venv = os.path.join(CACHE, "oracle-venv-" + digest.hexdigest()[:12])
    if os.path.exists(os.path.join(venv, ".complete")):
        return venv
    os.makedirs(CACHE, exist_ok=True)
    # one builder at a time: make test starts it in the background while pytest runs, and the fixture waits for it
    with open(os.path.join(CACHE, "oracle-venv.lock"), "a", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _build_oracle_venv(python, reqs, venv)
    return venv


def _build_oracle_venv(python, reqs, venv):
    if not os.path.exists(os.path.join(venv, ".complete")):
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([python, "-m", "venv", venv], check=True)
        pip = [os.path.join(venv, "bin", "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        subprocess.run([*pip, "-r", reqs[0]], check=True)
        subprocess.run([*pip, "--no-deps", "-r", reqs[1]], check=True)
        with open(os.path.join(venv, ".complete"), "w"):
            pass
        for stale in os.listdir(CACHE):  # venvs of older inputs are never used again
            if stale.startswith("oracle-venv-") and os.path.join(CACHE, stale) != venv:
                shutil.rmtree(os.path.join(CACHE, stale), ignore_errors=True)


if __name__ == "__main__":
    print(build_oracle_venv())
