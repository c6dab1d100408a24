# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cuda links as they are on the host (lstat, readlink, `update-alternatives --query`, the record), and what the
plan of module_utils/cuda/link.py makes of them.

Shared by the cuda_link module, which applies the plan, and toolkit_probe, which only reads it: a run whose links are
where the record says makes no cuda_link call before its install."""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import stat

from ansible_collections.blackwell.inference.plugins.module_utils.common import files
from ansible_collections.blackwell.inference.plugins.module_utils.cuda import link as logic

ALTERNATIVES_DIR = "/etc/alternatives"


class ReadError(Exception):
    """The links or their record cannot be read: msg, and rc/stdout/stderr of a failed command."""

    def __init__(self, msg, result=None):
        super().__init__(msg)
        self.msg = msg
        self.result = result or {}


def observe(link):
    try:
        st = os.lstat(link)
    except FileNotFoundError:
        return {"kind": "missing"}
    if not stat.S_ISLNK(st.st_mode):
        return {"kind": "directory" if stat.S_ISDIR(st.st_mode) else "file"}
    target = os.readlink(link)
    alt = os.path.join(ALTERNATIVES_DIR, logic.group_of(link))
    seen = {"kind": "link", "target": target, "via_alternatives": os.path.normpath(target) == alt}
    if seen["via_alternatives"] and os.path.islink(alt):
        seen["alternatives_target"] = os.readlink(alt)
    return seen


def read_record(path):
    try:
        with open(path, encoding="utf-8") as fh:
            record = json.load(fh)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ReadError("%s cannot be read (%s): fix or remove it (it is written again from the links as they are)" % (path, exc)) from exc
    if not isinstance(record, dict) or not isinstance(record.get("links"), dict):
        raise ReadError("%s is not a record of the cuda links (no 'links' map): fix or remove it" % path)
    return record


def write_record(path, links):
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    files.write_atomic(path, (json.dumps(logic.record_of(links, now), indent=2, sort_keys=True) + "\n").encode("utf-8"))


def gather(run, root, record_path, wanted, default):
    """What the plan decides from. run(argv) -> commands.CommandResult. Raises ReadError."""
    root = os.path.normpath(root)
    record = read_record(record_path)
    links = [os.path.join(root, "cuda")]
    with contextlib.suppress(FileNotFoundError):
        links += [os.path.join(root, n) for n in sorted(os.listdir(root)) if n.startswith("cuda-") and n[5:].isdigit()]
    links = sorted(set(links) | set((record or {}).get("links", {})))
    try:
        observed = {link: observe(link) for link in links}
    except logic.CudaLinkError as exc:  # a record naming a path that is no cuda link
        raise ReadError("%s: %s; fix or remove it" % (record_path, exc)) from exc

    groups = {}
    for link in links:
        group = logic.group_of(link)
        res = run(["update-alternatives", "--query", group])
        if res.os_error is not None or res.rc not in (0, 2):
            raise ReadError("update-alternatives --query %s failed" % group, res.as_dict())
        groups[group] = logic.parse_query(res.stdout, res.rc)

    candidates = {os.path.join(root, "cuda-" + v) for v in wanted}
    candidates |= {v for v in ((record or {}).get("links") or {}).values() if v}
    candidates |= {t for t in (logic.resolve(link, seen) for link, seen in observed.items()) if t}
    if default:
        candidates.add(os.path.join(root, "cuda-" + default))
    return {
        "root": root,
        "observed": observed,
        "groups": groups,
        "record": record,
        "exists": {path: os.path.isdir(path) for path in candidates},
    }


def assess(state, default, wanted, phase, verify=False):
    """(the plan, the result a caller returns) for the links gathered in state. phase: the plan's phase; verify: the
    caller only reads (nothing is recorded then). Raises ReadError for bad input."""
    try:
        result = logic.plan(state["root"], state["observed"], state["groups"], state["record"], default, wanted, state["exists"], phase)
    except logic.CudaLinkError as exc:
        raise ReadError(str(exc)) from exc
    main_link = os.path.join(state["root"], "cuda")
    kept_path = result["keep"].get(main_link)
    out = {
        "keep": result["keep"],
        "kept": {"path": kept_path, "version": logic.toolkit_version(kept_path)} if kept_path and main_link not in result["pending"] else None,
        "moved": result["moved"],
        "actions": result["actions"],
        "recorded": bool(result["record"]) and not verify,
        "lines": logic.describe(result),
        "created": result["created"],
        "pending": result["pending"],
    }
    before = {link: logic.resolve(link, seen) for link, seen in state["observed"].items()}
    out["diff"] = {"before": json.dumps(before, indent=2, sort_keys=True) + "\n", "after": json.dumps(result["keep"], indent=2, sort_keys=True) + "\n"}
    return result, out


def read(run, root, record_path, wanted, default):
    """What a pin before any install would do, without doing it: the cuda_link result of phase=before, with
    `refusals` and `needed` (true when the pin has anything to do or say: actions, a record to write, a refusal, an
    error reading the links). Never raises: an error is `error`, and the pin run reports it."""
    try:
        result, out = assess(gather(run, root, record_path, wanted, default), default, wanted, "before")
    except ReadError as exc:
        return {"needed": True, "error": exc.msg, "actions": [], "recorded": False, "pending": [], "refusals": [], "lines": [], "verify_refusal": ""}
    out.pop("diff")
    out.update(refusals=result["refusals"], error=None, verify_refusal=verify_refusal(result["moved"]))
    out["needed"] = bool(out["actions"] or out["recorded"] or out["refusals"])
    return out


def verify_refusal(moved):
    """Why a read-only check fails: the links found away from their recorded toolkit ('' when none is)."""
    if not moved:
        return ""
    where = ", ".join("%s -> %s (recorded: %s)" % (m["link"], m["now"] or "nothing", m["recorded"]) for m in moved)
    return "moved behind the role's back: %s; a run without --tags verify puts it back" % where
