#!/usr/bin/python
# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: secret_file
short_description: A root-only file of credentials, created 0600 and never wider
version_added: 0.3.0
description:
  - Writes the credentials the roles hand to apt, pip and the service - apt's C(auth.conf.d) logins for a repository
    or a proxy, the environment pip runs with (its index URLs and proxies), the service's secrets file - into
    O(path), owned by the user the module runs as, mode 0600 from the moment it exists (a temporary file beside it,
    created 0600, renamed over O(path)). It is never created wider and narrowed afterwards, as a copy with a mode
    would.
  - Nothing to write (no URL with credentials in O(logins), no value in O(env), an empty O(content)) removes O(path),
    so an emptied variable leaves no credentials behind.
  - The values are never returned, logged or shown in a diff.
author:
  - Blackwell Inference maintainers (@blackwell-inference)
options:
  path:
    description: The file.
    type: path
    required: true
  logins:
    description:
      - URLs (a repository, a proxy), some with C(user:password@); each that carries credentials becomes one netrc line
        C(machine host[:port]/path login USER password PASSWORD) (apt_auth.conf(5)).
    type: list
    elements: str
  env:
    description:
      - Environment variables for a shell to source (C(set -a; . FILE)); empty values are left out.
    type: dict
  content:
    description:
      - The file's text as it is (a systemd C(EnvironmentFile=) of secrets, say). Only one of O(logins), O(env) and
        O(content) is given.
    type: str
  state:
    description:
      - C(present) writes what O(logins) or O(env) give (or removes O(path) when that is nothing); C(absent) removes it.
      - C(checked) changes nothing and says whether O(path) is as C(present) would leave it (RV(matches)), so that a
        caller learns that without the text or a digest of it leaving the host.
    type: str
    choices: [present, absent, checked]
    default: present
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - blackwell.inference.attributes.check_mode_full
  - blackwell.inference.attributes.diff_none
  - blackwell.inference.attributes.debian
"""

EXAMPLES = r"""
- name: The mirror's login, where apt reads it
  blackwell.inference.secret_file:
    path: /etc/apt/auth.conf.d/90blackwell-inference.conf
    logins: [https://user:secret@mirror.example/cuda/repos/ubuntu2404/x86_64/]

- name: The environment pip runs with
  blackwell.inference.secret_file:
    path: /opt/sglang/venvs/.0123456789abcdef.pip.env
    env: {PIP_INDEX_URL: "https://token@index.example/simple", https_proxy: "http://proxy.example:3128"}
"""

RETURN = r"""
path:
  description: O(path).
  returned: always
  type: str
present:
  description: Whether O(path) holds credentials now (false when there were none to write, or with O(state=absent)).
  returned: always
  type: bool
matches:
  description: Whether O(path) is as O(state=present) would leave it (content, 0600, owned by the module's user).
  returned: always
  type: bool
"""

import os
import stat

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.blackwell.inference.plugins.module_utils.common import files, secrets


def _current(path):
    """(content, mode, uid) of the regular file at path, or None when there is none."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return False
    with open(path, "rb") as fh:
        return fh.read(), stat.S_IMODE(st.st_mode), st.st_uid


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            logins=dict(type="list", elements="str", no_log=True),
            env=dict(type="dict", no_log=True),
            content=dict(type="str", no_log=True),
            state=dict(type="str", choices=["present", "absent", "checked"], default="present"),
        ),
        mutually_exclusive=[("logins", "env", "content")],
        supports_check_mode=True,
    )
    p = module.params
    path = p["path"]
    checked = p["state"] == "checked"
    wanted = p["state"] in ("present", "checked")
    write = not checked and not module.check_mode
    if wanted and p["content"] is not None:
        text = p["content"]
    elif wanted and p["env"] is not None:
        text = secrets.env_file({k: v for k, v in p["env"].items() if v not in (None, "")})
    elif wanted:
        text = secrets.apt_logins(p["logins"] or [])
    else:
        text = ""
    now = _current(path)
    if now is False:
        module.fail_json(msg="%s is not a regular file; it is left as it is" % path, path=path)
    want = text.encode("utf-8")
    if not want:
        if now is not None and write:
            os.unlink(path)
        module.exit_json(changed=now is not None and not checked, path=path, present=checked and now is not None, matches=now is None)
    changed = now is None or now != (want, 0o600, os.geteuid())
    if changed and write:
        files.write_atomic(path, want, mode=0o600)
    module.exit_json(changed=changed and not checked, path=path, present=not checked or now is not None, matches=not changed)


if __name__ == "__main__":
    main()
