# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who answers on a port: the process that holds its listening socket, and whether it is the unit's.

An answer on the service's port counts for the unit only when the listening socket belongs to a process in the unit's
cgroup: a server started by hand (an old manual SGLang) answers the same /health. Read from /proc, as `ss -ltnp`
does: the listening sockets of /proc/net/tcp and tcp6, then the process whose file descriptors hold one of them."""

from __future__ import annotations

import os
import pwd
import urllib.parse

LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's st column


def listening_inodes(table, port):
    """The inodes of the sockets listening on `port` in one /proc/net/tcp or tcp6 text."""
    inodes = set()
    for line in (table or "").splitlines()[1:]:
        fields = line.split()
        if len(fields) < 10 or fields[3] != LISTEN:
            continue
        _addr, _sep, hexport = fields[1].rpartition(":")
        try:
            if int(hexport, 16) == int(port):
                inodes.add(fields[9])
        except ValueError:
            continue
    return inodes


def cgroups(text):
    """The cgroup paths of one /proc/PID/cgroup text (every hierarchy's: unified '0::/x', or v1 'N:name=systemd:/x')."""
    out = []
    for line in (text or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and parts[2]:
            out.append(parts[2])
    return out


def in_cgroup(paths, control_group):
    """Whether a process with these cgroup paths is in the unit's ControlGroup (or below it)."""
    cg = (control_group or "").rstrip("/")
    return bool(cg) and any(p == cg or p.startswith(cg + "/") for p in paths)


def verdict(owners, control_group, main_pid=None, fresh=None):
    """(ok, reason) of the listeners on the port for the unit: ok when one of them is in the unit's cgroup; with
    `fresh` (this run restarted the unit: {'invocation_before': id, 'invocation': id now}) the unit must also run a new
    invocation. owners: [{pid, user, command, cgroups}]. The reason names the other process when there is one."""
    if fresh and fresh.get("invocation_before") and fresh.get("invocation") == fresh.get("invocation_before"):
        return False, "the unit was not started again after this run's restart (InvocationID %s)" % fresh.get("invocation")
    mine = [o for o in owners if in_cgroup(o.get("cgroups") or [], control_group)]
    if mine:
        return True, None
    if not owners:
        return False, "no process holds the port's listening socket (the answer came from elsewhere)"
    other = owners[0]
    return False, "the port is held by pid %s (user %s: %s), not by a process of the unit (MainPID %s)" % (
        other.get("pid"),
        other.get("user") or "?",
        other.get("command") or "?",
        main_pid or "?",
    )


def answer_verdict(url, props, invocation_before=None, owners_of=None):
    """(ok, why) of an answer on url's port for the unit whose state is props (systemctl show: ControlGroup, MainPID,
    InvocationID): verdict() over the processes holding the port's listening socket; with invocation_before (the unit's
    InvocationID before this run restarted it) the answer must come from a new start. The play's health check and the
    ready unit after a boot both judge an answer with it."""
    parts = urllib.parse.urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    fresh = {"invocation_before": invocation_before, "invocation": props.get("InvocationID")} if invocation_before else None
    return verdict((owners_of or owners)(port), props.get("ControlGroup"), props.get("MainPID"), fresh)


def owners(port, proc="/proc"):
    """The processes holding a listening socket on `port`: [{pid, user, command, cgroups}] (reads /proc as root)."""
    inodes = set()
    for name in ("tcp", "tcp6"):
        try:
            with open(os.path.join(proc, "net", name), encoding="ascii", errors="replace") as fh:
                inodes |= listening_inodes(fh.read(), port)
        except OSError:
            continue
    if not inodes:
        return []
    wanted = {"socket:[%s]" % i for i in inodes}
    found = []
    for pid in sorted((d for d in os.listdir(proc) if d.isdigit()), key=int):
        fd_dir = os.path.join(proc, pid, "fd")
        try:
            held = any(os.readlink(os.path.join(fd_dir, fd)) in wanted for fd in os.listdir(fd_dir))
        except OSError:  # gone, or not ours to read
            continue
        if held:
            found.append(_process(proc, pid))
    return found


def _process(proc, pid):
    def read(name):
        try:
            with open(os.path.join(proc, pid, name), "rb") as fh:
                return fh.read().decode("utf-8", "replace")
        except OSError:
            return ""

    uid = next((line.split()[1] for line in read("status").splitlines() if line.startswith("Uid:")), None)
    try:
        user = pwd.getpwuid(int(uid)).pw_name if uid is not None else None
    except (KeyError, ValueError):
        user = uid
    command = " ".join(read("cmdline").split("\0")).strip()[:200]
    return {"pid": int(pid), "user": user, "command": command, "cgroups": cgroups(read("cgroup"))}
