"""The cuda_toolkit role's one read of a host (toolkit_read, the toolkit_probe module's logic): what each command's
answer becomes, and the readings the role cannot decide from."""

import hashlib
import json
import os

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.common import commands
from ansible_collections.blackwell.inference.plugins.module_utils.host import measure as cuda_measure
from ansible_collections.blackwell.inference.plugins.module_utils.host import toolkit_read

FACTS = {"gpus": [{"index": 0, "compute_cap": "12.0"}], "toolkits": [{"dir_version": "13.0", "version": "13.0"}]}
# dpkg-query -W -f='${Package} ${Version} ${Status}\n' on ct200 (two of its lines)
DPKG = "cuda-nvcc-13-0 13.0.88-1 install ok installed\ncuda-cudart-13-0 13.0.96-1 hold ok installed\n"
# mokutil --sb-state: a host with Secure Boot off, and the lab's nspawn machine (no EFI variables)
SB_OFF = commands.CommandResult(["mokutil", "--sb-state"], rc=0, stdout="SecureBoot disabled\n")
SB_NO_EFI = commands.CommandResult(["mokutil", "--sb-state"], rc=255, stderr="EFI variables are not supported on this system\n")
SB_MISSING = commands.CommandResult(["mokutil", "--sb-state"], os_error="FileNotFoundError", stderr="No such file or directory")


def runner(answers):
    calls = []

    def run(argv, env=None, timeout=60, data=None):
        calls.append(argv[0])
        return answers[argv[0]]

    return run, calls


@pytest.fixture
def measured(monkeypatch):
    monkeypatch.setattr(cuda_measure, "measure", lambda run, p, env, notes, home: FACTS)


def read(run, **params):
    sources = {"/etc/apt/sources.list.d/cuda.sources": ["file:/srv/cuda-mirror/debian12/x86_64/"]}
    return toolkit_read.read(run, params, {}, [], "/root", sources=lambda: sources, record=lambda path: {})


@pytest.mark.parametrize(
    ("sb", "want"),
    [
        (SB_OFF, {"rc": 0, "stdout": "SecureBoot disabled", "stderr": ""}),
        (SB_NO_EFI, {"rc": 255, "stdout": "", "stderr": "EFI variables are not supported on this system"}),
        (SB_MISSING, {"rc": None, "stdout": "", "stderr": "not installed"}),
    ],
)
def test_one_read_of_the_host(measured, sb, want):
    run, calls = runner({"dpkg-query": commands.CommandResult(["dpkg-query"], rc=0, stdout=DPKG), "mokutil": sb})
    got = read(run, packages=True, apt_sources=True, compile_record="/var/lib/x.json")
    assert got["ansible_facts"] == {"blackwell_cuda": FACTS}
    assert got["packages"] == {"rc": 0, "stdout": DPKG}
    assert got["secure_boot"] == want
    assert got["apt_sources"] == {"/etc/apt/sources.list.d/cuda.sources": ["file:/srv/cuda-mirror/debian12/x86_64/"]}
    assert got["compile_record"] == {}
    assert got["links"] is None and got["apt_repo"] is None and calls == ["dpkg-query", "mokutil"]


def test_a_runfile_host_reads_no_packages_and_no_sources(measured):
    run, calls = runner({"mokutil": SB_OFF})
    got = read(run, packages=False, apt_sources=False)
    assert got["packages"] == {"rc": None, "stdout": ""} and got["apt_sources"] == {} and calls == ["mokutil"]


@pytest.mark.parametrize(
    ("method", "given", "calls_made", "read_sources", "read_repo"),
    [
        # the role's method says what apt has to read, whatever packages and apt_sources say
        ("apt", {"packages": False, "apt_sources": False}, ["dpkg-query", "mokutil"], True, True),
        ("runfile", {"packages": True, "apt_sources": True}, ["mokutil"], False, False),
        # without it, those options do
        (None, {"packages": True, "apt_sources": False}, ["dpkg-query", "mokutil"], False, True),
    ],
)
def test_the_method_decides_what_apt_has_to_read(measured, tmp_path, method, given, calls_made, read_sources, read_repo):
    run, calls = runner({"mokutil": SB_OFF, "dpkg-query": commands.CommandResult(["dpkg-query"], rc=0, stdout=DPKG)})
    repo = {"source": str(tmp_path / "none.sources"), "key": str(tmp_path / "none.asc")}
    got = read(run, method=method, apt_repo=repo, **given)
    assert calls == calls_made and bool(got["apt_sources"]) is read_sources and (got["apt_repo"] is not None) is read_repo


def test_links_wanted_as_releases_are_read_as_their_x_y(measured, monkeypatch):
    seen = []
    monkeypatch.setattr(toolkit_read.cuda_link_host, "read", lambda run, root, record, wanted, default: seen.append(wanted) or {})
    run, _calls = runner({"mokutil": SB_OFF})
    read(run, packages=False, links={"root": "/usr/local", "default": "", "wanted": ["13.0.2", "12.8", "12.9.1"]})
    assert seen == [["13.0", "12.8", "12.9"]]


def test_the_roles_own_source_and_key_are_read_when_asked(measured, tmp_path):
    run, _calls = runner({"mokutil": SB_OFF})
    key = tmp_path / "k.asc"
    key.write_bytes(b"not a key")
    got = read(run, packages=False, apt_repo={"source": str(tmp_path / "none.sources"), "key": str(key)})["apt_repo"]
    assert got["source"] == {"path": str(tmp_path / "none.sources"), "present": False, "mode": None, "stanzas": None, "error": None}
    assert got["key"]["present"] is True and got["key"]["error"] == "byte 0 is not a packet header"
    with pytest.raises(toolkit_read.ReadError, match=r"^apt_repo: unsupported option\(s\) keys \(known: source, key\)$"):
        read(run, packages=False, apt_repo={"source": "/x", "keys": "/y"})
    with pytest.raises(toolkit_read.ReadError, match=r"^apt_repo: needs key$"):
        read(run, packages=False, apt_repo={"source": "/x", "key": ""})


def test_readings_the_role_cannot_decide_from(measured, monkeypatch):
    failing = commands.CommandResult(["dpkg-query"], rc=2, stderr="dpkg-query: error: parsing file '/var/lib/dpkg/status'")
    run, _calls = runner({"dpkg-query": failing, "mokutil": SB_OFF})
    with pytest.raises(toolkit_read.ReadError) as exc:
        read(run, packages=True)
    assert exc.value.msg == "dpkg-query could not list the packages" and exc.value.result["rc"] == 2
    run, _calls = runner({"mokutil": SB_OFF})
    with pytest.raises(toolkit_read.ReadError, match=r"links: unsupported option\(s\) pin \(known: root, default, wanted, record\)"):
        read(run, packages=False, links={"root": "/usr/local", "pin": True})

    def refuse(run, p, env, notes, home):
        raise cuda_measure.MeasureError("nvidia-smi failed (rc 9)", {"rc": 9, "stdout": "", "stderr": "NVML: Unknown Error"})

    monkeypatch.setattr(cuda_measure, "measure", refuse)
    with pytest.raises(toolkit_read.ReadError) as exc:
        read(run, packages=False)
    assert exc.value.msg == "nvidia-smi failed (rc 9)" and exc.value.result["stderr"] == "NVML: Unknown Error"


def test_apts_proxy_file_is_read_whole_and_its_logins_file_by_mode_and_owner_only(measured, tmp_path):
    run, _calls = runner({"mokutil": SB_OFF})
    proxy, auth = tmp_path / "90proxy", tmp_path / "90auth.conf"
    proxy.write_text('Acquire::http::Proxy "http://proxy.example:3128";\n')
    os.chmod(proxy, 0o644)
    auth.write_text("machine proxy.example:3128 login u password s3cret\n")
    os.chmod(auth, 0o600)
    got = read(run, packages=False, apt_access={"proxy": str(proxy), "auth": str(auth)})["apt_access"]
    assert got["proxy"] == {"exists": True, "mode": 0o644, "uid": os.getuid(), "content": proxy.read_text()}
    assert got["auth"] == {"exists": True, "mode": 0o600, "uid": os.getuid()}  # never its text nor a digest of it
    assert "s3cret" not in json.dumps(got) and hashlib.sha256(auth.read_bytes()).hexdigest() not in json.dumps(got)
    none = read(run, packages=False, apt_access={"proxy": str(tmp_path / "a"), "auth": str(tmp_path / "b")})["apt_access"]
    assert none == {"proxy": {"exists": False}, "auth": {"exists": False}}
    assert read(run, packages=False, method="runfile", apt_access={"proxy": "/x", "auth": "/y"})["apt_access"] is None
    with pytest.raises(toolkit_read.ReadError, match=r"^apt_access: needs auth$"):
        read(run, packages=False, apt_access={"proxy": "/x", "auth": ""})
