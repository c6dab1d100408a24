"""Who answers on the service's port (issue 45 item 3): the listening socket's process, and whether it is the unit's.
Tables of real /proc/net/tcp, tcp6 and /proc/PID/cgroup texts (Debian 12, systemd 252)."""

import ipaddress
import os

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.service import http as service_http
from ansible_collections.blackwell.inference.plugins.module_utils.service import socket_owner

TCP = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:7530 00000000:0000 0A 00000000:00000000 00:00000000 00000000 65534        0 4711 1 0000000000000000 100 0 0 10 0
   1: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1800 1 0000000000000000 100 0 0 10 0
   2: 0100007F:7530 0100007F:D4A2 01 00000000:00000000 00:00000000 00000000 65534        0 4799 1 0000000000000000 20 4 30 10 -1
"""
TCP6 = (
    "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    "   0: 00000000000000000000000000000000:7531 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 "
    "5120 1 0000000000000000 100 0 0 10 0\n"
)
UNIT_CG = "/system.slice/sglang-k26.service"
CGROUP_V1 = "12:pids:/system.slice/sglang-k26.service\n1:name=systemd:/system.slice/sglang-k26.service\n0::/system.slice/sglang-k26.service\n"
CGROUP_USER = "0::/user.slice/user-0.slice/session-3.scope\n"


def test_listening_sockets_by_port_only_in_listen_state():
    assert socket_owner.listening_inodes(TCP, 30000) == {"4711"}  # the established one on 30000 is a client's
    assert socket_owner.listening_inodes(TCP6, 30001) == {"5120"}
    assert socket_owner.listening_inodes(TCP, 30002) == set()


@pytest.mark.parametrize(
    ("owners", "fresh", "ok", "why"),
    [
        ([{"pid": 812, "user": "root", "command": "python", "cgroups": socket_owner.cgroups(CGROUP_V1)}], None, True, None),
        # a worker below the unit's cgroup (a sub-cgroup) is the unit's too
        ([{"pid": 9, "user": "root", "command": "w", "cgroups": ["/system.slice/sglang-k26.service/worker"]}], None, True, None),
        # a server started by hand as nobody, from a login session
        (
            [{"pid": 4242, "user": "nobody", "command": "python3 -m http.server 30000", "cgroups": socket_owner.cgroups(CGROUP_USER)}],
            None,
            False,
            "the port is held by pid 4242 (user nobody: python3 -m http.server 30000), not by a process of the unit (MainPID 812)",
        ),
        # a unit of a similar name is another unit
        ([{"pid": 7, "user": "root", "command": "x", "cgroups": ["/system.slice/sglang-k26.service-old"]}], None, False, None),
        ([], None, False, "no process holds the port's listening socket (the answer came from elsewhere)"),
        # after this run's restart, the same invocation answering is not the restarted one
        (
            [{"pid": 812, "user": "root", "command": "python", "cgroups": [UNIT_CG]}],
            {"invocation_before": "ab12", "invocation": "ab12"},
            False,
            "the unit was not started again after this run's restart (InvocationID ab12)",
        ),
        ([{"pid": 812, "user": "root", "command": "python", "cgroups": [UNIT_CG]}], {"invocation_before": "ab12", "invocation": "cd34"}, True, None),
    ],
)
def test_verdict_counts_only_the_units_own_process(owners, fresh, ok, why):
    got_ok, got_why = socket_owner.verdict(owners, UNIT_CG, "812", fresh)
    assert got_ok is ok
    if why:
        assert got_why == why
    assert socket_owner.verdict(owners, "", "812")[0] is False  # a unit without a cgroup (not running) owns nothing


def test_owners_reads_proc_like_ss(tmp_path):
    proc = tmp_path / "proc"
    (proc / "net").mkdir(parents=True)
    (proc / "net" / "tcp").write_text(TCP)
    (proc / "net" / "tcp6").write_text(TCP6)
    for pid, inode, cgroup, uid in (("812", "9999", CGROUP_V1, "0"), ("4242", "4711", CGROUP_USER, "65534")):
        fd = proc / pid / "fd"
        fd.mkdir(parents=True)
        os.symlink("socket:[%s]" % inode, fd / "3")
        os.symlink("/dev/null", fd / "0")
        (proc / pid / "cgroup").write_text(cgroup)
        (proc / pid / "status").write_text("Name:\tpython3\nUid:\t%s\t%s\t%s\t%s\n" % (uid, uid, uid, uid))
        (proc / pid / "cmdline").write_bytes(b"python3\0-m\0http.server\x0030000\0")
    got = socket_owner.owners(30000, str(proc))
    assert [(o["pid"], o["user"], o["command"]) for o in got] == [(4242, "nobody", "python3 -m http.server 30000")]
    assert socket_owner.owners(30005, str(proc)) == []
    # the same through the HTTP side: the port from the URL, the unit's state from systemctl show
    props = {"ControlGroup": UNIT_CG, "MainPID": "812", "InvocationID": "cd34"}
    ok, why = service_http.answer_owner("http://127.0.0.1:30000/health", props, owners=lambda port, host=None: socket_owner.owners(port, str(proc), host))
    assert ok is False and "pid 4242 (user nobody" in why


# the lab host's tables (Debian 12): SGLang bound to 127.0.0.2, and to :: (dual stack), a hand-started server on
# 127.0.0.1 and on 0.0.0.0; ports 30000 (7530)
TCP_BOTH = """  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:7530 00000000:0000 0A 00000000:00000000 00:00000000 00000000 65534        0 4711 1 0000000000000000 100 0 0 10 0
   1: 0200007F:7530 00000000:0000 0A 00000000:00000000 00:00000000 00000000   998        0 9999 1 0000000000000000 100 0 0 10 0
   2: 00000000:7530 00000000:0000 0A 00000000:00000000 00:00000000 00000000 65534        0 4712 1 0000000000000000 100 0 0 10 0
"""
TCP6_BOTH = (
    "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    "   0: 00000000000000000000000000000000:7530 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000   998        0 "
    "6000 1 0000000000000000 100 0 0 10 0\n"
    "   1: 00000000000000000000000001000000:7530 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000   998        0 "
    "6001 1 0000000000000000 100 0 0 10 0\n"
    "   2: 0000000000000000FFFF00000100007F:7530 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000 998 0 "
    "6002 1 0000000000000000 100 0 0 10 0\n"
)


def test_listeners_read_their_addresses():
    got = socket_owner.listeners(TCP_BOTH, 30000) + socket_owner.listeners(TCP6_BOTH, 30000)
    mapped = ipaddress.ip_address("::ffff:127.0.0.1")
    assert got == [
        (ipaddress.ip_address(a), i)
        for a, i in (("127.0.0.1", "4711"), ("127.0.0.2", "9999"), ("0.0.0.0", "4712"), ("::", "6000"), ("::1", "6001"))  # noqa: S104
    ] + [(mapped, "6002")]


@pytest.mark.parametrize(
    ("tcp", "tcp6", "host", "inodes"),
    [
        # issue 57 item 9: the unit on 127.0.0.2 and another process on 127.0.0.1; the check asks 127.0.0.1
        (TCP_BOTH, "", "127.0.0.1", {"4711"}),
        (TCP_BOTH, "", "127.0.0.2", {"9999"}),
        (TCP_BOTH.replace("0100007F:7530", "0300007F:7530"), "", "127.0.0.1", {"4712"}),  # the wildcard takes it
        # the unit on :: (dual stack) and another process on 127.0.0.1: 127.0.0.1 is the other's
        (
            TCP_BOTH.splitlines()[0] + "\n" + TCP_BOTH.splitlines()[1] + "\n",
            TCP6_BOTH.splitlines()[0] + "\n" + TCP6_BOTH.splitlines()[1] + "\n",
            "127.0.0.1",
            {"4711"},
        ),
        # only the dual-stack one: it takes IPv4 too
        ("", TCP6_BOTH.splitlines()[0] + "\n" + TCP6_BOTH.splitlines()[1] + "\n", "127.0.0.1", {"6000"}),
        ("", TCP6_BOTH, "127.0.0.1", {"6002"}),  # a v4-mapped bind is more specific than ::
        ("", TCP6_BOTH, "::1", {"6001"}),
        (TCP_BOTH, "", "::1", set()),  # IPv4 listeners never take an IPv6 connection
        (TCP_BOTH, TCP6_BOTH, None, {"4711", "9999", "4712", "6000", "6001", "6002"}),  # no host: every listener
    ],
)
def test_the_listener_a_connection_to_the_checks_address_reaches(tcp, tcp6, host, inodes):
    found = socket_owner.listeners(tcp, 30000) + socket_owner.listeners(tcp6, 30000)
    assert socket_owner.reached(found, host) == inodes


def test_owners_asks_for_the_checks_address_and_skips_a_closing_fd(tmp_path, monkeypatch):
    proc = tmp_path / "proc"
    (proc / "net").mkdir(parents=True)
    (proc / "net" / "tcp").write_text(TCP_BOTH)
    (proc / "net" / "tcp6").write_text("")
    for pid, inode, cgroup, uid in (("812", "9999", CGROUP_V1, "998"), ("4242", "4711", CGROUP_USER, "65534")):
        fd = proc / pid / "fd"
        fd.mkdir(parents=True)
        os.symlink("/dev/null", fd / "0")
        os.symlink("socket:[%s]" % inode, fd / "7")
        (proc / pid / "cgroup").write_text(cgroup)
        (proc / pid / "status").write_text("Name:\tpython3\nUid:\t%s\t%s\t%s\t%s\n" % (uid, uid, uid, uid))
        (proc / pid / "cmdline").write_bytes(b"python3\0srv\0")
    assert [o["pid"] for o in socket_owner.owners(30000, str(proc), "127.0.0.2")] == [812]
    assert [o["pid"] for o in socket_owner.owners(30000, str(proc), "127.0.0.1")] == [4242]
    # fd 0 of the unit's process closes between the listing and its readlink (issue 58 item 4): the process still holds
    real = os.readlink

    def closing(path):
        if path.endswith("/812/fd/0"):
            raise FileNotFoundError(path)
        return real(path)

    monkeypatch.setattr(socket_owner.os, "readlink", closing)
    assert [o["pid"] for o in socket_owner.owners(30000, str(proc), "127.0.0.2")] == [812]
    props = {"ControlGroup": UNIT_CG, "MainPID": "812", "InvocationID": "cd34"}
    ok, _why = service_http.answer_owner("http://127.0.0.2:30000/health", props, owners=lambda port, host=None: socket_owner.owners(port, str(proc), host))
    assert ok is True
    ok, why = service_http.answer_owner("http://127.0.0.1:30000/health", props, owners=lambda port, host=None: socket_owner.owners(port, str(proc), host))
    assert ok is False and "pid 4242 (user nobody" in why


def test_cmdline_of_a_process(tmp_path):
    (tmp_path / "812").mkdir()
    (tmp_path / "812" / "cmdline").write_bytes(b"/opt/v/bin/python\0-m\0sglang.launch_server\0--api-key\0sk-1\0")
    assert socket_owner.cmdline(812, str(tmp_path)) == ["/opt/v/bin/python", "-m", "sglang.launch_server", "--api-key", "sk-1"]
    assert socket_owner.cmdline("9", str(tmp_path)) == [] and socket_owner.cmdline(None, str(tmp_path)) == [] and socket_owner.cmdline("x", str(tmp_path)) == []
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "cmdline").write_bytes(b"")  # a zombie, or a kernel thread
    assert socket_owner.cmdline(7, str(tmp_path)) == []
