"""host_lock's changes of the lock file (issue 58 item 3): each under the guard's flock, after reading the record again,
so that two controllers that both judged the same holder stale cannot both take the lock over."""

import json
import threading

from ansible_collections.blackwell.inference.plugins.module_utils.host import lock as hl
from ansible_collections.blackwell.inference.plugins.modules import host_lock as mod

STALE = hl.record("gone", 1, 1, "ops", "2026-12-01T00:00:00Z", "", "a" * 32, "boot-a", "pid:[1]")


def controller(n):
    return hl.record("ctl-%d" % n, 1000 + n, 5, "ops", "2026-12-07T00:00:00Z", "", "%032d" % n, "boot-%d" % n, "pid:[4026531836]")


def test_a_takeover_replaces_only_the_record_judged_stale(tmp_path):
    path = str(tmp_path / "play.lock")
    (tmp_path / "play.lock").write_text(json.dumps(dict(STALE, heartbeat=1)))
    first = mod.take(path, controller(1), dict(STALE, heartbeat=1))
    assert first is not None and first["machine_id"] == "%032d" % 1 and first["beat_boottime"] > 0
    # the second controller judged the same stale record: under the guard it finds the first one's, and takes nothing
    assert mod.take(path, controller(2), dict(STALE, heartbeat=1)) is None
    assert json.loads((tmp_path / "play.lock").read_text())["machine_id"] == "%032d" % 1
    # the holder renews; another play cannot renew or give it back
    assert mod.renew(path, controller(1))["heartbeat"] >= first["heartbeat"] and mod.renew(path, controller(2)) is None
    mod.give_back(path, controller(2))
    assert (tmp_path / "play.lock").exists()
    mod.give_back(path, controller(1))
    assert not (tmp_path / "play.lock").exists()
    assert mod.take(path, controller(2), None)["machine_id"] == "%032d" % 2  # nobody holds it: taken


def test_a_takeover_race_has_one_winner(tmp_path):
    """Eight controllers that all judged the same holder stale, at once: exactly one holds the lock."""
    path = str(tmp_path / "play.lock")
    (tmp_path / "play.lock").write_text(json.dumps(STALE))
    start, won = threading.Barrier(8), []

    def contend(n):
        start.wait()
        if mod.take(path, controller(n), dict(STALE)) is not None:
            won.append(n)

    threads = [threading.Thread(target=contend, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1
    assert json.loads((tmp_path / "play.lock").read_text())["controller"] == "ctl-%d" % won[0]


def test_the_age_of_a_record_written_now_is_near_zero_and_an_old_wall_clock_does_not_matter(tmp_path):
    path = str(tmp_path / "play.lock")
    mod.take(path, controller(1), None)
    data = json.loads((tmp_path / "play.lock").read_text())
    data["heartbeat"] = 0  # the wall clock's heartbeat says 1970: the boot-time clock's age stands
    (tmp_path / "play.lock").write_text(json.dumps(data))
    holder, exists, age = mod.read(path)
    assert exists and holder["controller"] == "ctl-1" and 0 <= age < 60
