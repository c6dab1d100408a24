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
  - Durability - each copy and then the manifest (which names them) is written to a temporary file in a new directory
    beside the previous snapshot, fsynced and renamed into place; the directory and its parent are fsynced before
    O(store) is re-pointed and again after, and only then is the previous snapshot removed. A power cut at any point
    leaves O(store) on the previous snapshot or on the new one, whole.
  - O(state=restored) makes the host equal to the snapshot again, byte for byte, and re-points the venv link when
    O(link) is given; it reports what it put back. Each file is written to a temporary file beside it that is created
    0600 and root's, given its final owner and mode once its bytes are in (a secret is never readable by others, not
    even for a moment), checked against the manifest's sha256, fsynced and renamed into place. Every differing file is tried even when one fails; the task
    then fails naming each one that was not put back (RV(errors)) and what was (RV(restored)).
  - O(state=inspect) only compares.
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
  keyed:
    description:
      - The secret files among O(files) - C(paths) - and the host's digest key C(key) (a root-only file, read, never
        made here). Whatever this module returns shows such a file's content only as an HMAC-SHA256 of its sha256 under
        the key (C(hmac-sha256:no-key) while there is none), never as its sha256. The snapshot itself keeps the sha256 in
        its root-only directory.
    type: dict
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - blackwell.inference.attributes
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
errors:
  description: With O(state=restored), one line per step that failed (C(write PATH) and why); the others were taken.
  returned: always
  type: list
  elements: str
checksums:
  description: sha256 of each file now (null when absent; a secret file of O(keyed) by its keyed digest), for fingerprints.
  returned: always
  type: dict
"""

import datetime
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.blackwell.inference.plugins.module_utils.common import secrets
from ansible_collections.blackwell.inference.plugins.module_utils.service import snapshot as snap
from ansible_collections.blackwell.inference.plugins.module_utils.service.snapshot_store import host_state, read_snapshot, restore, save


def main():
    module = AnsibleModule(
        argument_spec={
            "store": {"type": "path", "required": True},
            "files": {"type": "list", "elements": "path", "required": True},
            "link": {"type": "path"},
            "link_target": {"type": "str"},
            "state": {"type": "str", "choices": ["inspect", "saved", "restored"], "default": "inspect"},
            "keep_existing": {"type": "bool", "default": False},
            "keyed": {"type": "dict", "no_log": False},  # paths, not secrets
        },
        supports_check_mode=True,
    )
    p = module.params
    store = p["store"].rstrip("/")
    keyed = p["keyed"] or {}
    secret = [os.path.normpath(str(x)) for x in keyed.get("paths") or []]
    try:
        key = secrets.digest_key(str(keyed["key"])) if secret and keyed.get("key") else None
        current = host_state(p["files"], p["link"])
        manifest = read_snapshot(store)
    except (OSError, ValueError) as exc:
        module.fail_json(msg="cannot read the service's state or its snapshot in %s: %s" % (store, exc))

    def shown(state):
        """A state or manifest as it may be returned: the secret files' sha256 keyed."""
        if not state or not secret:
            return state
        return dict(state, files=secrets.keyed_observations(state.get("files") or {}, secret, key))

    def differences(now, good):
        return snap.differences(shown(now), shown(good))

    diffs = differences(current, manifest) if manifest else []
    result = {"changed": False, "snapshot": shown(manifest), "differences": diffs, "restored": [], "errors": []}

    if p["state"] == "saved":
        target = p["link_target"] or (current["link"] or {}).get("target")
        wanted = {"files": current["files"], "link": {"path": p["link"], "target": target} if p["link"] else None}
        if manifest is None or (not p["keep_existing"] and (snap.differences(wanted, manifest) or set(manifest["files"]) != set(p["files"]))):
            result["changed"] = True
            if not module.check_mode:
                now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
                try:
                    save(store, p["files"], p["link"], target, now)
                    result["snapshot"] = shown(read_snapshot(store))
                except (OSError, ValueError) as exc:
                    module.fail_json(msg="cannot save the snapshot in %s: %s" % (store, exc), **result)
    elif p["state"] == "restored" and manifest is not None:
        steps = snap.restore_plan(current, manifest)
        result["changed"] = bool(steps)
        result["restored"] = ["%s %s" % (step[0], step[1]) for step in steps]
        if steps and not module.check_mode:
            result["restored"], result["errors"] = restore(manifest, steps, secret)
            try:
                current = host_state(p["files"], p["link"])
            except (OSError, ValueError) as exc:
                module.fail_json(msg="cannot read the service's state after the restore: %s" % exc, **result)
            if result["errors"]:
                result.update(current=shown(current), left=differences(current, manifest))
                module.fail_json(
                    msg="could not put back %d of the %d differing files and links of the snapshot of %s (the others were): %s"
                    % (len(result["errors"]), len(steps), manifest.get("time"), "; ".join(result["errors"])),
                    **result,
                )
            left = differences(current, manifest)
            if left:
                module.fail_json(msg="the host still differs from the snapshot after the restore", left=left, **result)
    result["current"] = shown(current)
    result["checksums"] = {path: e.get("sha256") for path, e in result["current"]["files"].items()}
    module.exit_json(**result)


if __name__ == "__main__":
    main()
