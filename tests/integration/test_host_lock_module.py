"""host_lock through Ansible on this machine (issue 47 item 6): the record names this controller by machine-id and
boot id; a holder on another controller (a TEST DOUBLE record: another machine-id, this machine's host name) is waited
for while its heartbeat is fresh and taken over once it is older than the bound; a play whose lock was taken over
learns it at its next heartbeat."""

import json
import os
import socket
import time

from .conftest import ansible_module_calls


def machine_id():
    with open("/etc/machine-id") as fh:
        return fh.read().strip()


DEAD_PID = 4194301


def twin(heartbeat):
    """TEST DOUBLE: a play on another controller that has this machine's host name (a cloned VM); its pid is not one
    of this machine's (the old rule, host name and pid, judged such a live play dead)."""
    return {
        "controller": socket.gethostname(),
        "machine_id": "7e57d0b1e0000000000000000000000a",
        "boot_id": "7e57d0b1-e000-4000-8000-00000000000a",
        "pid": DEAD_PID,
        "pid_start": None,
        "user": "ops",
        "since": "2026-12-06T20:00:00Z",
        "play": "Provision Blackwell inference hosts",
        "heartbeat": heartbeat,
    }


def test_the_record_names_this_controller_and_each_call_of_the_play_renews_its_heartbeat(tmp_path):
    lock = str(tmp_path / "play.lock")
    taken, renewed, released = ansible_module_calls(
        "host_lock", [{"path": lock}, {"path": lock, "state": "refreshed"}, {"path": lock, "state": "released"}], tmp_path
    )
    assert taken["acquired"] is True, taken
    holder = taken["holder"]
    assert holder["machine_id"] == machine_id() and holder["boot_id"] and holder["controller"] == socket.gethostname()
    assert abs(holder["heartbeat"] - time.time()) < 60
    assert renewed["acquired"] is True and renewed["holder"]["heartbeat"] >= holder["heartbeat"], renewed
    assert not os.path.exists(lock) and released["acquired"] is False


def test_a_holder_on_another_controller_is_waited_for_while_its_heartbeat_is_fresh_and_taken_over_when_stale(tmp_path):
    lock = tmp_path / "play.lock"
    lock.write_text(json.dumps(twin(int(time.time()))))
    # the same host name and a pid not alive here: the old rule took it over; now it is waited for, and the wait names it
    assert not os.path.exists("/proc/%d" % DEAD_PID)
    waited, refresh = ansible_module_calls("host_lock", [{"path": str(lock), "timeout": 3}, {"path": str(lock), "state": "refreshed"}], tmp_path)
    assert waited.get("failed") and waited["acquired"] is False, waited
    assert "is being provisioned by another play: ops@%s (machine-id 7e57d0b1e0000000000000000000000a)" % socket.gethostname() in waited["msg"]
    assert "taken over once its heartbeat is older than 7200 s" in waited["msg"]
    assert refresh.get("failed") and "The host's lock is no longer this play's" in refresh["msg"], refresh
    assert json.loads(lock.read_text())["machine_id"] == "7e57d0b1e0000000000000000000000a"  # untouched
    # its heartbeat two hours and a minute old: taken over at once
    lock.write_text(json.dumps(twin(int(time.time()) - 7260)))
    (took,) = ansible_module_calls("host_lock", [{"path": str(lock), "timeout": 3}], tmp_path)
    assert took["acquired"] is True, took  # within a 3 s wait: taken over, not waited for
    assert took["took_over"]["machine_id"] == "7e57d0b1e0000000000000000000000a"
    assert took["took_over"]["why"].startswith("its controller's heartbeat is 72") and took["took_over"]["why"].endswith("s old (bound 7200 s)")
    assert json.loads(lock.read_text())["machine_id"] == machine_id()


def test_a_bound_not_longer_than_the_longest_stretch_is_refused(tmp_path):
    (res,) = ansible_module_calls("host_lock", [{"path": str(tmp_path / "play.lock"), "stale_after": 600}], tmp_path)
    assert res.get("failed") and "blackwell_inference_lock_stale_after must be an integer of seconds > 5400" in res["msg"], res
    assert not (tmp_path / "play.lock").exists()
