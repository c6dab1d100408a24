# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure pieces of the paths module: what a set of directories, files and links needs to match what is wanted.

A role's directories, links and unchanged files cost one remote task each when made with ansible.builtin.file/copy
(about half a second of two cores per item on every run); the paths module looks at all of them and changes only
what differs, in one call. The decisions are here; the module only observes and applies them."""

from __future__ import annotations

import hashlib
import posixpath
import re

STATES = ("directory", "file", "link", "absent")
_MODE = re.compile(r"^0?[0-7]{3,4}$")


class PathsError(ValueError):
    """A wanted entry that cannot be made (bad input, or a path in the way)."""


def parse_mode(value):
    """'0755' / '755' / 493 -> 0o755; None or '' -> None (left as it is). Symbolic modes are refused."""
    if value is None or value == "":
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        if 0 <= value <= 0o7777:
            return value
        raise PathsError("mode %r is out of range" % value)
    text = str(value).strip()
    if not _MODE.match(text):
        raise PathsError("mode %r is not an octal mode such as '0755' (symbolic modes are not supported)" % value)
    return int(text, 8)


def normalize(entries):
    """Check the wanted entries; returns them as dicts with path, state, owner, group, mode (int or None), content,
    src. Raises PathsError naming the entry."""
    if not isinstance(entries, list) or not entries:
        raise PathsError("paths: a non-empty list of entries")
    out, seen = [], set()
    for index, entry in enumerate(entries):
        where = "paths[%d]" % index
        if not isinstance(entry, dict):
            raise PathsError("%s: a dict with path and state" % where)
        path = entry.get("path")
        if not isinstance(path, str) or not path.startswith("/") or path.rstrip("/") == "":
            raise PathsError("%s: path must be an absolute path other than / (got %r)" % (where, path))
        path = posixpath.normpath(path)
        if path in seen:
            raise PathsError("%s: %s is listed twice" % (where, path))
        seen.add(path)
        state = entry.get("state")
        if state not in STATES:
            raise PathsError("%s (%s): state must be one of %s (got %r)" % (where, path, ", ".join(STATES), state))
        unknown = sorted(set(entry) - {"path", "state", "owner", "group", "mode", "content", "src"})
        if unknown:
            raise PathsError("%s (%s): unknown keys %s" % (where, path, ", ".join(unknown)))
        content, src = entry.get("content"), entry.get("src")
        if state == "file" and not isinstance(content, str):
            raise PathsError("%s (%s): a file needs its content" % (where, path))
        if state != "file" and content is not None:
            raise PathsError("%s (%s): content is only for state=file" % (where, path))
        if state == "link" and not (isinstance(src, str) and src):
            raise PathsError("%s (%s): a link needs src" % (where, path))
        if state != "link" and src is not None:
            raise PathsError("%s (%s): src is only for state=link" % (where, path))
        try:
            mode = parse_mode(entry.get("mode"))
        except PathsError as exc:
            raise PathsError("%s (%s): %s" % (where, path, exc)) from None
        if state == "link" and mode is not None:
            raise PathsError("%s (%s): a link has no mode of its own" % (where, path))
        if state == "absent" and (mode is not None or entry.get("owner") or entry.get("group")):
            raise PathsError("%s (%s): an absent path has no owner, group or mode" % (where, path))
        out.append(
            {
                "path": path,
                "state": state,
                "owner": entry.get("owner") or None,
                "group": entry.get("group") or None,
                "mode": mode,
                "content": content,
                "src": src,
            }
        )
    return out


def sha256(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def checksums(entries):
    """What the files among the (normalized) entries hold once they match: per file its content's sha256, per absent
    path None (a later read of the same paths, as service_snapshot's, gives the same map); directories and links left
    out."""
    out = {}
    for entry in entries:
        if entry["state"] == "file":
            out[entry["path"]] = sha256(entry["content"])
        elif entry["state"] == "absent":
            out[entry["path"]] = None
    return out


def describe(observed):
    """One line for a diff: what is at a path."""
    if not observed or not observed.get("exists"):
        return "absent"
    kind = observed.get("type")
    owner = "%s:%s" % (observed.get("owner", observed.get("uid")), observed.get("group", observed.get("gid")))
    if kind == "link":
        return "link -> %s (%s)" % (observed.get("target"), owner)
    mode = "%04o" % observed["mode"] if observed.get("mode") is not None else "?"
    if kind == "file":
        return "file %s %s sha256:%s" % (mode, owner, (observed.get("sha256") or "?")[:16])
    return "%s %s %s" % (kind, mode, owner)


def plan(entry, observed, uid=None, gid=None):
    """The actions that make `observed` (what is at entry's path) what `entry` wants.

    observed: {"exists": bool, "type": "directory" | "file" | "link" | "other", "uid", "gid", "mode" (permission
    bits), "sha256" (file), "target" (link)}; uid/gid: the wanted owner and group resolved to ids (None: leave).
    Returns a list of (action, detail) in the order they are applied:
      ("create", None)   a directory (and its missing parents), a file with the content, or the link
      ("write", None)    a file's content differs: replaced in one rename
      ("relink", old)    a link points elsewhere (or a regular file is where the link goes): replaced in one rename
      ("chown", (uid, gid)), ("chmod", mode)
      ("remove", None)   a file or link that should be absent (a directory there is refused, never removed)
    Raises PathsError when something of another kind is in the way (a directory where a file or link goes, a file
    where a directory goes)."""
    state, path = entry["state"], entry["path"]
    actions = []
    exists = bool(observed and observed.get("exists"))
    kind = observed.get("type") if exists else None
    if state == "absent":
        if exists and kind not in ("file", "link"):
            raise PathsError("%s should be absent and is a %s: only a file or a link is removed" % (path, kind))
        return [("remove", None)] if exists else []
    if not exists:
        actions.append(("create", None))
    elif state == "directory":
        if kind != "directory":
            raise PathsError("%s exists and is not a directory (%s)" % (path, kind))
    elif state == "file":
        if kind != "file":
            raise PathsError("%s exists and is not a regular file (%s)" % (path, kind))
        if observed.get("sha256") != sha256(entry["content"]):
            actions.append(("write", None))
    elif state == "link":
        if kind == "link":
            if observed.get("target") != entry["src"]:
                actions.append(("relink", observed.get("target")))
        elif kind == "file":
            actions.append(("relink", None))
        else:
            raise PathsError("%s exists and is a %s, not a link" % (path, kind))
    # a file rewritten or a link replaced keeps the old owner and mode (the module copies them onto the new one)
    if not exists:
        if uid is not None or gid is not None:
            actions.append(("chown", (uid, gid)))
    elif (uid is not None and uid != observed.get("uid")) or (gid is not None and gid != observed.get("gid")):
        actions.append(("chown", (uid, gid)))
    if state != "link" and entry["mode"] is not None and (not exists or entry["mode"] != observed.get("mode")):
        actions.append(("chmod", entry["mode"]))
    return actions


def wanted(entry, uid=None, gid=None, owner=None, group=None):
    """What the path will be once the plan is applied, for the diff's after side."""
    if entry["state"] == "absent":
        return {"exists": False}
    after = {"exists": True, "type": entry["state"], "uid": uid, "gid": gid, "owner": owner or entry["owner"], "group": group or entry["group"]}
    if entry["state"] == "link":
        after["target"] = entry["src"]
    else:
        after["mode"] = entry["mode"]
    if entry["state"] == "file":
        after["sha256"] = sha256(entry["content"])
    return after


def _wanted_id(name, seen, name_key, id_key):
    """The id plan() compares with, from what the host named its owner or group (the controller cannot resolve names):
    the observed id when the names agree, -1 (differs from any id) when they do not; None: left as it is."""
    if name is None:
        return None
    text = str(name)
    if text.isdigit():
        return int(text)
    return seen.get(id_key) if seen.get(name_key) == text else -1


def pending(entries, observed):
    """The paths among `entries` (as the paths module takes them) that a paths call would change, judged from
    `observed` (path -> what files.observe saw, owner and group by name). A path that was not observed, or that the
    module would refuse, counts as pending: the call then runs and decides or fails itself."""
    out = []
    for entry in normalize(entries):
        seen = observed.get(entry["path"])
        if not seen:
            out.append(entry["path"])
            continue
        exists = bool(seen.get("exists"))
        uid = _wanted_id(entry["owner"], seen, "owner", "uid") if exists else None
        gid = _wanted_id(entry["group"], seen, "group", "gid") if exists else None
        try:
            actions = plan(entry, seen, uid, gid)
        except PathsError:
            actions = [("refused", None)]
        if actions:
            out.append(entry["path"])
    return out


def observed_checksums(paths, observed):
    """What each of `paths` holds per `observed` (sha256 of a file, None for an absent path), the same map
    service_snapshot's inspect reads; None when one of them was not observed or is neither a file nor absent."""
    out = {}
    for path in paths:
        seen = observed.get(posixpath.normpath(path))
        if not seen:
            return None
        if not seen.get("exists"):
            out[path] = None
        elif seen.get("type") == "file" and seen.get("sha256"):
            out[path] = seen["sha256"]
        else:
            return None
    return out
