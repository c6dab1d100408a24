# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The last good state of a service: which files it was made of (content, mode, owner, or absent) and where
the venv link pointed. Pure decisions; the service_snapshot module does the file work.

A manifest is {"time": ..., "link": {"path": ..., "target": ...} or None, "files": {path: entry}} where an
entry is {"exists": False} or {"exists": True, "sha256": ..., "mode": 0o644, "uid": 0, "gid": 0, "blob": name}.
"""

from __future__ import annotations

import json

MANIFEST = "manifest.json"
FORMAT = 1


def entry(exists, sha256=None, mode=None, uid=None, gid=None):
    if not exists:
        return {"exists": False}
    return {"exists": True, "sha256": sha256, "mode": mode, "uid": uid, "gid": gid}


def same_file(a, b):
    """Whether two entries describe the same file state (content, mode and owner), or both absent."""
    if not a.get("exists") or not b.get("exists"):
        return bool(a.get("exists")) == bool(b.get("exists"))
    return all(a.get(k) == b.get(k) for k in ("sha256", "mode", "uid", "gid"))


def differences(current, snapshot):
    """What differs between the host now ({"files", "link"}) and a manifest: a sorted list of
    {"path", "now", "good"} with "present"/"absent"/"content"/"mode or owner"/a link target. The link is compared
    only when the host's state has one (its "link" is None when the caller read no link)."""
    out = []
    good_files = snapshot.get("files") or {}
    for path in sorted(set(current.get("files") or {}) | set(good_files)):
        now = (current.get("files") or {}).get(path) or {"exists": False}
        good = good_files.get(path)
        if good is None or same_file(now, good):
            continue  # a file the snapshot does not know is not the snapshot's to judge
        if now.get("exists") != good.get("exists"):
            out.append({"path": path, "now": "present" if now.get("exists") else "absent", "good": "present" if good.get("exists") else "absent"})
        elif now.get("sha256") != good.get("sha256"):
            out.append({"path": path, "now": "content " + str(now.get("sha256"))[:12], "good": "content " + str(good.get("sha256"))[:12]})
        else:
            out.append({"path": path, "now": "mode or owner", "good": "mode or owner"})
    link, good_link = current.get("link"), snapshot.get("link")
    if link is not None and good_link and good_link.get("target") and link.get("target") != good_link["target"]:
        out.append({"path": good_link["path"], "now": link.get("target"), "good": good_link["target"]})
    return out


def restore_plan(current, snapshot):
    """The steps that make the host equal to the snapshot, in a safe order: files written or removed first,
    the venv link last (only when the host's state has one: the sglang_service role reads none and leaves the link
    to the sglang_venv role's rollback entry). Each step is ("write", path, entry), ("remove", path, None) or
    ("link", path, target)."""
    steps = []
    good_files = snapshot.get("files") or {}
    for diff in differences(current, snapshot):
        good = good_files.get(diff["path"])
        if good is None:
            continue
        steps.append(("write", diff["path"], good) if good.get("exists") else ("remove", diff["path"], None))
    good_link, link = snapshot.get("link"), current.get("link")
    if link is not None and good_link and good_link.get("target") and link.get("target") != good_link["target"]:
        steps.append(("link", good_link["path"], good_link["target"]))
    return steps


def make_manifest(now, files, link_path=None, link_target=None):
    """A manifest for the files ({path: entry}, each existing one with a "blob" name) and the venv link."""
    return {
        "format": FORMAT,
        "time": now,
        "files": files,
        "link": {"path": link_path, "target": link_target} if link_path and link_target else None,
    }


def blob_name(index):
    return "file-%02d" % index


def load(text):
    """A manifest from its JSON text; ValueError when it is not one this code wrote."""
    data = json.loads(text)
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("files"), dict):
        raise ValueError("not a blackwell.inference service snapshot (format %r)" % (data.get("format") if isinstance(data, dict) else None))
    return data


def dump(manifest):
    return json.dumps(manifest, indent=2, sort_keys=True) + "\n"
