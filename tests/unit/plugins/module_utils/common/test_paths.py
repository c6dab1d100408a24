"""The paths module's decisions: input checks and, per observed state, the actions that make it what is wanted."""

import os

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.common import paths as p

CONTENT = "[Service]\nEnvironment=CUDA_HOME=/usr/local/cuda-13.0\n"


def entry(**kw):
    return p.normalize([kw])[0]


def seen(kind, **kw):
    base = {"exists": True, "type": kind, "uid": 0, "gid": 0, "mode": 0o755}
    base.update(kw)
    return base


@pytest.mark.parametrize(
    "value,expected",
    [("0755", 0o755), ("755", 0o755), ("0640", 0o640), ("1777", 0o1777), (0o644, 0o644), (None, None), ("", None)],
)
def test_parse_mode(value, expected):
    assert p.parse_mode(value) == expected


@pytest.mark.parametrize("value", ["u+rwx", "0999", "75", True, 0o17777, "rwxr-xr-x"])
def test_parse_mode_refuses(value):
    with pytest.raises(p.PathsError):
        p.parse_mode(value)


@pytest.mark.parametrize(
    "entries,message",
    [
        ([], "a non-empty list"),
        ([{"path": "relative/dir", "state": "directory"}], "paths[0]: path must be an absolute path"),
        ([{"path": "/", "state": "directory"}], "other than /"),
        ([{"path": "/etc/x", "state": "gone"}], "state must be one of directory, file, link, absent"),
        ([{"path": "/etc/x", "state": "absent", "mode": "0600"}], "an absent path has no owner, group or mode"),
        ([{"path": "/etc/x", "state": "file"}], "a file needs its content"),
        ([{"path": "/etc/x", "state": "link"}], "a link needs src"),
        ([{"path": "/etc/x", "state": "directory", "content": "x"}], "content is only for state=file"),
        ([{"path": "/etc/x", "state": "directory", "src": "/y"}], "src is only for state=link"),
        ([{"path": "/etc/x", "state": "link", "src": "/y", "mode": "0644"}], "a link has no mode"),
        ([{"path": "/etc/x", "state": "directory", "mode": "u=rwx"}], "symbolic modes are not supported"),
        ([{"path": "/etc/x", "state": "directory", "recurse": True}], "unknown keys recurse"),
        ([{"path": "/etc/x", "state": "directory"}, {"path": "/etc/x/", "state": "directory"}], "paths[1]: /etc/x is listed twice"),
    ],
)
def test_normalize_refuses(entries, message):
    with pytest.raises(p.PathsError, match=None) as exc:
        p.normalize(entries)
    assert message in str(exc.value)


@pytest.mark.parametrize(
    "wanted,observed,uid,gid,actions",
    [
        # a directory: missing, matching, another owner, another mode
        ({"state": "directory", "mode": "0755"}, {"exists": False}, 0, 0, [("create", None), ("chown", (0, 0)), ("chmod", 0o755)]),
        ({"state": "directory", "mode": "0755"}, seen("directory"), 0, 0, []),
        ({"state": "directory", "mode": "0750"}, seen("directory", uid=0, gid=0, mode=0o750), 998, 998, [("chown", (998, 998))]),
        ({"state": "directory", "mode": "0750"}, seen("directory", mode=0o755), 0, 0, [("chmod", 0o750)]),
        # owner and mode not given: left as they are
        ({"state": "directory"}, seen("directory", uid=998, gid=998, mode=0o700), None, None, []),
        # a file: missing, same content, other content (rewritten in place of the old, its owner and mode kept)
        ({"state": "file", "content": CONTENT, "mode": "0644"}, {"exists": False}, 0, 0, [("create", None), ("chown", (0, 0)), ("chmod", 0o644)]),
        ({"state": "file", "content": CONTENT, "mode": "0644"}, seen("file", mode=0o644, sha256=p.sha256(CONTENT)), 0, 0, []),
        ({"state": "file", "content": CONTENT, "mode": "0644"}, seen("file", mode=0o644, sha256=p.sha256("old\n")), 0, 0, [("write", None)]),
        ({"state": "file", "content": CONTENT, "mode": "0600"}, seen("file", mode=0o644, sha256=p.sha256("old\n")), 0, 0, [("write", None), ("chmod", 0o600)]),
        # a link: missing, right, elsewhere, a regular file in its place
        ({"state": "link", "src": "/opt/sglang/venvs/a"}, {"exists": False}, None, None, [("create", None)]),
        ({"state": "link", "src": "/opt/sglang/venvs/a"}, seen("link", target="/opt/sglang/venvs/a", mode=None), 0, 0, []),
        ({"state": "link", "src": "/opt/sglang/venvs/b"}, seen("link", target="/opt/sglang/venvs/a", mode=None), 0, 0, [("relink", "/opt/sglang/venvs/a")]),
        ({"state": "link", "src": "/opt/sglang/venvs/b"}, seen("file", sha256="x"), None, None, [("relink", None)]),
        # absent: a file or a link is removed, nothing there is nothing to do
        ({"state": "absent"}, seen("file", sha256="x"), None, None, [("remove", None)]),
        ({"state": "absent"}, seen("link", target="/opt/a", mode=None), 0, 0, [("remove", None)]),
        ({"state": "absent"}, {"exists": False}, None, None, []),
    ],
)
def test_plan(wanted, observed, uid, gid, actions):
    assert p.plan(entry(path="/var/cache/sglang/jit", **wanted), observed, uid, gid) == actions


@pytest.mark.parametrize(
    "wanted,observed,message",
    [
        ({"state": "directory"}, seen("file", sha256="x"), "exists and is not a directory (file)"),
        ({"state": "file", "content": CONTENT}, seen("directory"), "exists and is not a regular file (directory)"),
        ({"state": "link", "src": "/opt/x"}, seen("directory"), "exists and is a directory, not a link"),
        ({"state": "absent"}, seen("directory"), "should be absent and is a directory: only a file or a link is removed"),
    ],
)
def test_plan_refuses_what_is_in_the_way(wanted, observed, message):
    with pytest.raises(p.PathsError) as exc:
        p.plan(entry(path="/etc/x", **wanted), observed)
    assert message in str(exc.value)


def test_describe_for_the_diff():
    assert p.describe({"exists": False}) == "absent"
    assert p.describe(seen("directory", owner="root", group="root")) == "directory 0755 root:root"
    assert p.describe(seen("link", target="/opt/a", owner="root", group="root", mode=None)) == "link -> /opt/a (root:root)"
    after = p.wanted(entry(path="/etc/x", state="file", content=CONTENT, mode="0644", owner="root", group="root"), 0, 0)
    assert p.describe(after) == "file 0644 root:root sha256:" + p.sha256(CONTENT)[:16]
    assert p.describe(p.wanted(entry(path="/etc/x", state="absent"))) == "absent"


def test_checksums_are_what_a_read_of_the_files_gives_once_they_match(tmp_path):
    import hashlib

    unit = tmp_path / "sglang.service.d" / "50-blackwell-inference.conf"
    wanted = p.normalize(
        [
            {"path": str(unit.parent), "state": "directory"},
            {"path": str(unit), "state": "file", "content": CONTENT},
            {"path": str(tmp_path / "gone.env"), "state": "absent"},
            {"path": str(tmp_path / "venv"), "state": "link", "src": "/opt/sglang/venvs/abc"},
        ]
    )
    unit.parent.mkdir()
    unit.write_text(CONTENT, encoding="utf-8")  # as the module writes it
    assert p.checksums(wanted) == {str(unit): hashlib.sha256(unit.read_bytes()).hexdigest(), str(tmp_path / "gone.env"): None}


def _role_paths(tmp_path, me):
    """A role's directories, a file and a link, and an absent one, owned by the account running the test."""
    return [
        {"path": str(tmp_path / "cache"), "state": "directory", "owner": me, "mode": "0750"},
        {"path": str(tmp_path / "cache" / "50-blackwell-inference.conf"), "state": "file", "content": CONTENT, "owner": me, "mode": "0644"},
        {"path": str(tmp_path / "cache" / "venv"), "state": "link", "src": "/opt/sglang/venvs/abc"},
        {"path": str(tmp_path / "secrets.env"), "state": "absent"},
    ]


def _make(tmp_path):
    (tmp_path / "cache").mkdir(mode=0o750)
    (tmp_path / "cache").chmod(0o750)
    conf = tmp_path / "cache" / "50-blackwell-inference.conf"
    conf.write_text(CONTENT, encoding="utf-8")
    conf.chmod(0o644)
    (tmp_path / "cache" / "venv").symlink_to("/opt/sglang/venvs/abc")


def test_pending_from_an_observation_is_what_the_module_would_change(tmp_path):
    import pwd

    from ansible_collections.blackwell.inference.plugins.module_utils.common import files

    me = pwd.getpwuid(os.getuid()).pw_name
    wanted = _role_paths(tmp_path, me)
    glob_all = [str(tmp_path / "cache"), str(tmp_path / "cache" / "*"), str(tmp_path / "secrets.env")]
    assert p.pending(wanted, files.observe_all(glob_all)) == [w["path"] for w in wanted[:3]]  # nothing made yet
    _make(tmp_path)
    seen = files.observe_all(glob_all)
    assert sorted(seen) == sorted(w["path"] for w in wanted)  # the pattern stood for the file and the link
    assert p.pending(wanted, seen) == []
    # drift: a mode, a content, a link target, a file that should be gone, an owner by another name
    (tmp_path / "cache").chmod(0o700)
    (tmp_path / "cache" / "50-blackwell-inference.conf").write_text(CONTENT + "# by hand\n", encoding="utf-8")
    (tmp_path / "cache" / "venv").unlink()
    (tmp_path / "cache" / "venv").symlink_to("/opt/sglang/venvs/old")
    (tmp_path / "secrets.env").write_text("HF_TOKEN=x\n", encoding="utf-8")
    assert p.pending(wanted, files.observe_all(glob_all)) == [w["path"] for w in wanted]
    other_owner = [{"path": str(tmp_path / "cache"), "state": "directory", "owner": "somebody-else"}]
    assert p.pending(other_owner, files.observe_all(glob_all)) == [str(tmp_path / "cache")]
    assert p.pending([dict(other_owner[0], owner=me)], files.observe_all(glob_all)) == []


def test_pending_counts_what_was_not_observed_and_what_the_module_would_refuse(tmp_path):
    wanted = [{"path": "/etc/blackwell-inference", "state": "directory"}, {"path": "/etc/x.conf", "state": "file", "content": "x\n"}]
    observed = {"/etc/x.conf": {"exists": True, "type": "directory", "uid": 0, "gid": 0, "mode": 0o755}}
    assert p.pending(wanted, observed) == ["/etc/blackwell-inference", "/etc/x.conf"]


def test_observed_checksums_are_what_service_snapshot_inspect_reads(tmp_path):
    import hashlib

    from ansible_collections.blackwell.inference.plugins.module_utils.common import files

    _make(tmp_path)
    conf, gone = str(tmp_path / "cache" / "50-blackwell-inference.conf"), str(tmp_path / "secrets.env")
    seen = files.observe_all([conf, gone, str(tmp_path / "cache")])
    digest = hashlib.sha256((tmp_path / "cache" / "50-blackwell-inference.conf").read_bytes()).hexdigest()
    assert p.observed_checksums([conf, gone], seen) == {conf: digest, gone: None}
    assert p.observed_checksums([conf, str(tmp_path / "other")], seen) is None  # not observed
    assert p.observed_checksums([str(tmp_path / "cache")], seen) is None  # a directory holds no checksum
