"""What a rollback that goes on past its errors says (issue 45 item 7): sglang_service.rollback_outcome, from the results
of every step the role's tasks/rollback.yml ran (registered with ignore_errors, or recorded by the rescue around the
sglang_venv role's rollback entry)."""

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.service import settings as ss

DROPIN = "/etc/systemd/system/sglang-k26.service.d/50-blackwell-inference.conf"
SETTINGS = "/etc/blackwell-inference/sglang-k26-validate.json"
SNAPSHOT = {"time": "2026-12-01T02:00:52Z", "files": {}, "link": {"path": "/opt/sglang/current", "target": "/opt/sglang/venvs/a"}}
OK = {"changed": True}
SKIPPED = {"changed": False, "skipped": True}
BACK = {"status": 200}
VENV_BACK = {"path": "/opt/sglang/current", "target": "/opt/sglang/venvs/a", "switched": True, "missing": False}
CAUSE = "the restarted service did not answer http://127.0.0.1:30000/health"
MARKER = "/etc/ansible/facts.d/blackwell_inference.fact"
# service_snapshot's failed restore: the drop-in was put back, the settings' copy was gone
PARTIAL = {
    "failed": True,
    "msg": "could not put back 1 of the 2 differing files ...",
    "snapshot": SNAPSHOT,
    "restored": ["write " + DROPIN],
    "errors": ["write %s: [Errno 2] No such file or directory: '/var/lib/blackwell-inference/sglang-k26/last-good/file-02'" % SETTINGS],
}


def outcome(restore, **kw):
    args = {"venv": VENV_BACK, "reload": OK, "start": OK, "stop": SKIPPED, "rewarm": SKIPPED, "health_back": BACK}
    args.update(kw)
    return ss.rollback_outcome(restore, CAUSE, "ct200", MARKER, "sglang-k26.service", True, True, **args)


def test_nothing_failed_reads_as_before():
    res = outcome({"changed": True, "snapshot": SNAPSHOT, "restored": ["write " + DROPIN]})
    note = "restored the last good state of 2026-12-01T02:00:52Z (write %s, link /opt/sglang/current -> /opt/sglang/venvs/a); " % DROPIN
    note += "the previous service answers again"
    assert res == {"note": note, "errors": [], "reason": CAUSE + "; " + note, "msg": "ct200 is NOT READY: %s. %s. Marker: %s." % (CAUSE, note, MARKER)}


def test_a_file_not_put_back_is_named_and_the_steps_after_it_are_reported():
    res = outcome(PARTIAL)
    failed = "put back the files: write %s: [Errno 2] No such file or directory: '/var/lib/blackwell-inference/sglang-k26/last-good/file-02'" % SETTINGS
    assert res["errors"] == [failed]
    assert res["note"].startswith("restored the last good state of 2026-12-01T02:00:52Z in part (write %s, write %s NOT put back, link " % (DROPIN, SETTINGS))
    assert res["note"].endswith("the previous service answers again")  # the restart and the health wait ran after it
    assert res["reason"] == "%s; %s; restore steps that failed: %s" % (CAUSE, res["note"], failed)
    lines = res["msg"].splitlines()
    assert lines == ["ct200 is NOT READY: %s. %s. Marker: %s." % (CAUSE, res["note"], MARKER), "1 restore step failed (the others ran):", "- " + failed]


def test_every_failed_step_has_its_own_line():
    res = outcome(
        PARTIAL,
        venv_back={"failed": True, "msg": "Point the link back at the venv that served last: Error while linking: [Errno 30] Read-only file system"},
        reload={"failed": True, "msg": "failure 1 during daemon-reload: Access denied\nmore lines"},
        start={"failed": True, "msg": "Unable to start service sglang-k26.service: Job failed"},
        health_back={"failed": True, "status": -1, "msg": "did not answer http://127.0.0.1:30000/health: the unit is failed"},
    )
    assert [e.split(":")[0] for e in res["errors"]] == ["put back the files", "put the venv link back", "reload systemd", "start the last good state"]
    assert "reload systemd: failure 1 during daemon-reload: Access denied" in res["errors"] and not any("more lines" in e for e in res["errors"])
    lines = res["msg"].splitlines()
    assert lines[1] == "4 restore steps failed (the others ran):" and len(lines) == 6
    # the link is not claimed: the venv role's result may say switched, its link task failed
    assert "link /opt/sglang/current NOT put back: the sglang_venv role's rollback failed" in res["note"]
    assert "-> /opt/sglang/venvs/a" not in res["note"]
    assert "the previous service does NOT answer either: it did not answer" in res["note"]
    assert all("; " + e in res["reason"] or ": " + e in res["reason"] for e in res["errors"])


@pytest.mark.parametrize(
    "restore,stop,note,errors",
    [
        # no snapshot at all: the failed new state is stopped, nothing failed
        ({"changed": False, "snapshot": None, "restored": []}, OK, "no last good state to restore; sglang-k26.service stopped", []),
        # a snapshot that cannot be read is not "no last good state", and its stop failing is named too
        (
            {"failed": True, "msg": "cannot read the service's state or its snapshot in /var/lib/x: not a blackwell.inference service snapshot"},
            {"failed": True, "msg": "Unable to stop service sglang-k26.service"},
            "the last good state could NOT be read (cannot read the service's state or its snapshot in /var/lib/x: not a blackwell.inference "
            "service snapshot); sglang-k26.service stopped",
            [
                "put back the files: cannot read the service's state or its snapshot in /var/lib/x: not a blackwell.inference service snapshot",
                "stop the failed new state: Unable to stop service sglang-k26.service",
            ],
        ),
    ],
)
def test_without_a_snapshot_to_go_back_to(restore, stop, note, errors):
    res = outcome(restore, venv=None, start=SKIPPED, stop=stop, health_back=SKIPPED)
    assert (res["note"], res["errors"]) == (note, errors)


def test_the_venv_result_counts_only_when_the_snapshot_has_a_link():
    # a sglang_venv_rollback left from elsewhere is not this rollback's when the snapshot recorded no link
    res = outcome({"changed": False, "snapshot": dict(SNAPSHOT, link=None), "restored": []})
    assert "link" not in res["note"] and "every file was as it was" in res["note"]
