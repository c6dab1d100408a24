# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: progress
type: aggregate
version_added: 0.3.0
short_description: A heartbeat while a step takes minutes (apt install, venv build, JIT warm-up, health wait)
description:
  - When a task starts that says what it waits for (a task variable named C(*_waits_for), as the roles' long steps
    do), says so up front - for example that the venv build waits for pip downloading and installing the pinned
    packages.
  - While any task of a host has not answered, prints every O(interval) seconds which host is still running which
    task and for how long, so a step of minutes does not look like a hang.
  - Prints nothing for an ad-hoc C(ansible) command or under a JSON stdout callback (whose output must stay JSON).
  - Enable it in C(ansible.cfg) with C(callbacks_enabled = blackwell.inference.progress).
requirements:
  - enabled in C(callbacks_enabled)
extends_documentation_fragment:
  - blackwell.inference.stdout_callback
options:
  interval:
    description: Seconds between two lines about a task still running on a host; C(0) turns the heartbeat off.
    type: int
    default: 30
    env:
      - name: BLACKWELL_INFERENCE_HEARTBEAT
    ini:
      - section: blackwell_inference
        key: heartbeat
"""

import threading
import time

from ansible.plugins.callback import CallbackBase

from ansible_collections.blackwell.inference.plugins.module_utils.fleet import progress
from ansible_collections.blackwell.inference.plugins.module_utils.fleet import summary as fleet_summary


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "blackwell.inference.progress"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._lock = threading.Lock()
        self._running = {}  # host -> (task name, started, what it waits for)
        self._beats = {}
        self._stop = threading.Event()
        self._thread = None
        self._playbook = None

    def _interval(self):
        try:
            return int(self.get_option("interval"))
        except (KeyError, TypeError, ValueError):
            return 30

    def v2_playbook_on_start(self, playbook):
        self._playbook = getattr(playbook, "_file_name", None)
        if fleet_summary.quiet(self._playbook, self.get_option("stdout_callback")) or self._interval() <= 0:
            return
        self._thread = threading.Thread(target=self._tick, name="blackwell-inference-progress", daemon=True)
        self._thread.start()

    def _tick(self):
        interval = self._interval()
        while not self._stop.wait(1.0):
            with self._lock:
                lines = progress.due(self._running, self._beats, time.monotonic(), interval)
            for line in lines:
                self._display.display(line)

    def _task_start(self, task):
        note = progress.waits_for(_task_vars(task))
        if note and self._thread is not None:
            self._display.display(progress.announce(task.get_name(), note, self._interval()))

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._task_start(task)

    def v2_playbook_on_handler_task_start(self, task):
        self._task_start(task)

    def v2_runner_on_start(self, host, task):
        with self._lock:
            self._running[host.get_name()] = (task.get_name(), time.monotonic(), progress.waits_for(_task_vars(task)))
            self._beats.pop(host.get_name(), None)

    def _done(self, result):
        with self._lock:
            host = result.host.get_name()
            self._running.pop(host, None)
            self._beats.pop(host, None)

    def v2_runner_on_ok(self, result):
        self._done(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._done(result)

    def v2_runner_on_skipped(self, result):
        self._done(result)

    def v2_runner_on_unreachable(self, result):
        self._done(result)

    def v2_playbook_on_stats(self, stats):
        self._stop.set()
        with self._lock:
            self._running.clear()


def _task_vars(task):
    """The task's own variables and those of the import_tasks it came from (a shared task file imported with its note)."""
    return task.get_vars() if hasattr(task, "get_vars") else getattr(task, "vars", None)
