"""The last good state of a service: comparing the host with a snapshot and the plan that puts it back.
Also the module's file work (save, restore byte for byte, a save killed between its renames) on a temp dir."""

import contextlib
import hashlib
import json
import os
import pathlib
import shutil

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.common import secrets
from ansible_collections.blackwell.inference.plugins.module_utils.service import snapshot as snap
from ansible_collections.blackwell.inference.plugins.module_utils.service import snapshot_store as store_io
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
    store_io.save(store, files, str(link), None, "2026-11-30T00:00:00Z")
    good = store_io.read_snapshot(store)
    assert good["files"][str(secrets)] == {"exists": False} and good["link"] is None  # no target given: none recorded
    store_io.save(store, files, str(link), str(tmp_path / "v1"), "2026-11-30T00:00:01Z")
    good = store_io.read_snapshot(store)
    # the new state: a changed unit, a new secrets file, the link moved
    unit.write_bytes(b"[Service]\nEnvironment=A=2\n")
    os.chmod(unit, 0o600)
    secrets.write_bytes(b"HF_TOKEN=x\n")
    link.unlink()
    link.symlink_to(tmp_path / "v2")
    now = store_io.host_state(files, str(link))
    assert {d["path"] for d in snap.differences(now, good)} == {str(unit), str(secrets), str(link)}
    done, errors = store_io.restore(good, snap.restore_plan(now, good))
    assert unit.read_bytes() == b"[Service]\nEnvironment=A=1\n" and oct(os.stat(unit).st_mode & 0o777) == "0o644"
    assert not secrets.exists() and os.readlink(link) == str(tmp_path / "v1")
    assert len(done) == 3 and errors == [] and snap.differences(store_io.host_state(files, str(link)), good) == []


def test_saves_replace_the_snapshot_in_one_rename_and_leave_one_directory(tmp_path):
    unit = tmp_path / "u.conf"
    unit.write_text("x")
    store = str(tmp_path / "snap" / "last-good")
    store_io.save(store, [str(unit)], None, None, "t1")
    first = os.path.realpath(store)
    os.makedirs(str(tmp_path / "snap" / "last-good.killed-save"))  # the work of a save killed before its rename
    unit.write_text("y")
    store_io.save(store, [str(unit)], None, None, "t2")
    assert os.path.islink(store) and store_io.read_snapshot(store)["time"] == "t2" and not os.path.exists(first)
    assert sorted(os.listdir(str(tmp_path / "snap"))) == ["last-good", os.path.basename(os.path.realpath(store))]
    assert oct(os.stat(os.path.realpath(store)).st_mode & 0o777) == "0o700"


# --- durability (issue 45 item 7): a save killed at any step, fsyncs, restores that go on past a failed file ---


def whole(store):
    """The snapshot store names, checked complete: every blob its manifest names is there with its sha256.
    Returns its time."""
    good = store_io.read_snapshot(store)
    assert good is not None, "no snapshot at %s" % store
    for path, e in good["files"].items():
        if e["exists"]:
            blob = os.path.join(good["dir"], e["blob"])
            assert os.path.isfile(blob), "%s names %s for %s: not there" % (good["time"], blob, path)
            assert hashlib.sha256(pathlib.Path(blob).read_bytes()).hexdigest() == e["sha256"], (good["time"], path)
    return good["time"]


def _state(tmp_path):
    unit, secrets = tmp_path / "u.conf", tmp_path / "s.env"
    unit.write_text("[Service]\nEnvironment=A=1\n")
    os.chmod(unit, 0o644)
    secrets.write_text("HF_TOKEN=1\n")
    os.chmod(secrets, 0o600)
    return [str(unit), str(secrets)], str(tmp_path / "snap" / "last-good")


class Fault(OSError):
    pass


class _FailingWrites:
    """os.fdopen's file, whose writes fail as on a full disk."""

    def __init__(self, fh):
        self.fh = fh

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.fh.close()

    def write(self, data):
        raise Fault(28, "No space left on device")

    def __getattr__(self, name):
        return getattr(self.fh, name)


def _faulty(monkeypatch, op, at, calls):
    """op's call number `at` (0-based) raises, as a kill or a full disk there would stop the save; calls counts them."""
    real = getattr(os, op)

    def wrapper(*args, **kwargs):
        n = calls[op] = calls.get(op, 0) + 1
        if n - 1 == at:
            if op == "fdopen":
                return _FailingWrites(real(*args, **kwargs))
            raise Fault(5, "injected at %s #%d" % (op, n))
        return real(*args, **kwargs)

    monkeypatch.setattr(os, op, wrapper)


SAVE_OPS = ("fdopen", "fsync", "replace", "symlink", "unlink")


def test_a_save_stopped_at_any_step_leaves_the_previous_snapshot_whole(tmp_path, monkeypatch):
    files, store = _state(tmp_path)
    store_io.save(store, files, None, None, "t0")
    # how often a save calls each operation (a store that exists, as on every save after the first)
    calls = {}
    with monkeypatch.context() as m:
        for op in SAVE_OPS:
            _faulty(m, op, -1, calls)
        store_io.save(store, files, None, None, "t1")
    assert calls["fsync"] >= 6 and calls["replace"] == 4 and calls["fdopen"] == 3, calls
    hit = {"previous": 0, "new": 0}
    for op in SAVE_OPS:
        for at in range(calls.get(op, 0)):
            before = whole(store)
            with open(files[0], "a") as fh:
                fh.write("# %s %d\n" % (op, at))  # a change to save
            with monkeypatch.context() as m:
                _faulty(m, op, at, {})
                with contextlib.suppress(Fault):
                    store_io.save(store, files, None, None, "%s-%d" % (op, at))
            now = whole(store)  # never a manifest naming a blob that is not there
            assert now in (before, "%s-%d" % (op, at)), (op, at, before, now)
            hit["previous" if now == before else "new"] += 1
    # most steps come before the rename onto store; the fsync of the parent after it and the cleanup come after
    assert hit["previous"] >= 10 and hit["new"] >= 1, hit
    # the next save clears what the stopped ones left (their work directories) and keeps one snapshot
    store_io.save(store, files, None, None, "t2")
    assert whole(store) == "t2" and sorted(os.listdir(os.path.dirname(store))) == ["last-good", os.path.basename(os.path.realpath(store))]


def test_every_blob_the_manifest_and_the_directories_are_fsynced_before_store_moves_and_the_old_goes_after(tmp_path, monkeypatch):
    files, store = _state(tmp_path)
    store_io.save(store, files, None, None, "t0")
    previous = os.path.realpath(store)
    events = []
    real_fsync, real_replace, real_rmtree = os.fsync, os.replace, store_io.shutil.rmtree

    def fsync(fd):
        events.append(("fsync", os.readlink("/proc/self/fd/%d" % fd)))
        return real_fsync(fd)

    def replace(src, dst):
        events.append(("replace", os.path.basename(src), os.path.basename(dst)))
        return real_replace(src, dst)

    def rmtree(path, **kw):
        events.append(("rmtree", path))
        return real_rmtree(path, **kw)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(store_io.shutil, "rmtree", rmtree)
    store_io.save(store, files, None, None, "t1")
    work, parent = os.path.realpath(store), os.path.dirname(store)
    where = {e: i for i, e in enumerate(events)}
    blobs = [("fsync", os.path.join(work, ".file-%02d.blackwell-tmp" % i)) for i in range(2)]
    manifest = ("fsync", os.path.join(work, ".manifest.json.blackwell-tmp"))
    for e in [*blobs, manifest, ("fsync", work), ("fsync", parent), ("replace", ".last-good.link", "last-good"), ("rmtree", previous)]:
        assert e in where, (e, events)
    # each blob fsynced before its rename, the manifest last, the directories before store moves, the old one after
    assert where[blobs[0]] < where[("replace", ".file-00.blackwell-tmp", "file-00")]
    assert max(where[b] for b in blobs) < where[manifest] < where[("fsync", work)]
    moved = where[("replace", ".last-good.link", "last-good")]
    assert where[("fsync", work)] < moved and any(e == ("fsync", parent) and i < moved for i, e in enumerate(events))
    assert any(e == ("fsync", parent) and moved < i < where[("rmtree", previous)] for i, e in enumerate(events))
    assert not os.path.exists(previous) and whole(store) == "t1"


def test_a_store_of_the_old_kind_is_replaced_without_a_moment_without_a_snapshot(tmp_path, monkeypatch):
    files, store = _state(tmp_path)
    other = str(tmp_path / "other" / "last-good")
    store_io.save(other, files, None, None, "t0")
    os.makedirs(os.path.dirname(store))
    shutil.copytree(os.path.realpath(other), store)  # a plain directory, as an early version of the module left it
    assert whole(store) == "t0"
    real = os.replace

    def replace(src, dst):
        if dst == store:
            raise Fault(5, "killed")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(Fault):
        store_io.save(store, files, None, None, "t1")
    assert not os.path.exists(store) and whole(store) == "t1"  # read through the save's new link
    monkeypatch.setattr(os, "replace", real)
    store_io.save(store, files, None, None, "t2")
    assert os.path.islink(store) and whole(store) == "t2"


def _changed(tmp_path):
    """A snapshot of two files, then both changed (and the secret's mode widened): the restore plan writes both."""
    files, store = _state(tmp_path)
    store_io.save(store, files, None, None, "t0")
    good = store_io.read_snapshot(store)
    pathlib.Path(files[0]).write_text("[Service]\nEnvironment=A=2\n")
    pathlib.Path(files[1]).write_text("HF_TOKEN=2\n")
    os.chmod(files[1], 0o644)
    steps = snap.restore_plan(store_io.host_state(files, None), good)
    assert sorted(s[1] for s in steps) == sorted(files)
    return files, good, steps


def test_a_restored_secret_is_never_readable_by_others_and_is_fsynced_before_its_rename(tmp_path, monkeypatch):
    files, good, steps = _changed(tmp_path)
    events = []
    real_open, real_fsync, real_replace = os.open, os.fsync, os.replace

    def opened(path, flags, mode=0o777, **kw):
        if str(path).endswith(".blackwell-restore"):
            events.append(("open", os.path.basename(path), mode))
        return real_open(path, flags, mode, **kw)

    def fsync(fd):
        events.append(("fsync", os.path.basename(os.readlink("/proc/self/fd/%d" % fd))))
        return real_fsync(fd)

    def replace(src, dst):
        events.append(("replace", os.path.basename(src), oct(os.stat(src).st_mode & 0o777)))
        return real_replace(src, dst)

    monkeypatch.setattr(os, "open", opened)
    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    done, errors = store_io.restore(good, steps)
    assert errors == [] and len(done) == 2
    tmp = "s.env.blackwell-restore"
    # created 0600 (never 0644 then chmod), fsynced, renamed with its final mode
    assert ("open", tmp, 0o600) in events and ("replace", tmp, "0o600") in events
    assert events.index(("open", tmp, 0o600)) < events.index(("fsync", tmp)) < events.index(("replace", tmp, "0o600"))
    assert pathlib.Path(files[1]).read_text() == "HF_TOKEN=1\n" and oct(os.stat(files[1]).st_mode & 0o777) == "0o600"


def test_every_restored_file_is_created_0600_and_given_its_mode_once_written(tmp_path, monkeypatch):
    # issue 47: a temp file is never created wider than 0600 (the unit's 0644 too), its mode set once its bytes are in
    files, good, steps = _changed(tmp_path)
    events = []
    real_open, real_fchmod = os.open, os.fchmod

    def opened(path, flags, mode=0o777, **kw):
        if str(path).endswith(".blackwell-restore"):
            events.append(("open", os.path.basename(path), mode))
        return real_open(path, flags, mode, **kw)

    def fchmod(fd, mode):
        name = os.path.basename(os.readlink("/proc/self/fd/%d" % fd))
        events.append(("fchmod", name, oct(mode), os.fstat(fd).st_size))
        return real_fchmod(fd, mode)

    monkeypatch.setattr(os, "open", opened)
    monkeypatch.setattr(os, "fchmod", fchmod)
    done, errors = store_io.restore(good, steps)
    assert errors == [] and len(done) == 2
    unit, secret = (os.path.basename(f) + ".blackwell-restore" for f in files)
    assert ("open", unit, 0o600) in events and ("open", secret, 0o600) in events
    assert ("fchmod", unit, "0o644", len("[Service]\nEnvironment=A=1\n")) in events  # after the bytes
    assert oct(os.stat(files[0]).st_mode & 0o777) == "0o644" and oct(os.stat(files[1]).st_mode & 0o777) == "0o600"


def test_a_restore_goes_on_past_a_file_it_cannot_put_back(tmp_path):
    files, good, steps = _changed(tmp_path)
    first, then = steps[0][1], steps[1][1]
    # the snapshot's copy of the file put back first is gone: the next one is put back all the same
    os.unlink(os.path.join(good["dir"], good["files"][first]["blob"]))
    was = pathlib.Path(first).read_text()
    done, errors = store_io.restore(good, steps)
    assert done == ["write " + then] and len(errors) == 1 and errors[0].startswith("write %s: " % first), errors
    assert "No such file or directory" in errors[0]
    assert [d["path"] for d in snap.differences(store_io.host_state(files, None), good)] == [first] and pathlib.Path(first).read_text() == was
    assert not os.path.exists(first + ".blackwell-restore")


def test_a_damaged_copy_is_not_written_over_the_file(tmp_path):
    files, good, steps = _changed(tmp_path)
    pathlib.Path(good["dir"], good["files"][files[1]]["blob"]).write_text("HF_TOKEN=damaged\n")
    done, errors = store_io.restore(good, steps)
    assert done == ["write " + files[0]] and len(errors) == 1 and "is damaged" in errors[0], errors
    assert pathlib.Path(files[1]).read_text() == "HF_TOKEN=2\n" and not os.path.exists(files[1] + ".blackwell-restore")
    assert pathlib.Path(files[0]).read_text() == "[Service]\nEnvironment=A=1\n"


class Done(Exception):
    pass


def run_main(monkeypatch, params, check_mode=False):
    """service_snapshot's main() with these params: (failed, what it returned)."""
    got = {}

    class Module:
        def __init__(self, argument_spec, supports_check_mode):
            self.params = {k: params.get(k, spec.get("default")) for k, spec in argument_spec.items()}
            self.check_mode = check_mode

        def exit_json(self, **result):
            got.update(result, failed=False)
            raise Done

        def fail_json(self, **result):
            got.update(result, failed=True)
            raise Done

    monkeypatch.setattr(mod, "AnsibleModule", Module)
    with pytest.raises(Done):
        mod.main()
    return got["failed"], got


def test_what_the_module_returns_shows_the_secrets_file_by_its_keyed_digest_only(tmp_path, monkeypatch):
    files, store = _state(tmp_path)
    key = tmp_path / "digest.key"
    keyed = {"key": str(key), "paths": [files[1]]}
    secrets.digest_key(str(key), create=True)
    failed, saved = run_main(monkeypatch, {"store": store, "files": files, "state": "saved", "keyed": keyed})
    assert not failed and saved["changed"]
    was = [pathlib.Path(f).read_bytes() for f in files]
    pathlib.Path(files[0]).write_text("[Service]\nEnvironment=A=2\n")
    pathlib.Path(files[1]).write_text("HF_TOKEN=2\n")
    plain = {hashlib.sha256(b).hexdigest() for b in (was[1], b"HF_TOKEN=2\n")}
    failed, seen = run_main(monkeypatch, {"store": store, "files": files, "keyed": keyed})
    assert not failed and seen["checksums"][files[1]] == secrets.keyed(key.read_bytes(), hashlib.sha256(b"HF_TOKEN=2\n").hexdigest())
    assert seen["checksums"][files[0]] == hashlib.sha256(b"[Service]\nEnvironment=A=2\n").hexdigest()  # not a secret
    assert {d["path"] for d in seen["differences"]} == set(files)
    failed, back = run_main(monkeypatch, {"store": store, "files": files, "state": "restored", "keyed": keyed})
    assert not failed and [pathlib.Path(f).read_bytes() for f in files] == was  # byte for byte
    for result in (saved, seen, back):
        shown = json.dumps(result)
        assert not any(p in shown or p[:12] in shown for p in plain), result
    assert back["checksums"][files[1]] == saved["checksums"][files[1]]  # the same secret: the same digest
    # without the option every sha256 is plain (the module's behaviour before)
    failed, plain_seen = run_main(monkeypatch, {"store": store, "files": files})
    assert plain_seen["checksums"][files[1]] == hashlib.sha256(was[1]).hexdigest()
