"""The last good state of a service: comparing the host with a snapshot and the plan that puts it back.
Also the module's file work (save, restore byte for byte, a save killed between its renames) on a temp dir."""

import os

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils import service_snapshot as snap
from ansible_collections.blackwell.inference.plugins.modules import service_snapshot as mod

DROPIN = "/etc/systemd/system/sglang-k26.service.d/50-blackwell-inference.conf"
VALIDATE = "/etc/systemd/system/sglang-k26-validate.service"
SECRETS = "/etc/blackwell-inference/sglang-k26.secrets.env"
A, B = "a" * 64, "b" * 64


def state(files, target="/opt/sglang/venvs/new"):
    return {"files": files, "link": {"path": "/opt/sglang/current", "target": target}}


GOOD = {
    "files": {
        DROPIN: snap.entry(True, A, 0o644, 0, 0),
        VALIDATE: snap.entry(True, A, 0o644, 0, 0),
        SECRETS: snap.entry(False),
    },
    "link": {"path": "/opt/sglang/current", "target": "/opt/sglang/venvs/old"},
}


@pytest.mark.parametrize(
    "now,steps",
    [
        (state(dict(GOOD["files"]), "/opt/sglang/venvs/old"), []),
        (state(dict(GOOD["files"])), [("link", "/opt/sglang/current", "/opt/sglang/venvs/old")]),
        # a new drop-in and validate unit, and a secrets file that did not exist: all three, then the link
        (
            state({DROPIN: snap.entry(True, B, 0o644, 0, 0), VALIDATE: snap.entry(True, B, 0o644, 0, 0), SECRETS: snap.entry(True, B, 0o600, 0, 0)}),
            [
                ("write", VALIDATE, GOOD["files"][VALIDATE]),
                ("remove", SECRETS, None),
                ("write", DROPIN, GOOD["files"][DROPIN]),
                ("link", "/opt/sglang/current", "/opt/sglang/venvs/old"),
            ],
        ),
        # a drop-in deleted by hand, and one whose mode changed
        (
            state({DROPIN: snap.entry(False), VALIDATE: snap.entry(True, A, 0o666, 0, 0), SECRETS: snap.entry(False)}, "/opt/sglang/venvs/old"),
            [("write", VALIDATE, GOOD["files"][VALIDATE]), ("write", DROPIN, GOOD["files"][DROPIN])],
        ),
    ],
)
def test_restore_plan(now, steps):
    assert sorted(snap.restore_plan(now, GOOD), key=lambda s: (s[0] == "link", s[1] != VALIDATE, s[1] != SECRETS)) == steps
    assert snap.restore_plan(now, GOOD)[-1:] == steps[-1:]  # the link is always last
    assert bool(snap.differences(now, GOOD)) == bool(steps)


def test_without_a_link_read_the_link_is_neither_compared_nor_put_back():
    # the service role restores the files only; the sglang_venv role's rollback entry moves the link
    now = {"files": {DROPIN: snap.entry(True, B, 0o644, 0, 0), VALIDATE: GOOD["files"][VALIDATE], SECRETS: snap.entry(False)}, "link": None}
    assert snap.restore_plan(now, GOOD) == [("write", DROPIN, GOOD["files"][DROPIN])]
    assert [d["path"] for d in snap.differences(now, GOOD)] == [DROPIN]


def test_a_file_the_snapshot_does_not_know_is_left_alone():
    now = state(dict(GOOD["files"], **{"/etc/other": snap.entry(True, B, 0o644, 0, 0)}), "/opt/sglang/venvs/old")
    assert snap.restore_plan(now, GOOD) == [] and snap.differences(now, GOOD) == []


def test_load_refuses_what_it_did_not_write():
    with pytest.raises(ValueError):
        snap.load('{"files": {}}')
    assert snap.load(snap.dump(snap.make_manifest("t", {}, "/l", "/v")))["link"] == {"path": "/l", "target": "/v"}


def test_save_then_restore_is_byte_for_byte(tmp_path):
    unit, secrets, link = tmp_path / "u.conf", tmp_path / "s.env", tmp_path / "current"
    (tmp_path / "v1").mkdir()
    (tmp_path / "v2").mkdir()
    unit.write_bytes(b"[Service]\nEnvironment=A=1\n")
    os.chmod(unit, 0o644)
    link.symlink_to(tmp_path / "v1")
    store = str(tmp_path / "store" / "last-good")
    files = [str(unit), str(secrets)]
    mod.save(store, files, str(link), None, "2026-11-30T00:00:00Z")
    good = mod.read_snapshot(store)
    assert good["files"][str(secrets)] == {"exists": False} and good["link"] is None  # no target given: none recorded
    mod.save(store, files, str(link), str(tmp_path / "v1"), "2026-11-30T00:00:01Z")
    good = mod.read_snapshot(store)
    # the new state: a changed unit, a new secrets file, the link moved
    unit.write_bytes(b"[Service]\nEnvironment=A=2\n")
    os.chmod(unit, 0o600)
    secrets.write_bytes(b"HF_TOKEN=x\n")
    link.unlink()
    link.symlink_to(tmp_path / "v2")
    now = mod.host_state(files, str(link))
    assert {d["path"] for d in snap.differences(now, good)} == {str(unit), str(secrets), str(link)}
    done = mod.restore(good, snap.restore_plan(now, good))
    assert unit.read_bytes() == b"[Service]\nEnvironment=A=1\n" and oct(os.stat(unit).st_mode & 0o777) == "0o644"
    assert not secrets.exists() and os.readlink(link) == str(tmp_path / "v1")
    assert len(done) == 3 and snap.differences(mod.host_state(files, str(link)), good) == []


def test_saves_replace_the_snapshot_in_one_rename_and_leave_one_directory(tmp_path):
    unit = tmp_path / "u.conf"
    unit.write_text("x")
    store = str(tmp_path / "snap" / "last-good")
    mod.save(store, [str(unit)], None, None, "t1")
    first = os.path.realpath(store)
    os.makedirs(str(tmp_path / "snap" / "last-good.killed-save"))  # the work of a save killed before its rename
    unit.write_text("y")
    mod.save(store, [str(unit)], None, None, "t2")
    assert os.path.islink(store) and mod.read_snapshot(store)["time"] == "t2" and not os.path.exists(first)
    assert sorted(os.listdir(str(tmp_path / "snap"))) == ["last-good", os.path.basename(os.path.realpath(store))]
    assert oct(os.stat(os.path.realpath(store)).st_mode & 0o777) == "0o700"
