# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The last good state's store on the host: read the host's files and the snapshot, save a new one durably, put one
back byte for byte (service/snapshot.py decides what; this does the file work). The service_snapshot module and the
host's own rollback (boot_validate.py --rollback, armed before each restart) both run this code: stdlib only."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile

from ansible_collections.blackwell.inference.plugins.module_utils.service import snapshot as snap


def file_state(path):
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return snap.entry(False)
    if not stat.S_ISREG(st.st_mode):
        raise ValueError("%s is not a regular file" % path)
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 16), b""):
            digest.update(chunk)
    return snap.entry(True, digest.hexdigest(), stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)


def host_state(files, link):
    target = os.readlink(link) if link and os.path.islink(link) else None
    return {"files": {p: file_state(p) for p in files}, "link": {"path": link, "target": target} if link else None}


def _pointer(store):
    """The new link of a save, beside store, before it is renamed onto store."""
    parent, base = os.path.split(store)
    return os.path.join(parent, ".%s.link" % base)


def read_snapshot(store):
    """The manifest of the snapshot store points at (None when there is none). A store without one while a save's
    new link has one (a save killed while it replaced a store of the old kind, a plain directory) is read through
    that link: the save made it durable before it touched store."""
    where = store
    if not os.path.exists(os.path.join(store, snap.MANIFEST)) and os.path.exists(os.path.join(_pointer(store), snap.MANIFEST)):
        where = _pointer(store)
    path = os.path.join(where, snap.MANIFEST)
    if not os.path.exists(path):
        return None
    with open(path) as fh:
        manifest = snap.load(fh.read())
    manifest["dir"] = os.path.realpath(where)
    return manifest


def fsync_dir(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_new(path, chunks, mode, uid=None, gid=None):
    """chunks (bytes) into path, a new file created 0600 (root's, whatever the final mode: never wider, then narrowed),
    given its final owner and mode once every byte is in, then flushed and fsynced. Returns the sha256 of what was
    written."""
    digest = hashlib.sha256()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb", closefd=False) as fh:
            for chunk in chunks:
                digest.update(chunk)
                fh.write(chunk)
            fh.flush()
            if uid is not None:
                os.fchown(fd, uid, gid)
            os.fchmod(fd, mode)  # exactly the mode (the umask only narrowed it), after chown (which may clear bits)
            os.fsync(fh.fileno())
    finally:
        os.close(fd)
    return digest.hexdigest()


def _chunks(path):
    with open(path, "rb") as fh:
        yield from iter(lambda: fh.read(1 << 16), b"")


def _put(directory, name, chunks, mode, uid=None, gid=None):
    """name in directory, durably: a temporary file beside it (_write_new), renamed into place. The caller fsyncs
    directory. Returns the sha256 of the content."""
    final = os.path.join(directory, name)
    tmp = os.path.join(directory, ".%s.blackwell-tmp" % name)
    if os.path.lexists(tmp):
        os.unlink(tmp)  # left by a run killed while writing it
    digest = _write_new(tmp, chunks, mode, uid, gid)
    os.replace(tmp, final)
    return digest


def save(store, files, link, link_target, now):
    """A new snapshot directory beside store, made durable, then store (a symlink) re-pointed at it in one rename.

    Every blob, then the manifest (last: it names the blobs), is written to a temporary file, fsynced and renamed
    into place; the new directory and its parent are fsynced before store moves, and the parent again after, so
    a save killed (or a power cut) at any point leaves store on the previous snapshot or on the new one, whole.
    The previous snapshot's directory is removed only once store is durably on the new one. No directory is
    renamed (overlayfs refuses that for directories of a lower layer, as in container images)."""
    parent, base = os.path.split(store.rstrip("/"))
    os.makedirs(parent, mode=0o700, exist_ok=True)
    work = tempfile.mkdtemp(prefix=base + ".", dir=parent)  # 0700
    entries = {}
    for index, path in enumerate(sorted(files)):
        state = file_state(path)
        if state["exists"]:
            state["blob"] = snap.blob_name(index)
            state["sha256"] = _put(work, state["blob"], _chunks(path), 0o600)  # the bytes kept, even if path moved on
        entries[path] = state
    _put(work, snap.MANIFEST, [snap.dump(snap.make_manifest(now, entries, link, link_target)).encode()], 0o600)
    fsync_dir(work)
    fsync_dir(parent)  # the new directory's entry
    pointer = _pointer(store)
    if os.path.lexists(pointer):
        os.unlink(pointer)
    os.symlink(os.path.basename(work), pointer)
    fsync_dir(parent)
    if os.path.isdir(store) and not os.path.islink(store):
        # a store of the old kind (a plain directory): its manifest goes first, so that what is left of it is never
        # read as a snapshot; read_snapshot reads the new one through the pointer until the rename below
        if os.path.lexists(os.path.join(store, snap.MANIFEST)):
            os.unlink(os.path.join(store, snap.MANIFEST))
            fsync_dir(store)
        shutil.rmtree(store)
    os.replace(pointer, store)
    fsync_dir(parent)
    for name in os.listdir(parent):  # the previous snapshot, and the work of a save killed before its rename
        old = os.path.join(parent, name)
        if name.startswith(base + ".") and old != work and os.path.isdir(old) and not os.path.islink(old):
            shutil.rmtree(old, ignore_errors=True)


def _restore_file(manifest, path, data, secret=False):
    """The snapshot's copy of path put back: a temporary file beside path, created 0600, given the final mode and owner,
    the blob's bytes checked against the manifest's sha256 before it replaces path."""
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o755, exist_ok=True)
    tmp = "%s.blackwell-restore" % path
    if os.path.lexists(tmp):
        os.unlink(tmp)
    try:
        digest = _write_new(tmp, _chunks(os.path.join(manifest["dir"], data["blob"])), data["mode"], data["uid"], data["gid"])
        if digest != data["sha256"]:
            why = "its sha256 is not the manifest's" if secret else "sha256 %s, the manifest says %s" % (digest[:12], str(data["sha256"])[:12])
            raise ValueError("the snapshot's copy %s is damaged (%s)" % (data["blob"], why))
        os.replace(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise
    fsync_dir(directory)


def restore(manifest, steps, secret=()):
    """Every step is tried, in order, even after one fails. Returns (done, errors): what was put back, and one line
    per step that failed ("write PATH: why")."""
    done, errors = [], []
    for action, path, data in steps:
        what = "%s %s%s" % (action, path, " -> " + data if action == "link" else "")
        try:
            if action == "write":
                _restore_file(manifest, path, data, path in secret)
            elif action == "remove":
                os.unlink(path)
                fsync_dir(os.path.dirname(path))
            elif action == "link":
                tmp = "%s.blackwell-restore" % path
                if os.path.lexists(tmp):
                    os.unlink(tmp)
                os.symlink(data, tmp)
                os.replace(tmp, path)
                fsync_dir(os.path.dirname(path))
        except (OSError, ValueError) as exc:
            errors.append("%s: %s" % (what, exc))
            continue
        done.append(what)
    return done, errors
