"""The health wait's judgement of a unit, from `systemctl show` outputs of systemd 252 (Debian 12, the lab host)."""

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils import service_health as sh

RUNNING = "Result=success\nNRestarts=0\nExecMainStatus=0\nActiveState=active\nSubState=running\n"
# Restart=on-failure, the process exited 2: waiting for its restart, then restarted once
AUTO_RESTART = "Result=exit-code\nNRestarts=0\nExecMainStatus=2\nActiveState=activating\nSubState=auto-restart\n"
RESTARTED_ONCE = "Result=exit-code\nNRestarts=1\nExecMainStatus=2\nActiveState=activating\nSubState=auto-restart\n"
LOOPING = "Result=exit-code\nNRestarts=7\nExecMainStatus=1\nActiveState=active\nSubState=running\n"
# Restart=no (ct200's own unit), argparse refused a flag
FAILED = "Result=exit-code\nNRestarts=0\nExecMainStatus=2\nActiveState=failed\nSubState=failed\n"
# exited 0 under Restart=on-failure, or a unit that does not exist
DEAD = "Result=success\nNRestarts=0\nExecMainStatus=0\nActiveState=inactive\nSubState=dead\n"
STARTING = "Result=success\nNRestarts=0\nExecMainStatus=0\nActiveState=activating\nSubState=start\n"


def test_show_argv_is_an_argument_list():
    argv = sh.show_argv("sglang-k26.service")
    assert argv[:3] == ["systemctl", "show", "sglang-k26.service"] and argv[3::2] == ["-p"] * 5 and set(argv[4::2]) == set(sh.PROPERTIES)


def test_parse_show():
    props = sh.parse_show(FAILED)
    assert props == {"Result": "exit-code", "NRestarts": 0, "ExecMainStatus": "2", "ActiveState": "failed", "SubState": "failed"}
    assert sh.parse_show("")["NRestarts"] == 0 and sh.parse_show("NRestarts=x\n")["NRestarts"] == 0
    assert sh.describe(props) == "ActiveState=failed SubState=failed Result=exit-code ExecMainStatus=2 NRestarts=0"


@pytest.mark.parametrize(
    "show,before,limit,expected",
    [
        (RUNNING, 0, 3, None),  # up, loading its model: keep waiting
        (STARTING, 0, 3, None),  # Type=notify still starting
        (AUTO_RESTART, 0, 3, None),  # systemd will start it again
        (RESTARTED_ONCE, 0, 3, None),
        (FAILED, 0, 3, "the unit is failed and will not be restarted"),
        (DEAD, 0, 3, "the unit is inactive and will not be restarted"),
        (LOOPING, 4, 3, "the unit crashed and was restarted 3 times since it was started"),
        (LOOPING, 5, 3, None),  # restarts from before the wait do not count
        (LOOPING, 0, 0, None),  # crash_limit 0: restarts never end the wait
        ("", 0, 3, None),
    ],
)
def test_gave_up(show, before, limit, expected):
    assert sh.gave_up(sh.parse_show(show) if show else {}, before, limit) == expected


def test_failure_names_the_timeout_or_the_reason_and_the_unit_state():
    props = sh.parse_show(FAILED)
    assert sh.failure("http://127.0.0.1:30000/health", 900, 900.4, -1, props, None) == (
        "did not answer http://127.0.0.1:30000/health within 900 s (last status -1; systemd: "
        "ActiveState=failed SubState=failed Result=exit-code ExecMainStatus=2 NRestarts=0)"
    )
    assert sh.failure("http://h/health", 900, 2.6, 503, props, "the unit is failed and will not be restarted").startswith(
        "did not answer http://h/health: the unit is failed and will not be restarted after 3 s (last status 503; systemd: ActiveState=failed"
    )


def test_start_argv_asks_for_unix_time():
    assert sh.start_argv("sglang-k26.service") == ["systemctl", "show", "sglang-k26.service", "--timestamp=unix", "-p", "ExecMainStartTimestamp"]


@pytest.mark.parametrize(
    "stdout,usec",
    [
        # systemd 252 (Debian 12), a unit that ran / one that never started
        ("ExecMainStartTimestamp=@1764597600\n", 1764597600000000),
        ("ExecMainStartTimestamp=\n", None),
        ("ExecMainStartTimestamp=@1764597600.25\n", 1764597600250000),
        ("", None),
        # a systemd without --timestamp=unix prints its local time: no filter, not a wrong one
        ("ExecMainStartTimestamp=Tue 2026-12-01 13:20:00 UTC\n", None),
    ],
)
def test_parse_start(stdout, usec):
    assert sh.parse_start(stdout) == usec


def test_failure_of_a_single_look():
    props = sh.parse_show(FAILED)
    assert sh.failure("http://h/health", 0, 0.1, -1, props, "the unit is failed and will not be restarted") == (
        "does not answer http://h/health: the unit is failed and will not be restarted (last status -1; systemd: "
        "ActiveState=failed SubState=failed Result=exit-code ExecMainStatus=2 NRestarts=0)"
    )
    assert sh.failure("http://h/health", 0, 0.1, 503, {}, None) == "does not answer http://h/health (last status 503; systemd: no state)"
