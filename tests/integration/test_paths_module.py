"""paths through Ansible on this machine: a directory tree, a file and a link made in one call, a rerun unchanged,
check mode and diff that change nothing, a rewrite that keeps owner and mode, a path in the way refused before any
change."""

import os
import stat

from .conftest import ansible_module

UNIT = "[Service]\nEnvironment=CUDA_HOME=/usr/local/cuda-13.0\n"


def wanted(tmp_path, content=UNIT, src="/opt/sglang/venvs/a"):
    return {
        "paths": [
            {"path": str(tmp_path / "cache" / "jit"), "state": "directory", "owner": "root", "group": "root", "mode": "0750"},
            {"path": str(tmp_path / "cache" / "jit" / "venv"), "state": "link", "src": src},
            {"path": str(tmp_path / "etc" / "50-blackwell-inference.conf"), "state": "directory", "mode": "0755"},
            {"path": str(tmp_path / "etc" / "50-blackwell-inference.conf" / "unit.conf"), "state": "file", "content": content, "mode": "0644"},
        ]
    }


def test_made_in_one_call_then_unchanged(tmp_path):
    res = ansible_module("paths", wanted(tmp_path))
    assert not res.get("failed"), res.get("msg")
    assert res["changed"] is True and len(res["changed_paths"]) == 4
    jit = tmp_path / "cache" / "jit"
    assert stat.S_IMODE(os.stat(jit).st_mode) == 0o750 and os.readlink(jit / "venv") == "/opt/sglang/venvs/a"
    unit = tmp_path / "etc" / "50-blackwell-inference.conf" / "unit.conf"
    assert unit.read_text() == UNIT and stat.S_IMODE(os.stat(unit).st_mode) == 0o644
    again = ansible_module("paths", wanted(tmp_path))
    assert again["changed"] is False and again["changed_paths"] == [] and all(r["actions"] == [] for r in again["results"])


def test_check_mode_and_diff_change_nothing(tmp_path):
    ansible_module("paths", wanted(tmp_path))
    res = ansible_module("paths", wanted(tmp_path, content=UNIT + "Environment=NCCL_DEBUG=WARN\n", src="/opt/sglang/venvs/b"), extra_args=["--check", "--diff"])
    assert res["changed"] is True and sorted(res["changed_paths"]) == sorted(
        [str(tmp_path / "cache" / "jit" / "venv"), str(tmp_path / "etc" / "50-blackwell-inference.conf" / "unit.conf")]
    )
    summary, unit = res["diff"]
    assert "link -> /opt/sglang/venvs/b" in summary["after"] and "link -> /opt/sglang/venvs/a" in summary["before"]
    # the file's own text, old and new, as ansible.builtin.template shows it
    assert unit["before"] == UNIT and unit["after"] == UNIT + "Environment=NCCL_DEBUG=WARN\n" and unit["after_header"].endswith("unit.conf")
    assert os.readlink(tmp_path / "cache" / "jit" / "venv") == "/opt/sglang/venvs/a"
    assert (tmp_path / "etc" / "50-blackwell-inference.conf" / "unit.conf").read_text() == UNIT


def test_a_rewrite_keeps_owner_and_mode_when_not_given(tmp_path):
    target = tmp_path / "settings.json"
    target.write_text("{}\n")
    os.chmod(target, 0o600)
    res = ansible_module("paths", {"paths": [{"path": str(target), "state": "file", "content": '{"warm": ["sampling"]}\n'}]})
    assert res["changed"] is True and res["results"][0]["actions"] == ["write"]
    assert target.read_text() == '{"warm": ["sampling"]}\n' and stat.S_IMODE(os.stat(target).st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["settings.json"]  # no temporary file left beside it


def test_a_path_in_the_way_is_refused_before_any_change(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "50-blackwell-inference.conf").write_text("a file where a directory goes\n")
    res = ansible_module("paths", wanted(tmp_path))
    assert res["failed"] and "exists and is not a directory (file)" in res["msg"]
    assert not (tmp_path / "cache").exists()  # the entries before it were not made either


def test_an_unknown_owner_fails_naming_it(tmp_path):
    res = ansible_module("paths", {"paths": [{"path": str(tmp_path / "d"), "state": "directory", "owner": "no-such-user-here"}]})
    assert res["failed"] and "no such user or group (owner=no-such-user-here" in res["msg"] and not (tmp_path / "d").exists()


def test_absent_removes_a_file_and_a_link_and_never_a_directory(tmp_path):
    (tmp_path / "secrets.env").write_text("HF_TOKEN=x\n")
    os.symlink("/opt/sglang/venvs/a", tmp_path / "venv")
    gone = {"paths": [{"path": str(tmp_path / "secrets.env"), "state": "absent"}, {"path": str(tmp_path / "venv"), "state": "absent"}]}
    check = ansible_module("paths", gone, extra_args=["--check"])
    assert check["changed"] is True and (tmp_path / "secrets.env").exists() and os.path.islink(tmp_path / "venv")
    res = ansible_module("paths", gone)
    assert res["changed"] is True and [r["actions"] for r in res["results"]] == [["remove"], ["remove"]]
    assert list(tmp_path.iterdir()) == []
    assert ansible_module("paths", gone)["changed"] is False
    (tmp_path / "secrets.env").mkdir()
    refused = ansible_module("paths", gone)
    assert refused["failed"] and "should be absent and is a directory" in refused["msg"] and (tmp_path / "secrets.env").is_dir()
