#!/usr/bin/python
# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: paths
short_description: Directories, files and links a role needs, made to match in one call
version_added: "0.3.0"
description:
  - Looks at every listed path and changes only what differs from what is wanted - a missing directory (with its
    parents), a file's content (replaced in one rename, keeping its owner and mode unless given), a link pointing
    elsewhere (replaced in one rename), the owner, group and mode.
  - One remote call for what would otherwise be one M(ansible.builtin.file) or M(ansible.builtin.copy) task per path;
    a rerun with nothing to change reports C(changed=false).
  - A file or link that should be C(absent) is removed.
  - A path of another kind in the way (a directory where a file or link goes, a file where a directory goes) fails
    the module before anything is changed.
author:
  - Blackwell Inference maintainers (@blackwell-inference)
options:
  paths:
    description: What is wanted, applied in list order (list a directory before what goes into it).
    type: list
    elements: dict
    required: true
    suboptions:
      path:
        description: Absolute path.
        type: path
        required: true
      state:
        description:
          - C(directory), C(file) (with O(paths[].content)), C(link) (to O(paths[].src)), or C(absent).
          - C(absent) removes a file or a link; a directory there fails the module (it is never removed).
        type: str
        required: true
        choices: [directory, file, link, absent]
      owner:
        description: User name or id; empty leaves it as it is (a new path belongs to the connecting user).
        type: str
      group:
        description: Group name or id; empty leaves it as it is.
        type: str
      mode:
        description: Octal permission bits such as C('0755'); empty leaves them as they are. Not for links.
        type: raw
      content:
        description: The whole content of a C(file), as text.
        type: str
      src:
        description: The target of a C(link), written as given.
        type: str
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - blackwell.inference.attributes.check_mode_full
  - blackwell.inference.attributes.posix
attributes:
  diff_mode:
    support: full
    details: One summary of every path that changes, and the old and new text of each file whose content changes.
notes:
  - Why this module and not M(ansible.builtin.file), M(ansible.builtin.copy) and M(ansible.builtin.template) - the
    service role's phases (its directories and the boot validator's code, the unit files, the validator's settings)
    each make one call for all their entries, and skip even that when the C(paths_pending) filter, over what the
    role's probe already observed at each path in the call it makes anyway, names nothing; a run that changes
    nothing makes no call for them. The same entries as builtins in loops cost a remote call per entry (a copy two) on
    every run. Measured on the lab host (C(tests/benchmark/paths_vs_builtins.yml), 33 entries, a loaded machine) -
    builtins in loops 34-36 s, one call that changes nothing 0.8-1.0 s, the skipped call 0.3-0.6 s.
  - What it gives up, and why that does not apply to its entries - no C(backup) (the role keeps the last good unit
    files with M(blackwell.inference.service_snapshot) before it changes them, and puts them back on a failed
    rollout), no C(validate) (a unit file is proven by the rollout itself - the JIT smoke and the health check - and
    rolled back when it fails), and no SELinux contexts (the roles' hosts are Debian, which runs without SELinux).
    Its entries are root-owned code and configuration under paths the role owns.
"""

EXAMPLES = r"""
- name: The service's cache, its workspace link and the role's directories
  blackwell.inference.paths:
    paths:
      - {path: /var/cache/sglang, state: directory, owner: sglang, group: sglang, mode: "0750"}
      - {path: /var/cache/sglang/jit/2c26817414e442ed/venv, state: link, src: /opt/sglang/venvs/2c26817414e442ed}
      - {path: /usr/local/libexec/blackwell-inference, state: directory, owner: root, group: root, mode: "0755"}
      - path: /usr/local/libexec/blackwell-inference/boot_validate.py
        state: file
        content: "{{ lookup('ansible.builtin.file', 'boot_validate.py', rstrip=false) }}"
        owner: root
        group: root
        mode: "0644"
"""

RETURN = r"""
changed_paths:
  description: The paths that were (in check mode, would be) changed, in list order.
  returned: always
  type: list
  elements: str
  sample: [/var/cache/sglang/jit]
results:
  description: Per path, the actions taken (C(create), C(write), C(relink), C(chown), C(chmod), C(remove)); empty when it matched.
  returned: always
  type: list
  elements: dict
  sample: [{path: /var/cache/sglang/jit, state: directory, actions: [create, chown, chmod]}]
checksums:
  description: >-
    What each file entry holds once it matches (the sha256 of its content; in check mode, would hold) and null for
    each absent entry; directories and links are left out.
  returned: always
  type: dict
  sample: {/etc/systemd/system/sglang.service.d/50-blackwell-inference.conf: 9f2c...e1, /etc/blackwell-inference/sglang.secrets.env: null}
"""

import grp
import os
import pwd
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.blackwell.inference.plugins.module_utils.common import paths as logic
from ansible_collections.blackwell.inference.plugins.module_utils.common.files import observe


def old_text(path, observed, limit=1 << 16):
    """The text a file has now, for the diff ('' when new; a note for a large or binary one)."""
    if not observed.get("exists"):
        return ""
    with open(path, "rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        return "(%s: over %d bytes, not shown)\n" % (path, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return "(%s: not text, not shown)\n" % path


def resolve(name, kind):
    """User or group name/id -> id; None when not given; KeyError when unknown."""
    if name is None:
        return None
    text = str(name)
    if text.isdigit():
        return int(text)
    return pwd.getpwnam(text).pw_uid if kind == "user" else grp.getgrnam(text).gr_gid


def replace(path, make, observed):
    """Make the new file or link beside `path` and rename it over the old one (keeping the old owner and mode)."""
    parent = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), dir=parent)
    os.close(fd)
    try:
        make(tmp)
        if not os.path.islink(tmp):
            if observed.get("exists") and observed.get("type") == "file":
                os.chown(tmp, observed["uid"], observed["gid"])
                os.chmod(tmp, observed["mode"])
            else:  # a new file gets the mode open() would give it (mkstemp's is 0600)
                mask = os.umask(0)
                os.umask(mask)
                os.chmod(tmp, 0o666 & ~mask)
        os.rename(tmp, path)
    except BaseException:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        raise


def apply(entry, actions, uid, gid, observed):
    path = entry["path"]
    for action, detail in actions:
        if action == "remove":
            os.unlink(path)
        elif action == "create" and entry["state"] == "directory":
            os.makedirs(path, exist_ok=True)
        elif action in ("create", "write") and entry["state"] == "file":

            def write(tmp, content=entry["content"]):
                with open(tmp, "w", encoding="utf-8") as fh:
                    fh.write(content)
                    fh.flush()
                    os.fsync(fh.fileno())

            replace(path, write, observed)
        elif action in ("create", "relink"):

            def link(tmp, src=entry["src"]):
                os.unlink(tmp)
                os.symlink(src, tmp)

            replace(path, link, {"exists": False})
        elif action == "chown":
            os.lchown(path, -1 if detail[0] is None else detail[0], -1 if detail[1] is None else detail[1])
        elif action == "chmod":
            os.chmod(path, detail)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            paths=dict(
                type="list",
                elements="dict",
                required=True,
                options=dict(
                    path=dict(type="path", required=True),
                    state=dict(type="str", required=True, choices=list(logic.STATES)),
                    owner=dict(type="str"),
                    group=dict(type="str"),
                    mode=dict(type="raw"),
                    content=dict(type="str"),
                    src=dict(type="str"),
                ),
            ),
        ),
        supports_check_mode=True,
    )
    try:
        entries = logic.normalize([{k: v for k, v in e.items() if v is not None} for e in module.params["paths"]])
    except logic.PathsError as exc:
        module.fail_json(msg=str(exc))

    # look at everything and plan before changing anything: a path in the way fails with nothing changed
    plans = []
    for entry in entries:
        try:
            uid, gid = resolve(entry["owner"], "user"), resolve(entry["group"], "group")
        except KeyError:
            if not module.check_mode:
                module.fail_json(msg="%s: no such user or group (owner=%s, group=%s)" % (entry["path"], entry["owner"], entry["group"]))
            uid = gid = None  # created earlier in this play when not in check mode: it would change
            unknown = True
        else:
            unknown = False
        observed = observe(entry["path"])
        try:
            actions = logic.plan(entry, observed, uid, gid)
        except logic.PathsError as exc:
            module.fail_json(msg=str(exc), path=entry["path"])
        if unknown and not actions:
            actions = [("chown", (None, None))]
        plans.append((entry, observed, uid, gid, actions))

    results, changed_paths, before, after, contents = [], [], [], [], []
    for entry, observed, uid, gid, actions in plans:
        results.append({"path": entry["path"], "state": entry["state"], "actions": [a for a, _d in actions]})
        if not actions:
            continue
        changed_paths.append(entry["path"])
        if module._diff and entry["state"] == "file" and any(a in ("create", "write") for a, _d in actions):
            text = old_text(entry["path"], observed)
            contents.append({"before_header": entry["path"], "after_header": entry["path"], "before": text, "after": entry["content"]})
        before.append("%s: %s" % (entry["path"], logic.describe(observed)))
        after.append("%s: %s" % (entry["path"], logic.describe(logic.wanted(entry, uid, gid))))
        if module.check_mode:
            continue
        try:
            apply(entry, actions, uid, gid, observed)
        except OSError as exc:
            module.fail_json(msg="%s: %s" % (entry["path"], exc), path=entry["path"], changed_paths=changed_paths, results=results)

    diff = [{"before": "\n".join(before) + ("\n" if before else ""), "after": "\n".join(after) + ("\n" if after else "")}]
    diff += contents  # a file whose content changes: its old and new text, as ansible.builtin.template shows them
    module.exit_json(changed=bool(changed_paths), changed_paths=changed_paths, results=results, checksums=logic.checksums(entries), diff=diff)


if __name__ == "__main__":
    main()
