"""commands.Background: a command started beside the module's next steps (the JIT smoke's warm-up), through the same
runner and exit-status reading as any other command."""

import subprocess
import time

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.common import commands

PATH = {"PATH": "/usr/bin:/bin"}


def run(argv, env=None, timeout=60, data=None):
    """A runner as module_runner builds it, without an AnsibleModule: the same wrapped command and reading."""
    proc = subprocess.run(commands.wrap(argv, env, timeout), input=data, capture_output=True, text=True, check=False)
    return commands.interpret(argv, proc.returncode, proc.stdout, proc.stderr, timeout)


def test_output_status_and_stdin_come_back():
    job = commands.Background(run, ["sh", "-c", "cat; echo err >&2; exit 3"], env=PATH, data='{"K": "v"}')
    res = job.wait()
    assert (res.rc, res.stdout, res.stderr, res.os_error) == (3, '{"K": "v"}', "err\n", None)
    assert job.wait() is res  # asked again: the same result


def test_a_missing_program_reads_as_file_not_found():
    res = commands.Background(run, ["no-such-program-here"], env=PATH).wait()
    assert res.os_error == "FileNotFoundError" and res.rc is None


def test_it_runs_beside_the_caller_and_times_out_like_a_runner():
    start = time.monotonic()
    job = commands.Background(run, ["sleep", "5"], timeout=1)
    assert time.monotonic() - start < 0.5  # started, not waited for
    assert job.wait().os_error == "TimeoutExpired"
    assert time.monotonic() - start < 4


def test_a_runner_that_raises_becomes_the_result():
    def broken(argv, env=None, timeout=60, data=None):
        raise SystemExit(1)  # AnsibleModule.fail_json inside run_command

    res = commands.Background(broken, ["x"]).wait()
    assert res.os_error == "SystemExit" and not res.ok


def test_stop_ends_the_command_and_its_children(tmp_path):
    marker = tmp_path / "child-pid"
    job = commands.Background(run, ["sh", "-c", "sleep 30 & echo $! > %s; wait" % marker])
    for _attempt in range(100):
        if marker.exists() and marker.read_text().strip():
            break
        time.sleep(0.05)
    child = int(marker.read_text())
    start = time.monotonic()
    res = job.stop()
    assert time.monotonic() - start < 3
    assert not res.ok
    time.sleep(0.2)
    try:
        with open("/proc/%d/stat" % child) as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        state = "gone"
    assert state in ("gone", "Z")  # the command's own child got SIGTERM too (timeout's process group)
    assert job.stop() is res


def test_stop_after_the_end_keeps_the_result():
    job = commands.Background(run, ["true"])
    res = job.wait()
    assert job.stop() is res and res.ok


def test_running_children_matches_the_tail_of_a_childs_command_line():
    proc = subprocess.Popen(["sleep", "7.25"])
    try:
        assert commands.running_children(["sleep", "7.25"]) == [proc.pid]
        assert commands.running_children(["7.25"]) == [proc.pid]
        assert commands.running_children(["sleep", "7.5"]) == []
    finally:
        proc.kill()
        proc.wait()


class _Module:
    """What Quiet wraps: an AnsibleModule's fail_json (prints and exits) and run_command (fails the module on an
    OSError when handle_exceptions, and on rc != 0 with check_rc)."""

    def __init__(self):
        self.seen = []

    def fail_json(self, msg, **kw):
        raise AssertionError("the module's own fail_json was called: " + msg)

    def run_command(self, args, check_rc=False, handle_exceptions=True, **kw):
        self.seen.append((args, check_rc, handle_exceptions))
        if args[0] == "missing":
            if handle_exceptions:
                self.fail_json(msg="No such file")
            raise FileNotFoundError("No such file or directory: 'missing'")
        return (3, "out", "err") if args[0] == "false" else (0, "ok", "")

    boolean = staticmethod(bool)


def test_quiet_raises_where_the_module_would_answer_and_exit():
    module = _Module()
    quiet = commands.Quiet(module)
    assert quiet.run_command(["true"]) == (0, "ok", "") and module.seen[-1] == (["true"], False, False)
    assert quiet.boolean(1) is True  # everything else is the module's
    with pytest.raises(FileNotFoundError):
        quiet.run_command(["missing"])
    with pytest.raises(commands.ModuleFailure) as failed:
        quiet.run_command(["false"], check_rc=True)
    assert failed.value.result == {"rc": 3, "stdout": "out", "stderr": "err"}
    assert quiet.run_command(["false"]) == (3, "out", "err")
    with pytest.raises(commands.ModuleFailure, match="cannot read the environment") as failed:
        quiet.fail_json(msg="cannot read the environment of unit x.service", rc=1)
    assert failed.value.result == {"rc": 1}
    # in a thread: the caller gets the failure, nothing is printed by the thread
    with pytest.raises(commands.ModuleFailure, match="boom"):
        commands.aside(lambda m: m.fail_json(msg="boom"), quiet)()
