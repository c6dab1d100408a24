# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure pieces of the cuda_link module: keep /usr/local/cuda (and every /usr/local/cuda-<major>) where it was,
whatever made it.

NVIDIA's cuda-toolkit-X-Y-config-common packages run `update-alternatives --install /usr/local/cuda cuda
/usr/local/cuda-X.Y <XY>` (and the same for /usr/local/cuda-<X>). update-alternatives replaces any symlink at that
path (a runfile's plain link, a hand-made one) and, in auto mode, points it at the highest priority: installing 13.0
beside 12.8 moves every 12.8 user to 13.0. It never replaces a real directory (a warning, exit 0).

So before anything is installed, each link the host has is registered in its group (when its toolkit is not
registered there yet) and its group set to manual mode on that toolkit. The first contact is written down (the
record); from then on the record says where the links belong, never their current target, so a link moved behind the
role's back is reported and put back instead of being accepted. `cuda_toolkit_default` is the operator's way to move
the main link on purpose (the record follows it).

Everything here decides; the module observes (lstat, readlink, `update-alternatives --query`, the record) and applies.
"""

from __future__ import annotations

import posixpath
import re

RECORD_VERSION = 1
_GROUP = re.compile(r"^cuda(-[0-9]+)?$")
_TOOLKIT_DIR = re.compile(r"^cuda-([0-9]+)\.([0-9]+)$")


class CudaLinkError(ValueError):
    """Bad input to the decision (not a host state: those are refusals in the plan)."""


def group_of(link):
    """'/usr/local/cuda' -> 'cuda', '/usr/local/cuda-12' -> 'cuda-12' (the alternatives group NVIDIA's packages use)."""
    name = posixpath.basename(link)
    if not _GROUP.match(name):
        raise CudaLinkError("%s is not /usr/local/cuda or /usr/local/cuda-<major>" % link)
    return name


def toolkit_version(path):
    """'/usr/local/cuda-12.8' -> '12.8'; None when the directory name carries no X.Y."""
    m = _TOOLKIT_DIR.match(posixpath.basename(path.rstrip("/"))) if path else None
    return "%s.%s" % (m.group(1), m.group(2)) if m else None


def priority(path):
    """The priority NVIDIA's packages give a toolkit (12.8 -> 128, 13.0 -> 130); 1 for a directory without X.Y.
    Only auto mode reads it: the groups are left in manual mode."""
    version = toolkit_version(path)
    if not version:
        return 1
    major, minor = version.split(".")
    return int(major) * 10 + int(minor)


def parse_query(stdout, rc):
    """`update-alternatives --query <group>` -> {'link', 'status', 'value', 'alternatives': {path: priority}};
    None when the group does not exist (rc 2, 'no alternatives for')."""
    if rc != 0:
        return None
    head, alternatives, current = {}, {}, None
    for line in stdout.splitlines():
        key, sep, value = line.partition(": ")
        if not sep:
            continue
        if key == "Alternative":
            current = value.strip()
            alternatives[current] = None
        elif key == "Priority" and current is not None:
            alternatives[current] = int(value) if value.strip().lstrip("-").isdigit() else None
        elif current is None and key in ("Name", "Link", "Status", "Value", "Best"):
            head[key.lower()] = value.strip()
    value = head.get("value")
    return {
        "link": head.get("link"),
        "status": head.get("status"),
        "value": None if value in (None, "", "none") else value,
        "alternatives": alternatives,
    }


def resolve(link, observed):
    """Where an observed link leads, one hop past the alternatives: the group's value when the link goes through
    /etc/alternatives/<group>, else the link's own target (made absolute). None for a missing path or a non-link."""
    if observed["kind"] != "link":
        return None
    target = observed["target"]
    if not target.startswith("/"):
        target = posixpath.normpath(posixpath.join(posixpath.dirname(link), target))
    target = posixpath.normpath(target)
    if observed.get("via_alternatives") and observed.get("alternatives_target"):
        target = posixpath.normpath(observed["alternatives_target"])
    return target


def record_of(links, recorded_at):
    """The record written on first contact (and whenever cuda_toolkit_default moves the main link)."""
    return {"version": RECORD_VERSION, "recorded_at": recorded_at, "links": dict(sorted(links.items()))}


def plan(root, observed, groups, record, default, wanted, exists, phase):
    """What to do so that every link stays where it belongs.

    root: the toolkits' root ('/usr/local'). observed: {link path: {'kind': 'link'|'directory'|'file'|'missing',
    'target': readlink, 'via_alternatives': bool, 'alternatives_target': readlink of /etc/alternatives/<group>,
    'resolved': realpath}} for /usr/local/cuda and every /usr/local/cuda-<major> there is or is recorded.
    groups: {group: parse_query() result or None}. record: the record or None. default: cuda_toolkit_default ('' or
    X.Y). wanted: the X.Y of the toolkits this run installs. exists: {path: bool} for every candidate target.
    phase: 'before' (nothing installed yet: a target still to be installed is pinned after), 'after' or 'verify'.

    Returns {'keep': {link: target}, 'actions': [argv...], 'record': new record links or None, 'moved': [...],
    'created': [...], 'kept_directories': [...], 'pending': [...], 'refusals': [...], 'notes': [...]}."""
    if phase not in ("before", "after", "verify"):
        raise CudaLinkError("phase must be before, after or verify (got %r)" % phase)
    main = posixpath.join(root, "cuda")
    recorded = dict((record or {}).get("links") or {})
    keep, refusals, notes, moved, created, kept_dirs, pending, actions = {}, [], [], [], [], [], [], []
    wanted_paths = {posixpath.join(root, "cuda-" + v) for v in wanted}

    for link in sorted(set(observed) | set(recorded)):
        seen = observed.get(link) or {"kind": "missing"}
        now = resolve(link, seen)
        if link == main and default:
            want = posixpath.join(root, "cuda-" + default)
            was = recorded.get(link, now)
            if was != want:
                notes.append("%s moves from %s to %s: cuda_toolkit_default=%s" % (link, was or "nothing", want, default))
        elif link in recorded:
            want = recorded[link]
        elif seen["kind"] == "link":
            want = now
        elif seen["kind"] == "directory" and link == main:
            want = None  # update-alternatives never replaces a directory: kept as it is, nothing to pin
        elif seen["kind"] in ("directory", "file"):
            continue  # a /usr/local/cuda-<major> that is not a link: no package replaces it
        elif link == main:
            oldest = sorted(wanted, key=lambda v: tuple(int(p) for p in v.split(".")))[:1]
            if not oldest:
                refusals.append("%s does not exist and no toolkit is wanted: set cuda_toolkit_default to the X.Y it should point to" % link)
                continue
            want = posixpath.join(root, "cuda-" + oldest[0])
            created.append(link)
            notes.append("%s did not exist: it is made for %s (the oldest toolkit wanted; cuda_toolkit_default chooses another)" % (link, want))
        else:
            continue  # a /usr/local/cuda-<major> there is not: the packages may make it, nobody used it before

        if seen["kind"] in ("directory", "file"):
            if link == main and want is None:
                kept_dirs.append(link)
                keep[link] = None
                continue
            refusals.append(
                "%s is a %s, not a link to %s (%s): move the %s away and rerun, or leave cuda_toolkit_default empty to keep it."
                % (link, seen["kind"], want, "cuda_toolkit_default" if link == main and default else "recorded", seen["kind"])
            )
            continue
        if want is None:  # recorded as a directory, now a link or gone
            refusals.append(
                "%s was a directory when first seen and is now %s: put it back, or remove %s to start over."
                % (link, "a link to " + str(now) if now else "missing", "/etc/blackwell-inference/cuda-links.json")
            )
            continue
        keep[link] = want
        if not exists.get(want):
            if want in wanted_paths and phase == "before":
                pending.append(link)  # pinned once it is installed
                continue
            refusals.append(
                "%s should point to %s (%s), which is not there%s: set cuda_toolkit_default to the X.Y it should point to."
                % (
                    link,
                    want,
                    "recorded" if link in recorded and not (link == main and default) else "wanted",
                    "" if phase == "verify" else " and is not installed by this run",
                )
            )
            continue
        if link in recorded and now != want and not (link == main and default and recorded[link] != want):
            moved.append({"link": link, "recorded": want, "now": now, "kind": seen["kind"]})
        group = group_of(link)
        state = groups.get(group)
        registered = bool(state) and want in state["alternatives"]
        if not registered:
            actions.append(["update-alternatives", "--install", link, group, want, str(priority(want))])
        if not (state and state["status"] == "manual" and state["value"] == want and seen.get("via_alternatives")):
            actions.append(["update-alternatives", "--set", group, want])

    # the intent is written before anything is installed, a link still to be pinned included
    new_record = dict(keep) if not refusals and keep and keep != recorded else None
    return {
        "keep": keep,
        "actions": actions if not refusals else [],
        "record": new_record,
        "moved": moved,
        "created": created,
        "kept_directories": kept_dirs,
        "pending": pending,
        "refusals": refusals,
        "notes": notes,
    }


def describe(result):
    """One line per link for the role's output: where it is kept and what this run did or would do."""
    lines = []
    for link, target in sorted(result["keep"].items()):
        if target is None:
            lines.append("%s: a directory, kept as it is (update-alternatives never replaces one)" % link)
            continue
        what = "kept on %s" % target
        if any(m["link"] == link for m in result["moved"]):
            now = next(m["now"] for m in result["moved"] if m["link"] == link)
            what += " (it had been moved to %s behind the role's back: put back)" % (now or "nothing")
        elif link in result["pending"]:
            what += " (pinned once it is installed)"
        lines.append("%s: %s" % (link, what))
    return lines + result["notes"] + result["refusals"]
