# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A heartbeat for steps that take minutes: which host is still running which task, and for how long.

The progress callback keeps, per host, the task it started and when; this module decides which lines are due."""

from __future__ import annotations

# a task says what it waits for in a task variable whose name ends with this (e.g. __cuda_toolkit_waits_for)
WAITS_FOR_SUFFIX = "_waits_for"


def elapsed(seconds):
    """45s, 2m05s, 1h02m."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return "%ds" % seconds
    if seconds < 3600:
        return "%dm%02ds" % divmod(seconds, 60)
    return "%dh%02dm" % (seconds // 3600, seconds % 3600 // 60)


def waits_for(task_vars):
    """What a task waits for, from its own variables (the first one named *_waits_for), or ''."""
    for name in sorted(task_vars or {}):
        value = task_vars[name]
        if name.endswith(WAITS_FOR_SUFFIX) and isinstance(value, str) and value.strip() and "{{" not in value:
            return value.strip()
    return ""


def announce(task_name, note, interval):
    """The line said when a task that waits on something long starts."""
    beat = " (a line every %s while it runs)" % elapsed(interval) if interval > 0 else ""
    return "  %s: waits for %s%s" % (task_name, note, beat)


def due(running, beats, now, interval):
    """Heartbeat lines due at `now`.

    running: {host: (task_name, started, note)} for hosts whose task has not answered yet.
    beats: {host: how many lines were already said for its current task}; updated in place.
    A host gets its n-th line once its task has run n * interval seconds; hosts in the order given."""
    if interval <= 0:
        return []
    lines = []
    for host, (task_name, started, note) in running.items():
        ran = now - started
        count = int(ran // interval)
        if count > beats.get(host, 0):
            beats[host] = count
            suffix = " - %s" % note if note else ""
            lines.append("  still running on %s: %s (%s)%s" % (host, task_name, elapsed(ran), suffix))
    return lines
