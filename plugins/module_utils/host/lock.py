# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One play at a time per host: the lock record and the decisions about it (pure).

The record names the play that holds the lock: the controller's host name, the ansible-playbook process
(pid and its start time, so a reused pid is not mistaken for it), the user and when it was taken. A play
that holds the lock may take it again (a second play of the same playbook); a holder whose process is gone
from this controller is stale and may be replaced; any other holder is waited for.
"""

from __future__ import annotations

import json

from ansible_collections.blackwell.inference.plugins.module_utils.common import commands

DEFAULT_PATH = "/run/blackwell-inference/play.lock"
IDENTITY = ("controller", "pid", "pid_start")


def record(controller, pid, pid_start, user, since, play=""):
    return {"controller": controller, "pid": int(pid), "pid_start": pid_start, "user": user, "since": since, "play": play}


def parse(text):
    """The record in a lock file; None for an empty or unreadable one (a writer killed mid-write)."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or not all(k in data for k in IDENTITY):
        return None
    return data


def same_play(a, b):
    return bool(a) and bool(b) and all(a.get(k) == b.get(k) for k in IDENTITY)


def stale(holder, controller, alive):
    """Whether a holder is gone: unreadable, or its play ran on this controller and its process (pid and
    start time, as `alive(pid, pid_start)` says) no longer exists. A holder on another controller is never
    judged from here."""
    if holder is None:
        return True
    return holder.get("controller") == controller and not alive(holder.get("pid"), holder.get("pid_start"))


def describe(holder):
    if holder is None:
        return "an unreadable lock record"
    return "%s@%s pid %s since %s%s" % (
        holder.get("user", "?"),
        holder.get("controller", "?"),
        holder.get("pid", "?"),
        holder.get("since", "?"),
        " (play %r)" % holder["play"] if holder.get("play") else "",
    )


def proc_start_time(stat_text):
    """Field 22 of /proc/PID/stat (start time in clock ticks since boot), or None."""
    try:
        return int(stat_text.rsplit(")", 1)[1].split()[19])
    except (IndexError, ValueError):
        return None


def readings(asked, readers, lift=("toolkit",)):
    """What a play asked to read of the host under its lock (host_lock's read option): {name: reading} for each name
    asked with options, each reading what readers[name](options) returned, with the options it was made with and
    failed=False; a reader that raises gives {options, failed: True, msg} (the role then reads for itself and reports
    it). The readings are made side by side (a thread each: they wait on their commands, not on each other). The
    ansible_facts of the readings named in lift (the toolkit's) are returned apart, as the task's facts; any other
    reading keeps its own (the service's are those of its environment, for its role). Returns (readings, facts)."""
    waits = [(name, options, commands.aside(reader, options)) for name, reader in readers.items() if (options := (asked or {}).get(name)) is not None]
    out, facts = {}, {}
    for name, options, wait in waits:
        try:
            reading = dict(wait())
        except Exception as exc:  # the role reads for itself and reports what fails there
            msg = "the reading %s" % exc if isinstance(exc, commands.Unanswered) else getattr(exc, "msg", None) or str(exc)
            out[name] = {"options": options, "failed": True, "msg": msg}
            continue
        if name in lift:
            facts.update(reading.pop("ansible_facts", {}))
        out[name] = dict(reading, options=options, failed=False)
    return out, facts
