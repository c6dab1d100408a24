"""The lab host itself: real systemd, sshd and apt, offline, and its test doubles answering like the real tools."""

import base64
import json
import os
import re
import shlex
import socket
import subprocess

from ..conftest import MIRROR, NVIDIA_SMI_QUERY, ROOT, playbook_command


def test_systemd_is_pid_1(host):
    assert host.process.get(pid=1).comm == "systemd"
    assert host.run("systemctl is-system-running").stdout.strip() in ("running", "degraded")


def test_sshd_answers(host):
    assert host.service("ssh").is_running
    assert host.socket("tcp://0.0.0.0:22").is_listening


def test_offline(host):
    assert host.run("ip -4 route show default").stdout.strip() == ""
    assert host.file("/etc/apt/sources.list").content_string.strip() == ""


def test_nvidia_smi_double_query_format(run):
    lines = run(NVIDIA_SMI_QUERY).splitlines()
    assert len(lines) == 8
    for i, line in enumerate(lines):
        fields = line.split(", ")
        assert fields[0] == str(i) and fields[1] == "NVIDIA RTX PRO 6000 Blackwell Server Edition"
        assert re.match(r"^GPU-[0-9a-f-]{36}$", fields[2]) and fields[3:] == ["12.0", "580.95.05", "97887"]


def test_nvidia_smi_double_other_forms(host, run):
    header = run("nvidia-smi --query-gpu=index,memory.total --format=csv").splitlines()
    assert header[0] == "index, memory.total [MiB]" and header[1] == "0, 97887 MiB"
    assert len(run("nvidia-smi -L").splitlines()) == 8
    q = run("nvidia-smi -q")
    assert "Driver Version                            : 580.95.05" in q and "CUDA Version                              : 13.0" in q
    bad = host.run("nvidia-smi --query-gpu=bogus --format=csv")
    assert bad.rc == 2 and 'Field "bogus" is not a valid field to query.' in bad.stdout


def test_nvcc_12_8_double_banner(host, run):
    assert "Cuda compilation tools, release 12.8, V12.8.93" in run("/usr/local/cuda-12.8/bin/nvcc --version")
    assert host.run("/usr/local/cuda-12.8/bin/nvcc -c x.cu").rc == 1  # a banner double, says so on stderr


def test_apt_sees_the_signed_lab_mirror(host, run):
    source = host.file("/etc/apt/sources.list.d/cuda-debian12-x86_64.list").content_string
    assert "signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg" in source and "trusted=yes" not in source
    policy = run("apt-cache policy cuda-toolkit-13-0 cuda-nvcc-13-0")
    assert "file:%s/debian12/x86_64" % MIRROR in policy
    # NVIDIA's 13.0.2 and the lab's second patch release 13.0.3 (the same binaries repacked, for the pin-bump test)
    for version in ("13.0.2-1", "13.0.3-1", "13.0.88-1", "13.0.88-2"):
        assert re.search(r"^\s+(\*\*\* )?%s 500$" % re.escape(version), policy, re.M), policy
    assert "Hash: SHA256" in host.file(MIRROR + "/debian12/x86_64/InRelease").content_string


def test_lab_nvcc_13_0_is_real_and_compiles_sm_120a(run):
    """Unpacked into a scratch dir (nothing installed): NVIDIA's real nvcc from the mirror builds a cubin."""
    script = (
        "set -e; d=$(mktemp -d); cd $d; "
        "apt-get download -qq cuda-nvcc-13-0 cuda-crt-13-0 cuda-nvvm-13-0 cuda-cudart-dev-13-0 cuda-cccl-13-0 "
        "libcurand-dev-13-0 2>/dev/null; for f in *.deb; do dpkg -x $f root; done; "
        "printf '#include <curand_kernel.h>\\n__global__ void saxpy(int n, float a, const float *x, float *y)"
        "{int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i];}\\n' > k.cu; "
        "root/usr/local/cuda-13.0/bin/nvcc --version | grep -o 'release 13.0, V13.0.88'; "
        "root/usr/local/cuda-13.0/bin/nvcc -arch=sm_120a -cubin -o k.cubin k.cu; "
        "od -An -c -N4 k.cubin | tr -d ' '; cd /; rm -rf $d"
    )
    out = run("bash -c %s" % shlex.quote(script))
    assert "release 13.0, V13.0.88" in out and "177ELF" in out.replace("\\", "")


def test_installing_13_0_in_auto_mode_flips_usr_local_cuda(host, run):
    """The trap the cuda_toolkit role must avoid, reproduced: 13.0's config-common takes /usr/local/cuda."""
    assert host.file("/usr/local/cuda").linked_to == "/usr/local/cuda-12.8"
    try:
        # just a 13.0 runtime component: it pulls 13.0's config-common packages
        run("DEBIAN_FRONTEND=noninteractive apt-get install -qq -y cuda-cudart-13-0")
        assert host.file("/usr/local/cuda").linked_to == "/usr/local/cuda-13.0"
        query = run("update-alternatives --query cuda")
        assert "Status: auto" in query and "Priority: 130" in query and "Priority: 128" in query
        assert host.file("/usr/local/cuda-13").linked_to == "/usr/local/cuda-13.0"
    finally:
        run("DEBIAN_FRONTEND=noninteractive apt-get purge -qq -y cuda-cudart-13-0 cuda-toolkit-13-0-config-common cuda-toolkit-13-config-common")
    assert host.file("/usr/local/cuda").linked_to == "/usr/local/cuda-12.8"


# -- the host lock meets another controller (issue 47 item 6) ----------------------------------------------------------

LOCK_PLAY = """---
- name: Take the host's lock and give it back
  hosts: ct200
  gather_facts: false
  tasks:
    - name: Take the lock
      blackwell.inference.host_lock:
        timeout: 3
      register: lock
    - name: Say whose lock was taken over
      ansible.builtin.debug:
        msg: "took over: {{ lock.took_over.machine_id | default('nobody') }} ({{ lock.took_over.why | default('') }})"
    - name: Give it back
      blackwell.inference.host_lock:
        state: released
"""
LOCK = "/run/blackwell-inference/play.lock"
# TEST DOUBLE: a play on a second controller - another machine-id, but this controller's host name (a cloned VM) and a
# pid that is not alive here (the old rule, host name and pid, judged that live play dead and took its lock)
OTHER_CONTROLLER = "7e57d0b1e0000000000000000000000b"
DEAD_PID = 4194301


def other_controllers_lock(run, heartbeat_age):
    """That play's record in the lock, its heartbeat heartbeat_age seconds ago by the host's clock."""
    record = {
        "controller": socket.gethostname(),
        "machine_id": OTHER_CONTROLLER,
        "boot_id": "7e57d0b1-e000-4000-8000-00000000000b",
        "pid": DEAD_PID,
        "pid_start": 123,
        "user": "ops",
        "since": "2026-12-06T20:00:00Z",
        "play": "Provision Blackwell inference hosts",
        "heartbeat": int(run("date +%s")) - heartbeat_age,
    }
    data = base64.b64encode(json.dumps(record).encode()).decode()
    run("mkdir -p %s && echo %s | base64 -d > %s" % (os.path.dirname(LOCK), data, LOCK))


def lock_play(cmd, env):
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split())


def test_a_lock_of_another_controller_is_waited_for_while_its_heartbeat_is_fresh_and_taken_over_when_stale(run, tmp_path):
    play = tmp_path / "lock.yml"
    play.write_text(LOCK_PLAY)
    cmd, env = playbook_command(play=str(play))
    assert not os.path.exists("/proc/%d" % DEAD_PID)  # not alive on this controller
    other_controllers_lock(run, 30)  # a live play there: heartbeat 30 s ago
    rc, out = lock_play(cmd, env)
    holder = "ct200 is being provisioned by another play: ops@%s (machine-id %s) pid %d" % (socket.gethostname(), OTHER_CONTROLLER, DEAD_PID)
    assert rc != 0 and holder in out and "taken over once its heartbeat is older than 7200 s" in out, out[-3000:]
    assert json.loads(run("cat " + LOCK))["machine_id"] == OTHER_CONTROLLER  # left as it was
    other_controllers_lock(run, 7300)  # that controller stopped two hours ago (bound 7200 s)
    rc, out = lock_play(cmd, env)
    assert rc == 0 and "took over: %s (its controller's heartbeat is 73" % OTHER_CONTROLLER in out, out[-3000:]
    assert run("test -e %s && echo held || echo free" % LOCK).strip() == "free"  # taken over, then given back
