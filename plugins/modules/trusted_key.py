#!/usr/bin/python
# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: trusted_key
short_description: Check a downloaded apt signing key, or the keys a keyring package carries, before apt trusts them
version_added: "0.3.0"
description:
  - Reads the OpenPGP key fingerprints of O(src) - a key file (armored or binary) or a C(.deb) such as NVIDIA's
    C(cuda-keyring) (every key file it installs) - without gpg, and compares them with O(fingerprint).
  - Every armored block of a key file is read (a second block after the expected key is seen, and refused as a key
    more than the expected one). A key file that matches is written to O(dest) (where apt's C(Signed-By) reads it) as
    exactly the packets checked - one armored block, or the binary packets - never the file as it came (text around
    or between blocks is dropped). A C(.deb) is only checked (the caller installs the checked file). Anything else fails
    with the fingerprints found, and nothing is written.
  - O(src) should be a place apt never reads (a download directory), so that a key that fails the check is never trusted.
    A O(src) that fails the check is removed (so the next run downloads it again).
author:
  - Blackwell Inference maintainers (@blackwell-inference)
options:
  src:
    description: The downloaded key file or keyring package on the host.
    type: path
    required: true
  kind:
    description: C(key) (a key file) or C(deb) (a package whose key files are checked).
    type: str
    choices: [key, deb]
    default: key
  fingerprint:
    description:
      - The one key expected (40 hex digits, spaces allowed). Empty skips the comparison (the fingerprints are still
        reported); the role allows that only for C(https:) and C(file:) sources.
    type: str
    default: ""
  dest:
    description:
      - Where a checked key file goes (mode 0644), for O(kind=key). Written only when its content differs; the mode is
        put right either way.
    type: path
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - blackwell.inference.attributes.check_mode_full
  - blackwell.inference.attributes.diff_none
  - blackwell.inference.attributes.debian
"""

EXAMPLES = r"""
- name: Install NVIDIA's repository key where apt reads it, once its fingerprint is checked
  blackwell.inference.trusted_key:
    src: /var/lib/blackwell-inference/downloads/3bf863cc.pub
    fingerprint: EB693B3035CD5710E231E123A4B469963BF863CC
    dest: /etc/apt/keyrings/cuda-archive-keyring.asc

- name: Check the keys NVIDIA's cuda-keyring package carries before it is installed
  blackwell.inference.trusted_key:
    src: /var/lib/blackwell-inference/downloads/cuda-keyring_1.1-1_all.deb
    kind: deb
    fingerprint: EB693B3035CD5710E231E123A4B469963BF863CC
"""

RETURN = r"""
fingerprints:
  description: Per key file, the fingerprints of its primary keys.
  returned: always
  type: dict
  sample: {/var/lib/blackwell-inference/downloads/3bf863cc.pub: [EB693B3035CD5710E231E123A4B469963BF863CC]}
checked:
  description: True when the fingerprints were compared with O(fingerprint) (false when it is empty).
  returned: always
  type: bool
"""

import os
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.blackwell.inference.plugins.module_utils.common import files, openpgp

# where keyring packages put keys apt trusts
KEY_DIRS = ("usr/share/keyrings", "etc/apt/keyrings", "etc/apt/trusted.gpg.d")


def read(path):
    with open(path, "rb") as fh:
        return fh.read()


def deb_keys(module, src):
    """{path in the package: fingerprints} of every key file a .deb would install where apt looks."""
    tmp = tempfile.mkdtemp(prefix="trusted-key.")
    try:
        argv = ["dpkg-deb", "--extract", src, tmp]
        rc, out, err = module.run_command(argv)
        if rc != 0:
            module.fail_json(msg="%s is not a package dpkg-deb can read" % src, cmd=argv, rc=rc, stdout=out, stderr=err)
        found = {}
        for sub in KEY_DIRS:
            top = os.path.join(tmp, sub)
            for name in sorted(os.listdir(top)) if os.path.isdir(top) else []:
                path = os.path.join(top, name)
                if os.path.isfile(path) and name.endswith((".gpg", ".asc", ".pgp")):
                    found["/" + sub + "/" + name] = openpgp.fingerprints(read(path))
        return found
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            src=dict(type="path", required=True),
            kind=dict(type="str", choices=["key", "deb"], default="key"),
            fingerprint=dict(type="str", default=""),
            dest=dict(type="path"),
        ),
        required_if=[("kind", "key", ("dest",))],
        supports_check_mode=True,
    )
    p = module.params
    try:
        expected = openpgp.normalize(p["fingerprint"])
        if p["kind"] == "deb":
            found = deb_keys(module, p["src"])
            if not found:
                module.fail_json(msg="%s installs no key file under %s: not a keyring package" % (p["src"], ", ".join("/" + d for d in KEY_DIRS)))
        else:
            data = read(p["src"])
            fprs, checked = openpgp.checked_file(data)
            found = {p["src"]: fprs}
    except (OSError, openpgp.OpenPGPError) as exc:
        module.fail_json(msg="%s cannot be checked: %s" % (p["src"], exc))
    out = dict(fingerprints=found, checked=bool(expected), changed=False)
    bad = ["%s: %s" % (path, why) for path, why in ((path, openpgp.verdict(fprs, expected)) for path, fprs in found.items()) if why]
    if bad:
        if not module.check_mode:  # a download that failed its check is not kept: the next run fetches it again
            os.unlink(p["src"])
        module.fail_json(msg="Refused, nothing written where apt reads keys: %s (expected fingerprint %s)" % ("; ".join(bad), expected), **out)
    if p["kind"] == "key":
        armored = openpgp.armored(data)
        if p["dest"].endswith(".asc") != armored:  # apt reads a key file by its name: .asc armored, .gpg binary
            module.fail_json(
                msg="%s is %s, but apt reads %s as %s: name dest after the key's format"
                % (p["src"], "armored" if armored else "binary", p["dest"], "armored" if p["dest"].endswith(".asc") else "binary"),
                **out,
            )
        # what apt gets is exactly the packets checked (one armored block, or the binary packets), never the file as it
        # came: a second block or text around it is not written
        same = os.path.isfile(p["dest"]) and read(p["dest"]) == checked
        out["changed"] = not same
        if not same and not module.check_mode:
            files.write_atomic(p["dest"], checked)
        if same:  # apt reads it as _apt: the same key with another mode is put right too
            out["changed"] = module.set_mode_if_different(p["dest"], "0644", False)
    module.exit_json(**out)


if __name__ == "__main__":
    main()
