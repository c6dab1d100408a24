# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who answers on a port: the process that holds its listening socket, and whether it is the unit's.

An answer on the service's port counts for the unit only when the listening socket belongs to a process in the unit's
cgroup: a server started by hand (an old manual SGLang) answers the same /health. Read from /proc, as `ss -ltnp`
does: the listening sockets of /proc/net/tcp and tcp6, then the process whose file descriptors hold one of them."""

from __future__ import annotations

import ipaddress
import os
import pwd
import socket
import sys
import urllib.parse

from ansible_collections.blackwell.inference.plugins.module_utils.service import health as service_health

LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's st column


def _address(hexaddr):
    """The IP address of one /proc/net/tcp or tcp6 local_address' address part: 32-bit words in the host's byte order."""
    raw = bytes.fromhex(hexaddr)
    if sys.byteorder == "little":
        raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return ipaddress.ip_address(raw)


def listeners(table, port):
    """[(address, inode)] of the sockets listening on `port` in one /proc/net/tcp or tcp6 text."""
    out = []
    for line in (table or "").splitlines()[1:]:
        fields = line.split()
        if len(fields) < 10 or fields[3] != LISTEN:
            continue
        hexaddr, _sep, hexport = fields[1].rpartition(":")
        try:
            if int(hexport, 16) == int(port):
                out.append((_address(hexaddr), fields[9]))
        except ValueError:
            continue
    return out


def listening_inodes(table, port):
    """The inodes of the sockets listening on `port` in one /proc/net/tcp or tcp6 text."""
    return {inode for _addr, inode in listeners(table, port)}


def reached(found, host):
    """The inodes a connection to `host` (an IP address, the health check's) reaches among `found` ([(address, inode)]
    of tcp and tcp6): the kernel takes the listener bound to that very address over a wildcard one, and an IPv4
    socket over an IPv6 one that also takes IPv4 (`::`, or `::ffff:a.b.c.d`). With no host, every listener."""
    if not host:
        return {inode for _addr, inode in found}
    try:
        target = ipaddress.ip_address(str(host).strip("[]"))
    except ValueError:
        return {inode for _addr, inode in found}
    v4 = target.version == 4
    tiers = [
        lambda a: a == target,
        lambda a: v4 and a.version == 6 and a.ipv4_mapped == target,
        lambda a: a.is_unspecified and a.version == target.version,
        lambda a: v4 and a.version == 6 and a.is_unspecified,
    ]
    for tier in tiers:
        hit = {inode for addr, inode in found if tier(addr)}
        if hit:
            return hit
    return set()


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
    return verdict((owners_of or owners)(port, host=_host_address(parts.hostname, port)), props.get("ControlGroup"), props.get("MainPID"), fresh)


def _host_address(hostname, port):
    """The IP address a client connects to for hostname (an IP literal as it is; a name as the resolver's first
    answer, which is what http.client tries first); None when it does not resolve."""
    if not hostname:
        return None
    try:
        return str(ipaddress.ip_address(hostname))
    except ValueError:
        pass
    try:
        return socket.getaddrinfo(hostname, port, type=socket.SOCK_STREAM)[0][4][0]
    except (OSError, IndexError):
        return None


def cmdline(pid, proc="/proc"):
    """A process's arguments as it was started (/proc/PID/cmdline); [] when there is none or it cannot be read."""
    try:
        with open(os.path.join(proc, str(int(pid)), "cmdline"), "rb") as fh:
            data = fh.read()
    except (OSError, TypeError, ValueError):
        return []
    return [w.decode("utf-8", "surrogateescape") for w in data.rstrip(b"\0").split(b"\0")] if data else []


def api_key_of(props):
    """The key the unit's running process was given (--api-key in its MainPID's command line, as systemd expanded it:
    health.api_key), or None. Read only once an answer is known to be that process's."""
    return service_health.api_key(cmdline((props or {}).get("MainPID") or 0))


def owners(port, proc="/proc", host=None):
    """The processes holding the listening socket a connection to host:port reaches (every listener on the port when
    no host is given): [{pid, user, command, cgroups}] (reads /proc as root). A file descriptor that closes while it
    is read is skipped, not its process."""
    found = []
    for name in ("tcp", "tcp6"):
        try:
            with open(os.path.join(proc, "net", name), encoding="ascii", errors="replace") as fh:
                found += listeners(fh.read(), port)
        except OSError:
            continue
    inodes = reached(found, host)
    if not inodes:
        return []
    wanted = {"socket:[%s]" % i for i in inodes}
    out = []
    for pid in sorted((d for d in os.listdir(proc) if d.isdigit()), key=int):
        if _holds(os.path.join(proc, pid, "fd"), wanted):
            out.append(_process(proc, pid))
    return out


def _holds(fd_dir, wanted):
    """Whether one of the process's file descriptors is one of the sockets wanted; a process that is gone or not ours
    to read holds none, an fd that closes between the listing and its readlink is skipped."""
    try:
        fds = os.listdir(fd_dir)
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(os.path.join(fd_dir, fd)) in wanted:
                return True
        except OSError:
            continue
    return False


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
