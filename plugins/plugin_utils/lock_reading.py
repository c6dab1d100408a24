# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A probe's controller side: the reading site.yml's lock made of the host (host_lock's `read`) stands for the probe's
own when it was made with exactly the options the probe is given and did not fail; the probe's task then returns it
and reads nothing (no call to the host)."""

from __future__ import annotations

# what host_lock adds to a reading; not part of the probe's own result
LOCK_KEYS = ("options", "failed", "msg")


def stands(reading, options):
    """Whether the lock's reading (None when there is none) stands for a probe given these options."""
    return isinstance(reading, dict) and bool(reading) and reading.get("failed") is False and reading.get("options") == options


def unchanged_since(changed):
    """Whether nothing changed the host since the lock read it: changed maps each step that ran since (e.g. a role) to
    whether it changed the host; None (unknown: the step's result is not there) counts as changed. No map at all
    (None) sets no condition."""
    if changed is None:
        return True
    return all(value is not None and not value for value in changed.values())


def as_result(reading):
    """The reading as the probe's result: what the probe returns, without what the lock added."""
    return dict({k: v for k, v in reading.items() if k not in LOCK_KEYS}, changed=False, read_under_lock=True)


def run(action, module, options, task_vars):
    """An action plugin's run(): the lock's reading (the task's `reading` argument) when it stands for `options` (the
    probe's options as the lock was given them), else the module's answer. Returns the result's keys."""
    args = dict(action._task.args)
    reading = args.pop("reading", None)
    if stands(reading, options(args)):
        return as_result(reading)
    return dict(action._execute_module(module_name=module, module_args=args, task_vars=task_vars), read_under_lock=False)
