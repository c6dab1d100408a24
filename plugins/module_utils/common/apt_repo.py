# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""apt's sources as the cuda_toolkit role sees them.

- Every source's URIs (source_uris, on the host) and the files naming the role's repository among them (naming, on the
  controller): a second source for that URL with another Signed-By makes apt update fail. The reading needs no URL, so
  site.yml's lock can make it before the host's facts (which the URL is worked out from) are there.
- The role's own source (cuda_toolkit_repo_source=deb822): its .sources file and the key its Signed-By names (read, on
  the host), and whether they already are what the repo phase would write (in_place, on the controller). A converged
  host then skips that phase (the key's download, its check, the source) instead of running it to find nothing to
  change."""

from __future__ import annotations

import os
import stat

from ansible_collections.blackwell.inference.plugins.module_utils.common import openpgp

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


def _list_uris(text):
    """The URIs of the one-line entries in a .list file ('deb [options] URI suite [components]'; comments skipped)."""
    uris = []
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if len(words) < 2 or words[0] not in ("deb", "deb-src"):
            continue
        rest = words[1:]
        if rest[0].startswith("["):  # options, which may hold spaces: up to the word that closes them
            while rest and not rest[0].endswith("]"):
                rest = rest[1:]
            rest = rest[1:]
        if rest:
            uris.append(rest[0])
    return uris


def _sources_uris(text):
    """The URIs of the enabled stanzas of a .sources file; one that does not parse is read line by line for URIs."""
    try:
        stanzas = parse_deb822(text)
    except ValueError:
        return [u for line in text.splitlines() if line.lower().startswith("uris:") for u in line.split(":", 1)[1].split()]
    fields = [{k.lower(): v for k, v in stanza.items()} for stanza in stanzas]
    return [u for f in fields if f.get("enabled", "yes").lower() != "no" for u in f.get("uris", "").split()]


def source_uris(root="/etc/apt"):
    """{path: [URI]} of every source file apt reads under root (*.list and *.sources, at any depth), what apt would
    fetch from (commented lines and disabled stanzas left out). A file that cannot be read is left out."""
    found = {}
    for top, dirs, names in os.walk(root):
        dirs.sort()
        for name in sorted(names):
            if not name.endswith((".list", ".sources")):
                continue
            path = os.path.join(top, name)
            try:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
            except OSError:
                continue
            found[path] = _list_uris(text) if name.endswith(".list") else _sources_uris(text)
    return found


def naming(sources, url):
    """The files among source_uris()'s answer that fetch from url (a trailing / either way), sorted."""
    want = str(url or "").rstrip("/")
    return sorted(path for path, uris in (sources or {}).items() if want and any(u.rstrip("/") == want for u in uris))


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
    would write: the one stanza with the same fields, as apt reads it (their order, spacing and comments are not
    compared); the key with exactly the expected fingerprint; the modes apt needs). reading: read()'s answer, or None
    (not read: work). The key is only known to be the right one when a fingerprint is expected; without one the phase
    runs each run and compares the key at the URL with the one in place (the URL is the truth)."""
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
