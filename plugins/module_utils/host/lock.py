# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One play at a time per host: the lock record and the decisions about it (pure).

The record names the play that holds the lock: the controller (its machine-id, boot id and PID namespace; its host
name only for people), the ansible-playbook process (pid and its start time, so a reused pid is not mistaken for it),
the user, when it was taken and its heartbeat. A play that holds the lock may take it again (a second play of the same
playbook), and each such call refreshes the heartbeat.

The heartbeat's age is told by the host's boot id and its boot-time clock (CLOCK_BOOTTIME: it never steps, and counts
a suspend), never by its wall clock, which an NTP step or an operator may move either way; a record of an older
collection has only the wall clock's heartbeat.

Who is stale: a holder on this controller - the same machine-id, boot id and PID namespace (execution-environment
containers may share a baked machine-id, and the kernel's boot id on one machine; a pid means something only in its own
namespace) - whose process is gone; any other holder when its heartbeat is older than the bound, or the host booted
since it. Any other holder is waited for. A controller that rebooted mid-play is one of those others: its lock goes
stale with its heartbeat (or is removed by hand, as the wait's message says), since another machine cloned with the
same machine-id would look the same.

Who refreshes the heartbeat: only the holding play's own host_lock calls - the acquire, site.yml's refresh between the
venv and the service roles, and the service role's before each service's validation (further services too). During a
minute-long step (apt, the venv build, the JIT smoke, the health wait) nobody refreshes it, so the bound
(blackwell_inference_lock_stale_after) must be longer than the longest stretch between two refreshes at the configured
timeouts (longest_stretch: the venv build, or one service's smoke and health wait with its rollback's); its default is
that stretch plus a margin.

Every change of the lock file (take, take over, renew, give back) is made under an flock of a guard file beside it,
after reading the record again there: two controllers that both judged a holder stale cannot both take it over.
"""

from __future__ import annotations

import json

from ansible_collections.blackwell.inference.plugins.module_utils.common import commands

DEFAULT_PATH = "/run/blackwell-inference/play.lock"
# what makes a play this play; a record without machine_id (an older collection's) is never this play
IDENTITY = ("machine_id", "boot_id", "pid_ns", "pid", "pid_start")
REQUIRED = ("controller", "pid", "pid_start")
# seconds a holder on another controller may go without a heartbeat: longer than the longest stretch between two
# refreshes (5400 s at the roles' default timeouts: see the module's docstring)
STALE_AFTER = 7200
LONGEST_STRETCH = 5400
# what the default bound adds to the longest stretch at the configured timeouts
MARGIN = 1800
# the heartbeat's age when the host booted since it: any bound is exceeded
BOOTED_SINCE = float("inf")


def record(controller, pid, pid_start, user, since, play="", machine_id="", boot_id="", pid_ns=""):
    return {
        "controller": controller,
        "machine_id": machine_id,
        "boot_id": boot_id,
        "pid_ns": pid_ns,
        "pid": int(pid),
        "pid_start": pid_start,
        "user": user,
        "since": since,
        "play": play,
    }


def heartbeat(host_boot_id, boottime, wall):
    """The heartbeat fields of a record written now: the wall clock (for people, and older readers), the host's boot id
    and its boot-time clock (what the age is told by)."""
    return {"heartbeat": int(wall), "beat_boot_id": host_boot_id, "beat_boottime": round(float(boottime), 3)}


def heartbeat_age(holder, host_boot_id, boottime, wall, file_mtime=None):
    """Seconds since the holder's heartbeat on this host: by the boot-time clock when the record has one from this boot;
    BOOTED_SINCE when it has one from another boot; an older record's by the wall clock (its heartbeat, else the file's
    time). None when nothing tells."""
    holder = holder or {}
    beat_boot, beat_clock = holder.get("beat_boot_id"), holder.get("beat_boottime")
    if beat_boot and _number(beat_clock):
        return BOOTED_SINCE if beat_boot != host_boot_id else max(0.0, float(boottime) - float(beat_clock))
    beat = holder.get("heartbeat")
    beat = beat if _number(beat) else file_mtime
    return None if beat is None else max(0.0, float(wall) - float(beat))


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def longest_stretch(venv_build=3600, smoke=1800, health=900, apt=0):
    """The longest stretch between two heartbeats of a live play at the configured timeouts: from the acquire to
    site.yml's refresh, the toolkit's apt lock wait and the venv build; or one service's smoke and health wait followed
    by its rollback's re-warm and health wait."""
    return max(int(apt or 0) + int(venv_build or 0), 2 * (int(smoke or 0) + int(health or 0)))


def default_bound(longest):
    """The bound when blackwell_inference_lock_stale_after is not set: the longest stretch plus MARGIN, at least
    STALE_AFTER."""
    return max(STALE_AFTER, int(longest) + MARGIN)


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


def stale_bound(stale_after, longest=LONGEST_STRETCH):
    """The bound in seconds: stale_after as given (None or '': default_bound(longest)), refused (ValueError, naming the
    variable) when it is not longer than `longest`, the longest stretch between two heartbeats at the configured
    timeouts (longest_stretch)."""
    longest = int(longest or LONGEST_STRETCH)
    if stale_after is None or stale_after == "":
        return default_bound(longest)
    try:
        bound = int(stale_after)
    except (TypeError, ValueError):
        bound = 0
    if bound <= longest:
        raise ValueError(
            "blackwell_inference_lock_stale_after must be an integer of seconds > %d, longer than the longest stretch between two"
            " heartbeats of a live play at the configured timeouts (got %r)" % (longest, stale_after)
        )
    return bound


def stale(holder, me, alive, age, bound):
    """Whether a holder is gone (its lock may be taken over), and why ('' when it is not).

    holder: the record read (None: unreadable, a writer killed mid-write); me: this play's record; alive(pid, pid_start):
    whether that process lives on this controller; age: heartbeat_age() (None when unknown); bound: stale_bound(). A
    holder on this controller (the same machine-id, boot id and PID namespace) is judged by its process; one on another
    controller, in another PID namespace (a container sharing the machine-id), after a reboot, or an older record
    without machine-id, by its heartbeat."""
    if holder is None:
        return "an unreadable lock record"
    if age == BOOTED_SINCE:
        return "the host booted since its heartbeat"
    # a pid means something only on the same kernel (boot id) and in the same PID namespace: a controller that shares
    # this one's machine-id on another machine or in another container, or this controller after a reboot, is judged
    # by its heartbeat, as any other
    if all(holder.get(k) and holder.get(k) == me.get(k) for k in ("machine_id", "boot_id")) and holder.get("pid_ns", "") == me.get("pid_ns", ""):
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
