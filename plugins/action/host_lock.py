# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of blackwell.inference.host_lock: names this play (this controller's machine-id and boot id, its
ansible-playbook process), judges whether a holder is gone (module_utils/host/lock.py stale: by its process on this
controller, by its heartbeat on another), and waits for a live one.

The heartbeat is refreshed by the holding play's own calls only (the acquire, site.yml's state=refreshed between the
venv and the service roles, the service role's before each validation); nobody refreshes it during a minute-long step,
which is why the bound (stale_after) is longer than the longest stretch between two of those calls at the configured
timeouts (lock.py longest_stretch)."""

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


def _read_id(path):
    try:
        with open(path) as fh:
            return fh.read().strip()
    except OSError:
        return ""


def controller_identity():
    """(machine-id, boot id, PID namespace) of this controller; a machine without /etc/machine-id falls back to dbus's
    copy, then to its host name (named as such). The PID namespace (pid:[inode]) tells containers that share a baked
    machine-id apart: a pid of another namespace is never judged by this one's processes."""
    machine_id = _read_id("/etc/machine-id") or _read_id("/var/lib/dbus/machine-id") or "hostname:" + socket.gethostname()
    try:
        pid_ns = os.readlink("/proc/self/ns/pid")
    except OSError:
        pid_ns = ""
    return machine_id, _read_id("/proc/sys/kernel/random/boot_id"), pid_ns


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
        try:
            timeouts = {k: v for k, v in (args.get("timeouts") or {}).items() if v is not None and k in ("apt", "venv_build", "smoke", "health")}
            bound = host_lock.stale_bound(args.get("stale_after"), host_lock.longest_stretch(**timeouts))
        except ValueError as exc:
            result.update(failed=True, changed=False, msg=str(exc))
            return result
        args["stale_after"] = bound
        # the worker's parent is the ansible-playbook process: the same for every task of this play
        play_pid = os.getppid()
        controller = socket.gethostname()
        machine_id, boot_id, pid_ns = controller_identity()
        since = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        play = self._task.get_play().get_name() if self._task.get_play() else ""
        me = host_lock.record(controller, play_pid, _pid_start(play_pid), getpass.getuser(), since, play, machine_id, boot_id, pid_ns)
        args["owner"] = me
        start = time.monotonic()
        took_over = None
        while True:
            res = self._execute_module(module_name="blackwell.inference.host_lock", module_args=args, task_vars=task_vars)
            if res.get("failed") or state != "acquired" or res.get("acquired"):
                break
            holder = res.get("holder")
            age = host_lock.BOOTED_SINCE if res.get("booted_since") else res.get("age")
            why = host_lock.stale(holder, me, _alive, age, bound)
            if why:
                took_over = dict(holder or {}, why=why)
                args["take_over"] = holder or {}
                continue
            args.pop("take_over", None)
            if time.monotonic() - start >= timeout:
                res = {
                    "failed": True,
                    "acquired": False,
                    "holder": holder,
                    "msg": "%s is being provisioned by another play: %s, heartbeat %s s ago. Waited %d s (blackwell_inference_lock_timeout);"
                    " a holder on another controller is taken over once its heartbeat is older than %d s (blackwell_inference_lock_stale_after)."
                    " If that play is gone, remove %s on the host."
                    % (
                        task_vars.get("inventory_hostname"),
                        host_lock.describe(holder),
                        res.get("age"),
                        timeout,
                        bound,
                        args.get("path", host_lock.DEFAULT_PATH),
                    ),
                }
                break
            time.sleep(POLL)
        res["waited"] = round(time.monotonic() - start, 1)
        if state == "acquired":
            res["took_over"] = took_over
        res["changed"] = False
        result.update(res)
        return result
