# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One play at a time per host: the lock record and the decisions about it (pure).

The record names the play that holds the lock: the controller (its machine-id and boot id; its host name only for
people), the ansible-playbook process (pid and its start time, so a reused pid is not mistaken for it), the user, when
it was taken and its heartbeat (the host's clock when the holder last called the lock). A play that holds the lock may
take it again (a second play of the same playbook), and each such call refreshes the heartbeat.

Who is stale: a holder on this controller (same machine-id) whose process is gone, or whose controller booted since;
a holder on another controller (another machine-id: two controllers may share a host name) when its heartbeat is older
than the bound. Any other holder is waited for.

Who refreshes the heartbeat: only the holding play's own host_lock calls - the acquire, and site.yml's refresh
between the venv and the service roles (when the toolkit or venv role changed the host: their minutes). During a
minute-long step (apt, the venv build, the JIT smoke, the health wait) nobody refreshes it, so the bound
(STALE_AFTER, blackwell_inference_lock_stale_after) must be longer than the longest stretch between two refreshes:
the toolkit and venv roles (apt within cuda_toolkit_apt_lock_timeout and its retries, the build within
sglang_venv_build_timeout 3600 s) or the service role with a failed rollout rolled back (smoke 1800 s + health 900
s, twice: 5400 s), at the defaults.
"""

from __future__ import annotations

import json

from ansible_collections.blackwell.inference.plugins.module_utils.common import commands

DEFAULT_PATH = "/run/blackwell-inference/play.lock"
# what makes a play this play; a record without machine_id (an older collection's) is never this play
IDENTITY = ("machine_id", "boot_id", "pid", "pid_start")
REQUIRED = ("controller", "pid", "pid_start")
# seconds a holder on another controller may go without a heartbeat: longer than the longest stretch between two
# refreshes (5400 s at the roles' defaults: see the module's docstring)
STALE_AFTER = 7200
LONGEST_STRETCH = 5400


def record(controller, pid, pid_start, user, since, play="", machine_id="", boot_id=""):
    return {
        "controller": controller,
        "machine_id": machine_id,
        "boot_id": boot_id,
        "pid": int(pid),
        "pid_start": pid_start,
        "user": user,
        "since": since,
        "play": play,
    }


def parse(text):
    """The record in a lock file; None for an empty or unreadable one (a writer killed mid-write)."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or not all(k in data for k in REQUIRED):
        return None
    return data


def same_play(a, b):
    return bool(a) and bool(b) and bool(a.get("machine_id")) and all(a.get(k) == b.get(k) for k in IDENTITY)


def stale_bound(stale_after):
    """The bound in seconds: stale_after as given, refused (ValueError, naming the variable) when it is not longer than
    the longest stretch between two heartbeats."""
    try:
        bound = int(stale_after)
    except (TypeError, ValueError):
        bound = 0
    if bound <= LONGEST_STRETCH:
        raise ValueError(
            "blackwell_inference_lock_stale_after must be an integer of seconds > %d, longer than the longest stretch between two"
            " heartbeats of a live play (got %r)" % (LONGEST_STRETCH, stale_after)
        )
    return bound


def stale(holder, me, alive, age, bound):
    """Whether a holder is gone (its lock may be taken over), and why ('' when it is not).

    holder: the record read (None: unreadable, a writer killed mid-write); me: this play's record; alive(pid, pid_start):
    whether that process lives on this controller; age: seconds since the holder's heartbeat by the host's clock (None
    when unknown); bound: stale_bound(). A holder on this controller (same machine-id) is judged by its process, or gone
    when that controller booted since; one on another controller (or an older record without machine-id) by its
    heartbeat."""
    if holder is None:
        return "an unreadable lock record"
    if holder.get("machine_id") and holder.get("machine_id") == me.get("machine_id"):
        if holder.get("boot_id") != me.get("boot_id"):
            return "its controller (this one) booted since"
        if not alive(holder.get("pid"), holder.get("pid_start")):
            return "its process is gone from this controller"
        return ""
    if age is not None and age > bound:
        return "its controller's heartbeat is %d s old (bound %d s)" % (age, bound)
    return ""


def describe(holder):
    if holder is None:
        return "an unreadable lock record"
    return "%s@%s (machine-id %s) pid %s since %s%s" % (
        holder.get("user", "?"),
        holder.get("controller", "?"),
        holder.get("machine_id") or "?",
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
