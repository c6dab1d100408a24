"""Security review on ct200: the role's own unit (unit mode) with a dedicated user and systemd hardening,
file modes, what the service user may write, and secrets kept out of the logs. A second service
(`sglang-unit`, port 30001, the lab's stand-in) is converged next to sglang-k26 and removed afterwards."""

import json
import os
import re
import subprocess
import sys

import pytest
import yaml

from ..conftest import INVENTORY, ROOT, SSH_CONFIG, lab_env, workspace

SECRET = "hf_security_review_0123456789abcdef"  # noqa: S105 - a made-up token the test looks for
VARS = {
    "sglang_service_mode": "unit",
    "sglang_service_name": "sglang-unit",
    "sglang_service_user": "sglang",
    "sglang_service_group": "sglang",
    "sglang_service_port": 30001,
    "sglang_service_cache_dir": "/var/cache/sglang-unit",
    "sglang_service_jit_build_log": "/var/cache/sglang-unit/jit-builds.jsonl",
    # this second service loads and warms FlashInfer's quantization module (a cold build of about a minute of CPU, as the service
    # user, in its own cache); sglang-k26 beside it keeps the sampling module
    "sglang_service_command": ["/opt/sglang/current/bin/python", "/usr/local/libexec/sglang-standin.py", "--port", "30001", "--module", "quantization"],
    "sglang_service_jit_warm": ["quantization"],
    "sglang_service_marker": "sglang_unit",
    "sglang_service_ready_without_launch": True,
    "sglang_service_health_timeout": 120,
    "sglang_service_secret_environment": {"HF_TOKEN": SECRET},
}


def converge(tmp_path, *args):
    play = tmp_path / "unit_mode.yml"
    play.write_text(
        yaml.safe_dump(
            [
                {
                    "name": "The role's own unit",
                    "hosts": "ct200",
                    "gather_facts": True,
                    "gather_subset": ["min"],
                    "vars": VARS,
                    "tasks": [{"ansible.builtin.import_role": {"name": "blackwell.inference.sglang_service"}}],
                }
            ]
        )
    )
    env = lab_env()
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", INVENTORY, str(play), *args]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def unit_service(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("unit-mode")
    rc, out = converge(tmp, "-vv")
    yield rc, out, tmp
    subprocess.run(
        [
            "ssh",
            "-F",
            SSH_CONFIG,
            "ct200",
            "systemctl disable --now sglang-unit.service sglang-unit-validate.service; rm -rf /etc/systemd/system/sglang-unit* "
            "/etc/blackwell-inference/sglang-unit* /etc/ansible/facts.d/sglang_unit.fact /var/cache/sglang-unit; systemctl daemon-reload",
        ],
        check=True,
    )


def test_unit_mode_converges_under_the_hardening(unit_service, run):
    rc, out, tmp = unit_service
    assert rc == 0, out[-5000:]
    health = json.loads(run("python3 -c \"import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:30001/health', timeout=5).read().decode())\""))
    assert health["cuda_version"] == "13.0" and health["target_archs"] == ["120a"]
    assert [load["name"] for load in health["loads"]] == ["quantization"]
    assert health["builds"] and not any(ld["compiled"] for ld in health["loads"])  # warmed as the service user, loaded as it
    pid = run("systemctl show -p MainPID --value sglang-unit.service").strip()
    assert run("stat -c %U /proc/" + pid).strip() == "sglang"
    props = run("systemctl show sglang-unit.service -p NoNewPrivileges -p ProtectSystem -p PrivateTmp -p DevicePolicy -p User")
    for expected in ("NoNewPrivileges=yes", "ProtectSystem=strict", "PrivateTmp=yes", "DevicePolicy=closed", "User=sglang"):
        assert expected in props
    # the sandbox (issue 47 item 8) on both units: the validator's JIT smoke and cold warm-up above ran inside it
    for unit in ("sglang-unit.service", "sglang-unit-validate.service"):
        props = run("systemctl show %s -p RestrictNamespaces -p ProtectProc -p SystemCallFilter" % unit)
        assert "RestrictNamespaces=yes\n" in props and "ProtectProc=invisible\n" in props, (unit, props)
        calls = set(re.search(r"^SystemCallFilter=(.*)$", props, re.M).group(1).split())
        assert {"ioctl", "execve", "setresuid", "sched_setaffinity"} <= calls and not {"mount", "ptrace", "init_module", "kexec_load"} & calls, unit
    # in the unit's /proc the service user sees only its own processes (outside it, every one: sshd's, root's)
    owners = "sh -c 'stat -c %U /proc/[0-9]* 2>/dev/null | sort -u'"
    inside = run("nsenter -t %s -m -S $(id -u sglang) -G $(id -g sglang) -- %s" % (pid, owners)).split()
    outside = run("runuser -u sglang -- " + owners).split()
    assert inside == ["sglang"] and "root" in outside, (inside, outside)
    rc, out = converge(tmp)
    assert rc == 0 and "changed=0" in out, out[-3000:]


def test_file_modes(unit_service, host, run):
    expected = {
        "/etc/systemd/system/sglang-unit.service": ("root", "root", 0o644),
        "/etc/systemd/system/sglang-unit.service.d/50-blackwell-inference.conf": ("root", "root", 0o644),
        "/etc/systemd/system/sglang-unit-validate.service": ("root", "root", 0o644),
        "/etc/blackwell-inference/sglang-unit.secrets.env": ("root", "root", 0o600),
        "/etc/ansible/facts.d/sglang_unit.fact": ("root", "root", 0o644),
        "/var/cache/sglang-unit": ("sglang", "sglang", 0o750),
        "/opt/sglang/venvs": ("root", "root", 0o755),
    }
    for path, (user, group, mode) in expected.items():
        f = host.file(path)
        assert (f.user, f.group, f.mode) == (user, group, mode), path
    ws = workspace(run, "/var/cache/sglang-unit")  # the venv's own FlashInfer workspace
    assert host.file(ws).user == "sglang" and host.file(ws + "/.cache/flashinfer").user == "sglang"  # the cache belongs to the service user
    assert host.file(ws + "/venv").linked_to == run("readlink -f /opt/sglang/current").strip()


@pytest.mark.parametrize(
    "path,writable",
    [
        ("/opt/sglang/current/lib", False),
        ("/opt/sglang/venvs", False),
        ("/usr/local/cuda-13.0/bin", False),
        ("/usr/local/cuda-13.0/targets/x86_64-linux/include", False),
        ("/etc/blackwell-inference", False),
        ("/var/cache/sglang-unit", True),
    ],
)
def test_the_service_user_writes_only_its_cache(unit_service, host, path, writable):
    res = host.run("runuser -u sglang -- touch %s/.write-test" % path)
    host.run("rm -f %s/.write-test" % path)
    assert (res.rc == 0) is writable, res.stderr
    assert host.run("runuser -u sglang -- cat /etc/blackwell-inference/sglang-unit.secrets.env").rc != 0


def test_secrets_stay_out_of_logs_units_and_facts(unit_service, run):
    _rc, out, _tmp = unit_service
    assert SECRET not in out  # a -vv run
    assert SECRET in run("cat /etc/blackwell-inference/sglang-unit.secrets.env")
    for where in (
        "systemctl show -p Environment sglang-unit.service",
        "cat /etc/systemd/system/sglang-unit.service.d/50-blackwell-inference.conf /etc/systemd/system/sglang-unit-validate.service",
        "cat /etc/ansible/facts.d/sglang_unit.fact /etc/blackwell-inference/sglang-unit-validate.json",
        "journalctl -u sglang-unit.service -u sglang-unit-validate.service --no-pager",
    ):
        assert SECRET not in run(where), where


def test_the_toolkit_is_usable_by_everyone_and_writable_by_root_only(run):
    # as NVIDIA's packages install it: executables 0755, files 0644, owned by root
    assert run("find /usr/local/cuda-13.0/ -perm -u=x ! -perm -o=x ! -type l -print -quit").strip() == ""
    assert run("find /usr/local/cuda-13.0/ ! -user root -print -quit").strip() == ""
    assert run("find /usr/local/cuda-13.0/ -perm /o=w ! -type l -print -quit").strip() == ""


def test_every_cuda_apt_source_on_the_host_is_signed_by_a_keyring(run):
    files = run("grep -l -r -i cuda /etc/apt/sources.list.d/ || true").split()
    assert files
    for path in files:
        entries = [ln for ln in run("cat " + path).splitlines() if ln.strip() and not ln.startswith("#")]
        if path.endswith(".sources"):  # deb822: a Signed-By field
            assert any(ln.lower().startswith("signed-by:") for ln in entries), path
        else:  # one-line: every deb line carries [signed-by=...]
            assert all("signed-by=" in ln for ln in entries if ln.startswith("deb")), path
