# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The role's own apt source (cuda_toolkit_repo_source=deb822): its .sources file and the key its Signed-By names, read
from the host, and whether they already are what the repo phase would write. A converged host then skips that phase
(the key's download, its check, the source) instead of running it to find nothing to change.

read() runs on the host (toolkit_read); in_place() decides, from that reading, on the controller (cuda_plan.work)."""

from __future__ import annotations

import os
import stat

from ansible_collections.blackwell.inference.plugins.module_utils import openpgp

# what ansible.builtin.deb822_repository and trusted_key leave behind
SOURCE_MODE = "0644"
KEY_MODE = "0644"
ARMOR = b"-----BEGIN PGP PUBLIC KEY BLOCK-----"


def parse_deb822(text):
    """The stanzas of a deb822 file as [{field: value}] (RFC 822 style: 'Field: value', continuation lines indented,
    '#' comments, blank lines between stanzas). Field names keep their case; a multi-line value is joined by newlines.
    Raises ValueError on a line that is neither."""
    stanzas, current, last = [], {}, None
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("#"):
            continue
        if not line.strip():
            if current:
                stanzas.append(current)
            current, last = {}, None
            continue
        if line[0] in " \t":
            if last is None:
                raise ValueError("line %d continues no field: %r" % (number, line))
            current[last] = (current[last] + "\n" + line.strip()).strip("\n")
            continue
        name, sep, value = line.partition(":")
        if not sep or not name.strip() or " " in name.strip():
            raise ValueError("line %d is not 'Field: value': %r" % (number, line))
        last = name.strip()
        current[last] = value.strip()
    if current:
        stanzas.append(current)
    return stanzas


def _mode(st):
    return "%04o" % stat.S_IMODE(st.st_mode)


def _read(path):
    """(bytes, mode) of a regular file, or (None, None) when there is none; raises OSError when it cannot be read."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None, None
    if not stat.S_ISREG(st.st_mode):
        raise OSError("not a regular file")
    with open(path, "rb") as fh:
        return fh.read(), _mode(st)


def read(source, key):
    """The source file and the key file as they are on the host: {source: {path, present, mode, stanzas, error},
    key: {path, present, mode, armored, fingerprints, error}}. error says why a file that is there could not be read
    or parsed (stanzas / fingerprints are null then)."""
    src = {"path": source, "present": False, "mode": None, "stanzas": None, "error": None}
    try:
        data, mode = _read(source)
        if data is not None:
            src.update(present=True, mode=mode)
            src["stanzas"] = parse_deb822(data.decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        src.update(present=True, error=str(exc))
    kd = {"path": key, "present": False, "mode": None, "armored": None, "fingerprints": None, "error": None}
    try:
        data, mode = _read(key)
        if data is not None:
            kd.update(present=True, mode=mode, armored=ARMOR in data)
            kd["fingerprints"] = openpgp.fingerprints(data)
    except (OSError, openpgp.OpenPGPError) as exc:
        kd.update(present=True, error=str(exc))
    return {"source": src, "key": kd}


def wanted_fields(name, url, key_path):
    """The one stanza the repo phase's deb822_repository task writes (its fields, as that module names them)."""
    return {"X-Repolib-Name": name, "Types": "deb", "URIs": url, "Suites": "/", "Signed-By": key_path}


def in_place(reading, name, url, fingerprint):
    """Why the repo phase still has work on a host read by read() ([] when the source and its key are already what it
    would write). reading: read()'s answer, or None (not read: work). The key is only known to be the right one when a
    fingerprint is expected; without one the phase downloads and writes it again each run (the URL is the truth)."""
    if not reading:
        return ["the source and its key were not read"]
    src, key = reading["source"], reading["key"]
    why = []
    try:
        expected = openpgp.normalize(fingerprint)
    except openpgp.OpenPGPError as exc:
        return [str(exc)]
    if not expected:
        why.append("no key fingerprint to check %s against (cuda_toolkit_repo_key_fingerprint is empty)" % key["path"])
    if key["error"]:
        why.append("%s cannot be read: %s" % (key["path"], key["error"]))
    elif not key["present"]:
        why.append("%s is missing" % key["path"])
    else:
        verdict = openpgp.verdict(key["fingerprints"], expected) if expected else ""
        if verdict:
            why.append("%s: %s" % (key["path"], verdict))
        if key["armored"] != key["path"].endswith(".asc"):
            why.append("%s is %s" % (key["path"], "armored" if key["armored"] else "binary"))
        if key["mode"] != KEY_MODE:
            why.append("%s has mode %s, not %s" % (key["path"], key["mode"], KEY_MODE))
    if src["error"]:
        why.append("%s cannot be read: %s" % (src["path"], src["error"]))
    elif not src["present"]:
        why.append("%s is missing" % src["path"])
    else:
        want = wanted_fields(name, url, key["path"])
        if src["stanzas"] != [want]:
            why.append("%s is not the one stanza %s" % (src["path"], ", ".join("%s: %s" % kv for kv in want.items())))
        if src["mode"] != SOURCE_MODE:
            why.append("%s has mode %s, not %s" % (src["path"], src["mode"], SOURCE_MODE))
    return why
