"""One play at a time per host: the lock record, who may take it over, and /proc/PID/stat."""

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.host import lock as hl

MINE = hl.record("ctl-1", 4242, 1550505, "ops", "2026-11-30T23:00:00Z", "Provision Blackwell inference hosts")
# /proc/PID/stat of an ansible-playbook process (comm with a space and parentheses, start time 1550505)
STAT = "4242 (ansible-playbook (x)) S 4200 4242 4200 34816 4242 4194304 3000 0 0 0 150 30 0 0 20 0 3 0 1550505 300000000 15000 18446744073709551615"


def alive_only(*pids):
    return lambda pid, start: pid in pids


@pytest.mark.parametrize(
    "holder,controller,alive,expected",
    [
        (None, "ctl-1", alive_only(), True),  # unreadable: a writer killed mid-write
        (MINE, "ctl-1", alive_only(4242), False),  # a live play here: wait for it
        (MINE, "ctl-1", alive_only(), True),  # its process is gone (kill -9 of the play): take over
        (MINE, "ctl-2", alive_only(), False),  # another controller's play is never judged from here
    ],
)
def test_stale(holder, controller, alive, expected):
    assert hl.stale(holder, controller, alive) is expected


def test_same_play_is_the_process_not_the_time():
    again = dict(MINE, since="2026-11-30T23:05:00Z", play="a second play of the playbook")
    assert hl.same_play(MINE, again)
    assert not hl.same_play(MINE, dict(MINE, pid_start=1)) and not hl.same_play(MINE, dict(MINE, controller="ctl-2"))
    assert not hl.same_play(MINE, None)


def test_parse_and_describe():
    assert hl.parse('{"controller": "ctl-1", "pid": 4242, "pid_start": null}')["pid"] == 4242
    assert hl.parse("") is None and hl.parse('{"pid": 1}') is None and hl.parse("[]") is None
    assert hl.describe(MINE) == "ops@ctl-1 pid 4242 since 2026-11-30T23:00:00Z (play 'Provision Blackwell inference hosts')"
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
