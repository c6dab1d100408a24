#!/usr/bin/python
# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: service_snapshot
short_description: Keep, compare and put back the last good state of a service (its files and its venv link)
version_added: "0.3.0"
description:
  - A service's state is a set of files (unit, drop-in, validation unit and settings, secrets) and where its venv
    link points. O(state=saved) copies them (content, mode, owner, or the fact that a file is absent) into O(store),
    replacing the previous snapshot in one rename (O(store) is a symlink to it), so a play killed at any step leaves
    a whole snapshot behind.
  - O(state=restored) makes the host equal to the snapshot again, byte for byte, and re-points the venv link when
    O(link) is given; it reports what it put back. O(state=inspect) only compares.
  - The sglang_service role saves a snapshot only once the restarted service has answered its health check, and
    restores its files after a failed smoke or a failed health check; the sglang_venv role's C(rollback) entry puts
    the venv link back (the snapshot's C(link) in the result names it).
author:
  - Blackwell Inference maintainers (@blackwell-inference)
options:
  store:
    description: The snapshot - a symlink to a root-only directory beside it (created when needed).
    type: path
    required: true
  files:
    description: The files that make up the service's state. A file absent on the host is recorded as absent.
    type: list
    elements: path
    required: true
  link:
    description:
      - The venv symlink of the service. Recorded with O(state=saved); compared, and re-pointed with O(state=restored),
        only when given.
    type: path
  link_target:
    description: With O(state=saved), record this as the link's target instead of where it points now.
    type: str
  state:
    description: C(inspect) compares only, C(saved) records the host's state, C(restored) puts the snapshot back.
    type: str
    choices: [inspect, saved, restored]
    default: inspect
  keep_existing:
    description: With O(state=saved), leave an existing snapshot as it is (adopting the state of a host once).
    type: bool
    default: false
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
"""

EXAMPLES = r"""
- name: Record the state that just proved itself
  blackwell.inference.service_snapshot:
    store: /var/lib/blackwell-inference/sglang/last-good
    files:
      - /etc/systemd/system/sglang.service
      - /etc/systemd/system/sglang.service.d/50-blackwell-inference.conf
    link: /opt/sglang/current
    state: saved

- name: Put the last good state back after a failed health check
  blackwell.inference.service_snapshot:
    store: /var/lib/blackwell-inference/sglang/last-good
    files:
      - /etc/systemd/system/sglang.service
      - /etc/systemd/system/sglang.service.d/50-blackwell-inference.conf
    link: /opt/sglang/current
    state: restored
  register: restored
"""

RETURN = r"""
current:
  description: The host's state now (after the change) - C(files) (path to C(exists), C(sha256), C(mode), C(uid), C(gid)) and C(link).
  returned: always
  type: dict
snapshot:
  description: The snapshot's manifest (C(time), C(files), C(link)), or null when there is none.
  returned: always
  type: dict
differences:
  description: What differs between the host and the snapshot before this task (C(path), C(now), C(good)).
  returned: always
  type: list
  elements: dict
restored:
  description: With O(state=restored), the steps taken (C(write), C(remove), C(link) and the path).
  returned: always
  type: list
  elements: str
checksums:
  description: sha256 of each file now (null when absent), for fingerprints.
  returned: always
  type: dict
"""

import datetime
import hashlib
import os
import shutil
import stat
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.blackwell.inference.plugins.module_utils import service_snapshot as snap


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


def read_snapshot(store):
    """The manifest of the snapshot store points at (None when there is none)."""
    path = os.path.join(store, snap.MANIFEST)
    if not os.path.exists(path):
        return None
    with open(path) as fh:
        manifest = snap.load(fh.read())
    manifest["dir"] = os.path.realpath(store)
    return manifest


def save(store, files, link, link_target, now):
    """A new snapshot directory beside store, then store (a symlink) re-pointed at it in one rename: a save
    killed at any point leaves the previous snapshot whole. No directory is renamed (overlayfs refuses that
    for directories of a lower layer, as in container images)."""
    parent, base = os.path.split(store.rstrip("/"))
    os.makedirs(parent, mode=0o700, exist_ok=True)
    work = tempfile.mkdtemp(prefix=base + ".", dir=parent)
    entries = {}
    for index, path in enumerate(sorted(files)):
        state = file_state(path)
        if state["exists"]:
            state["blob"] = snap.blob_name(index)
            shutil.copyfile(path, os.path.join(work, state["blob"]))
        entries[path] = state
    with open(os.path.join(work, snap.MANIFEST), "w") as fh:
        fh.write(snap.dump(snap.make_manifest(now, entries, link, link_target)))
        fh.flush()
        os.fsync(fh.fileno())
    os.chmod(work, 0o700)
    if os.path.isdir(store) and not os.path.islink(store):
        shutil.rmtree(store)
    pointer = os.path.join(parent, ".%s.link" % base)
    if os.path.lexists(pointer):
        os.unlink(pointer)
    os.symlink(os.path.basename(work), pointer)
    os.replace(pointer, store)
    for name in os.listdir(parent):  # earlier snapshots, and the work of a save killed before its rename
        old = os.path.join(parent, name)
        if name.startswith(base + ".") and old != work and os.path.isdir(old) and not os.path.islink(old):
            shutil.rmtree(old, ignore_errors=True)


def restore(manifest, steps):
    done = []
    for action, path, data in steps:
        if action == "write":
            os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
            tmp = "%s.blackwell-restore" % path
            shutil.copyfile(os.path.join(manifest["dir"], data["blob"]), tmp)
            os.chown(tmp, data["uid"], data["gid"])
            os.chmod(tmp, data["mode"])
            os.replace(tmp, path)
        elif action == "remove":
            os.unlink(path)
        elif action == "link":
            tmp = "%s.blackwell-restore" % path
            if os.path.lexists(tmp):
                os.unlink(tmp)
            os.symlink(data, tmp)
            os.replace(tmp, path)
        done.append("%s %s%s" % (action, path, " -> " + data if action == "link" else ""))
    return done


def main():
    module = AnsibleModule(
        argument_spec={
            "store": {"type": "path", "required": True},
            "files": {"type": "list", "elements": "path", "required": True},
            "link": {"type": "path"},
            "link_target": {"type": "str"},
            "state": {"type": "str", "choices": ["inspect", "saved", "restored"], "default": "inspect"},
            "keep_existing": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    p = module.params
    store = p["store"].rstrip("/")
    try:
        current = host_state(p["files"], p["link"])
        manifest = read_snapshot(store)
    except (OSError, ValueError) as exc:
        module.fail_json(msg="cannot read the service's state or its snapshot in %s: %s" % (store, exc))
    diffs = snap.differences(current, manifest) if manifest else []
    result = {"changed": False, "snapshot": manifest, "differences": diffs, "restored": []}

    if p["state"] == "saved":
        target = p["link_target"] or (current["link"] or {}).get("target")
        wanted = {"files": current["files"], "link": {"path": p["link"], "target": target} if p["link"] else None}
        if manifest is None or (not p["keep_existing"] and (snap.differences(wanted, manifest) or set(manifest["files"]) != set(p["files"]))):
            result["changed"] = True
            if not module.check_mode:
                now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
                try:
                    save(store, p["files"], p["link"], target, now)
                    result["snapshot"] = read_snapshot(store)
                except (OSError, ValueError) as exc:
                    module.fail_json(msg="cannot save the snapshot in %s: %s" % (store, exc), **result)
    elif p["state"] == "restored" and manifest is not None:
        steps = snap.restore_plan(current, manifest)
        result["changed"] = bool(steps)
        result["restored"] = ["%s %s" % (step[0], step[1]) for step in steps]
        if steps and not module.check_mode:
            try:
                result["restored"] = restore(manifest, steps)
                current = host_state(p["files"], p["link"])
            except (OSError, ValueError) as exc:
                module.fail_json(msg="cannot restore the snapshot of %s: %s" % (manifest.get("time"), exc), **result)
            left = snap.differences(current, manifest)
            if left:
                module.fail_json(msg="the host still differs from the snapshot after the restore", left=left, **result)
    result["current"] = current
    result["checksums"] = {path: e.get("sha256") for path, e in current["files"].items()}
    module.exit_json(**result)


if __name__ == "__main__":
    main()
