# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules for the paths an operator gives the roles: the directories the service user may own (chowned to it, or
put in its units' ReadWritePaths=), the venv root, and the toolkit root (root's, never chowned). Each function returns
"" when the path passes, else the rule it broke (the caller names the variable)."""

from __future__ import annotations

import posixpath
import re

# Directories of the system: none of them, and none of their parents, may be handed to the service user or be the venv
# root (a chown or a mode 0750 there would cut every other user off what is below).
SYSTEM_DIRS = (
    "/",
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/home",
    "/lib",
    "/lib32",
    "/lib64",
    "/media",
    "/mnt",
    "/opt",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/srv",
    "/sys",
    "/tmp",  # noqa: S108 - refused, never used
    "/usr",
    "/usr/bin",
    "/usr/include",
    "/usr/lib",
    "/usr/lib32",
    "/usr/lib64",
    "/usr/libexec",
    "/usr/local",
    "/usr/local/bin",
    "/usr/local/etc",
    "/usr/local/include",
    "/usr/local/lib",
    "/usr/local/libexec",
    "/usr/local/sbin",
    "/usr/local/share",
    "/usr/local/src",
    "/usr/sbin",
    "/usr/share",
    "/usr/src",
    "/var",
    "/var/backups",
    "/var/cache",
    "/var/lib",
    "/var/local",
    "/var/lock",
    "/var/log",
    "/var/mail",
    "/var/opt",
    "/var/run",
    "/var/spool",
    "/var/tmp",  # noqa: S108 - refused, never used
)
# The ready marker's directory (the roles' own, root's) and /etc: nothing the service user owns goes in or above them.
MARKER_DIR = "/etc/ansible/facts.d"
ETC = "/etc"


def _inside_or_above(path, other):
    """Whether path is other, inside it, or one of its parents."""
    return path == other or path.startswith(other.rstrip("/") + "/") or other.startswith(path.rstrip("/") + "/")


def path_refusal(path):
    """One normalised absolute path, or the rule it broke: no whitespace or control character (it would become two
    paths in a unit's ReadWritePaths=), absolute, and written as posixpath.normpath writes it (no //, no . or ..,
    no trailing /)."""
    if not isinstance(path, str) or path == "":
        return "one absolute path is needed (got %r)" % (path,)
    if re.search(r"[\s\x00-\x1f\x7f]", path):
        return "one path, with no whitespace or control character in it (got %r)" % path
    if not path.startswith("/"):
        return "an absolute path (got %s)" % path
    norm = posixpath.normpath(path)
    if norm.startswith("//"):
        norm = "/" + norm.lstrip("/")
    if norm != path:
        return "a normalised path: write %s (got %s)" % (norm, path)
    return ""


def system_refusal(path):
    """A normalised path that is not a system directory nor a parent of one, or the rule it broke."""
    if path in SYSTEM_DIRS:
        return "not a system directory (got %s)" % path
    below = sorted(d for d in SYSTEM_DIRS if d.startswith(path + "/"))
    if below:
        return "not a parent of the system directory %s (got %s)" % (below[0], path)
    return ""


def venv_root_refusal(path):
    """The venv root's rules, or the one it broke: one normalised absolute path, not a system directory or a parent of
    one, not inside or above the marker's directory or /etc."""
    refusal = path_refusal(path) or system_refusal(path)
    if refusal:
        return refusal
    for other, what in ((MARKER_DIR, "the ready marker's directory"), (ETC, "/etc")):
        if _inside_or_above(path, other):
            return "not inside or above %s %s (got %s)" % (what, other, path)
    return ""


def service_dir_refusal(path, venv_root=None):
    """The rules for a directory the service user may own (chowned to it, or in ReadWritePaths=), or the one it broke:
    the venv root's rules, and not inside or above the venv root (root's code the service runs)."""
    refusal = venv_root_refusal(path)
    if refusal:
        return refusal
    if venv_root and _inside_or_above(path, posixpath.normpath(str(venv_root))):
        return "not inside or above the venv root %s (got %s)" % (posixpath.normpath(str(venv_root)), path)
    return ""


def same_path(path, other):
    """Whether two absolute paths name the same place as written (// and a trailing / do not make another path)."""
    return posixpath.normpath("/" + str(path).lstrip("/")) == posixpath.normpath("/" + str(other).lstrip("/"))
