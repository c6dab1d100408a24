# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of blackwell.inference.host_lock: names this play (its ansible-playbook process), judges
whether a holder on this controller is gone, and waits for a live one."""

from __future__ import annotations

import datetime
import getpass
import os
import socket
import time

from ansible.plugins.action import ActionBase

from ansible_collections.blackwell.inference.plugins.module_utils.host import lock as host_lock

POLL = 2


def _pid_start(pid):
    try:
        with open("/proc/%d/stat" % int(pid)) as fh:
            return host_lock.proc_start_time(fh.read())
    except (OSError, TypeError, ValueError):
        return None


def _alive(pid, pid_start):
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, as another user
    except (TypeError, ValueError):
        return False
    return pid_start is None or _pid_start(pid) in (None, pid_start)


class ActionModule(ActionBase):
    _requires_connection = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        state = args.get("state", "acquired")
        timeout = int(args.get("timeout", 1800))
        # the worker's parent is the ansible-playbook process: the same for every task of this play
        play_pid = os.getppid()
        controller = socket.gethostname()
        since = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        play = self._task.get_play().get_name() if self._task.get_play() else ""
        args["owner"] = host_lock.record(controller, play_pid, _pid_start(play_pid), getpass.getuser(), since, play)
        start = time.monotonic()
        took_over = None
        while True:
            res = self._execute_module(module_name="blackwell.inference.host_lock", module_args=args, task_vars=task_vars)
            if res.get("failed") or state == "released" or res.get("acquired"):
                break
            holder = res.get("holder")
            if host_lock.stale(holder, controller, _alive):
                took_over = holder or {}
                args["take_over"] = took_over
                continue
            args.pop("take_over", None)
            if time.monotonic() - start >= timeout:
                res = {
                    "failed": True,
                    "acquired": False,
                    "holder": holder,
                    "msg": "%s is being provisioned by another play: %s. Waited %d s (blackwell_inference_lock_timeout). "
                    "If that play is gone, remove %s on the host."
                    % (task_vars.get("inventory_hostname"), host_lock.describe(holder), timeout, args.get("path", host_lock.DEFAULT_PATH)),
                }
                break
            time.sleep(POLL)
        res["waited"] = round(time.monotonic() - start, 1)
        if state == "acquired":
            res["took_over"] = took_over
        res["changed"] = False
        result.update(res)
        return result
