# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A file replaced in one rename: a reader (apt, the next run) sees the old content or the new, never a part; and what
is at a path, as the paths module and the probes that plan for it see it."""

from __future__ import annotations

import glob
import grp
import hashlib
import os
import pwd
import stat
import tempfile


def write_atomic(path, data, mode=0o644):
    """Write `data` (bytes) to `path` through a temporary file beside it (its parent made 0755 when missing), with
    `mode`; nothing is left behind when it fails."""
    parent = os.path.dirname(path)
    os.makedirs(parent, mode=0o755, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), dir=parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, mode)
        os.rename(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise


def observe(path):
    """What is at path (not followed): exists, type, uid, gid, mode, owner and group (names), sha256 (a file), target
    (a link); the input of module_utils/paths.plan."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return {"exists": False}
    seen = {"exists": True, "uid": st.st_uid, "gid": st.st_gid, "mode": stat.S_IMODE(st.st_mode)}
    if stat.S_ISLNK(st.st_mode):
        seen.update(type="link", target=os.readlink(path), mode=None)
    elif stat.S_ISDIR(st.st_mode):
        seen["type"] = "directory"
    elif stat.S_ISREG(st.st_mode):
        seen["type"] = "file"
        digest = hashlib.sha256()
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
        seen["sha256"] = digest.hexdigest()
    else:
        seen["type"] = "other"
    try:
        seen["owner"] = pwd.getpwuid(st.st_uid).pw_name
    except KeyError:
        seen["owner"] = str(st.st_uid)
    try:
        seen["group"] = grp.getgrgid(st.st_gid).gr_name
    except KeyError:
        seen["group"] = str(st.st_gid)
    return seen


def observe_all(patterns):
    """observe() for each path; a pattern with * or ? stands for the paths that match it (none when none do)."""
    out = {}
    for pattern in patterns:
        for path in sorted(glob.glob(pattern)) if any(c in pattern for c in "*?[") else [pattern]:
            out[os.path.normpath(path)] = observe(path)
    return out
