"""One play at a time per host: the lock record, who may take it over, and /proc/PID/stat."""

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.host import lock as hl

MID, BOOT = "0f3c2a9e8d1b4c5d6e7f8091a2b3c4d5", "6b1e0c52-1f4e-4d8a-9a53-8e1f7c2d4b10"
MINE = hl.record("ctl-1", 4242, 1550505, "ops", "2026-11-30T23:00:00Z", "Provision Blackwell inference hosts", MID, BOOT)
# TEST DOUBLE: another controller with the same host name (cloned VMs): another machine-id
TWIN = dict(MINE, machine_id="a9d1e2f3a4b5c6d7e8f90a1b2c3d4e5f", boot_id="1c0ffee0-0000-4000-8000-000000000001")
# an older collection's record: host name only
OLD = {"controller": "ctl-1", "pid": 4242, "pid_start": 1550505, "user": "ops", "since": "2026-11-30T23:00:00Z", "play": ""}
# /proc/PID/stat of an ansible-playbook process (comm with a space and parentheses, start time 1550505)
STAT = "4242 (ansible-playbook (x)) S 4200 4242 4200 34816 4242 4194304 3000 0 0 0 150 30 0 0 20 0 3 0 1550505 300000000 15000 18446744073709551615"
BOUND = hl.STALE_AFTER


def alive_only(*pids):
    return lambda pid, start: pid in pids


@pytest.mark.parametrize(
    "holder,alive,age,why",
    [
        (None, alive_only(), None, "an unreadable lock record"),  # a writer killed mid-write
        (MINE, alive_only(4242), 9000, ""),  # a live play here: wait for it, whatever its heartbeat
        (MINE, alive_only(), 3, "its process is gone from this controller"),  # kill -9 of the play: take over
        # this machine-id on another boot: this controller before a reboot, or a clone of it - told by the heartbeat only
        (dict(MINE, boot_id="0a0a0a0a-old-boot"), alive_only(4242), 3, ""),
        (dict(MINE, boot_id="0a0a0a0a-old-boot"), alive_only(), BOUND + 1, "its controller's heartbeat is 7201 s old (bound 7200 s)"),
        # issue 58 item 3: a container sharing this machine-id and kernel, in another PID namespace; its pid 4242 means
        # nothing here, alive or not: judged by its heartbeat
        (dict(MINE, pid_ns="pid:[4026532999]"), alive_only(), 30, ""),
        (dict(MINE, pid_ns="pid:[4026532999]"), alive_only(), BOUND + 1, "its controller's heartbeat is 7201 s old (bound 7200 s)"),
        (MINE, alive_only(4242), hl.BOOTED_SINCE, "the host booted since its heartbeat"),
        # another controller with this host name, pid 4242 not alive here: judged by its heartbeat, never by our pids
        (TWIN, alive_only(), 30, ""),
        (TWIN, alive_only(), BOUND, ""),
        (TWIN, alive_only(), BOUND + 1, "its controller's heartbeat is 7201 s old (bound 7200 s)"),
        (TWIN, alive_only(), None, ""),  # no age known: waited for
        (OLD, alive_only(), 60, ""),  # an older record, same host name: not ours to judge by pid either
        (OLD, alive_only(), BOUND + 60, "its controller's heartbeat is 7260 s old (bound 7200 s)"),
    ],
)
def test_stale(holder, alive, age, why):
    assert hl.stale(holder, MINE, alive, age, BOUND) == why


@pytest.mark.parametrize("value,bound", [(7200, 7200), ("7200", 7200), (5401, 5401), (86400, 86400), (None, 7200), ("", 7200)])
def test_stale_bound(value, bound):
    assert hl.stale_bound(value) == bound


@pytest.mark.parametrize("value", [5400, 600, 0, -1, "two hours"])
def test_stale_bound_is_longer_than_the_longest_stretch_or_refused_naming_the_variable(value):
    with pytest.raises(ValueError, match=r"blackwell_inference_lock_stale_after must be an integer of seconds > 5400"):
        hl.stale_bound(value)


@pytest.mark.parametrize(
    ("timeouts", "longest", "default"),
    [
        ({}, 5400, 7200),  # the roles' defaults: venv build 3600 s, smoke 1800 s + health 900 s twice
        ({"health": 3600}, 10800, 12600),  # a model that loads for an hour: the bound follows
        ({"venv_build": 14400}, 14400, 16200),
        ({"venv_build": 14400, "apt": 300}, 14700, 16500),
        ({"apt": 600, "smoke": 600, "health": 600}, 4200, 7200),  # apt's lock wait then the build; never under STALE_AFTER
    ],
)
def test_the_bound_follows_the_configured_timeouts(timeouts, longest, default):
    """issue 58 item 3: the stale bound is checked against the configured timeouts, not a constant."""
    assert hl.longest_stretch(**timeouts) == longest
    assert hl.stale_bound(None, longest) == default
    with pytest.raises(ValueError, match=r"must be an integer of seconds > %d" % longest):
        hl.stale_bound(longest, longest)
    assert hl.stale_bound(longest + 1, longest) == longest + 1


HOST_BOOT = "5e1f0000-0000-4000-8000-000000000001"


@pytest.mark.parametrize(
    ("holder", "boottime", "wall", "age"),
    [
        # a heartbeat 30 s ago by the boot-time clock; the wall clock stepped an hour forward, or back, since: still 30 s
        (hl.heartbeat(HOST_BOOT, 5000.0, 1_764_000_000), 5030.0, 1_764_000_030 + 3600, 30.0),
        (hl.heartbeat(HOST_BOOT, 5000.0, 1_764_000_000), 5030.0, 1_764_000_030 - 3600, 30.0),
        (hl.heartbeat("another-boot", 5000.0, 1_764_000_000), 10.0, 1_764_000_030, hl.BOOTED_SINCE),  # the host booted since
        ({"heartbeat": 1_764_000_000}, 5030.0, 1_764_000_090, 90.0),  # an older collection's record: its wall clock
        ({}, 5030.0, 1_764_000_090, None),  # nothing tells
    ],
)
def test_the_heartbeats_age_is_told_by_the_boot_id_and_the_boot_time_clock(holder, boottime, wall, age):
    assert hl.heartbeat_age(holder, HOST_BOOT, boottime, wall) == age


def test_same_play_is_the_controller_and_the_process_not_the_time():
    again = dict(MINE, since="2026-11-30T23:05:00Z", play="a second play of the playbook", heartbeat=1764543900)
    assert hl.same_play(MINE, again)
    assert not hl.same_play(MINE, dict(MINE, pid_start=1)) and not hl.same_play(MINE, TWIN)
    assert hl.same_play(MINE, dict(MINE, controller="renamed"))  # the host name is shown, not compared
    assert not hl.same_play(MINE, dict(MINE, boot_id="another boot"))
    assert not hl.same_play(MINE, None) and not hl.same_play(OLD, OLD)  # a record without machine-id is nobody's


def test_parse_and_describe():
    assert hl.parse('{"controller": "ctl-1", "pid": 4242, "pid_start": null}')["pid"] == 4242
    assert hl.parse("") is None and hl.parse('{"pid": 1}') is None and hl.parse("[]") is None
    assert hl.describe(MINE) == (
        "ops@ctl-1 (machine-id 0f3c2a9e8d1b4c5d6e7f8091a2b3c4d5) pid 4242 since 2026-11-30T23:00:00Z (play 'Provision Blackwell inference hosts')"
    )
    assert hl.describe(OLD) == "ops@ctl-1 (machine-id ?) pid 4242 since 2026-11-30T23:00:00Z"
    assert hl.describe(None) == "an unreadable lock record"


def test_proc_start_time():
    assert hl.proc_start_time(STAT) == 1550505
    assert hl.proc_start_time("garbage") is None


def test_readings_under_the_lock_each_with_its_options_and_the_toolkits_facts_apart():
    asked = {"toolkit": {"nvidia_smi": "nvidia-smi", "packages": True}, "venv": {"root": "/opt/sglang", "python": "/usr/bin/python3"}}

    def toolkit(options):
        return {"ansible_facts": {"blackwell_cuda": {"gpus": []}}, "packages": {"rc": 0, "stdout": ""}, "links": None}

    def venv(options):
        return {"python": {"version": "3.11.2"}, "current": "/opt/sglang/venvs/119f0a510a34ff5f", "venvs": []}

    out, facts = hl.readings(asked, {"toolkit": toolkit, "venv": venv})
    assert facts == {"blackwell_cuda": {"gpus": []}}
    assert out["toolkit"] == {"packages": {"rc": 0, "stdout": ""}, "links": None, "options": asked["toolkit"], "failed": False}
    assert out["venv"]["options"] == asked["venv"] and out["venv"]["failed"] is False and out["venv"]["python"] == {"version": "3.11.2"}


def test_a_reading_that_fails_is_returned_failed_and_one_not_asked_is_not_made():
    class MeasureError(Exception):
        def __init__(self, msg):
            super().__init__(msg)
            self.msg = msg

    def toolkit(options):
        raise MeasureError("nvidia-smi failed (rc 9)")

    def venv(options):
        raise AssertionError("not asked")

    out, facts = hl.readings({"toolkit": {"nvidia_smi": "nvidia-smi"}}, {"toolkit": toolkit, "venv": venv})
    assert out == {"toolkit": {"options": {"nvidia_smi": "nvidia-smi"}, "failed": True, "msg": "nvidia-smi failed (rc 9)"}}
    assert facts == {}
    assert hl.readings(None, {"toolkit": toolkit}) == ({}, {})


def test_the_services_reading_keeps_its_own_facts():
    # the service's facts are those of its environment: they are its role's, never the lock task's (the toolkit's are)
    service_facts = {"blackwell_cuda": {"environment": {"CUDA_HOME": "/usr/local/cuda-13.0"}}}

    def toolkit(options):
        return {"ansible_facts": {"blackwell_cuda": {"environment": {}}}}

    def service(options):
        return {"ansible_facts": service_facts, "marker": {"ready": True}}

    out, facts = hl.readings({"toolkit": {}, "service": {"marker": "/m"}}, {"toolkit": toolkit, "service": service})
    assert facts == {"blackwell_cuda": {"environment": {}}}
    assert out["service"]["ansible_facts"] == service_facts and out["service"]["marker"] == {"ready": True}


def test_a_reader_stopped_by_a_fail_json_is_a_failed_reading_not_a_dead_lock_call():
    def toolkit(options):
        raise SystemExit(1)

    out, facts = hl.readings({"toolkit": {"packages": True}}, {"toolkit": toolkit})
    assert out == {"toolkit": {"options": {"packages": True}, "failed": True, "msg": "the reading stopped without an answer (SystemExit)"}}
    assert facts == {}


def test_readings_are_made_side_by_side():
    # each reader waits until the other has started: made one after the other, the first would time out
    import threading

    started = {"toolkit": threading.Event(), "service": threading.Event()}

    def reader(me, other):
        def read(options):
            started[me].set()
            if not started[other].wait(5):
                raise RuntimeError("%s ran alone" % me)
            return {"who": me}

        return read

    out, _facts = hl.readings({"toolkit": {}, "service": {}}, {"toolkit": reader("toolkit", "service"), "service": reader("service", "toolkit")})
    assert out["toolkit"]["who"] == "toolkit" and out["service"]["who"] == "service"
    assert not out["toolkit"]["failed"] and not out["service"]["failed"]
