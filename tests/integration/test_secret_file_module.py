"""secret_file through Ansible on this machine: apt logins and pip's environment written 0600 (never wider, not even
for a moment), a rerun unchanged, an emptied value removes the file, and the values never in the play's output."""

import json
import os
import stat

from .conftest import ansible_module_calls

TOKEN = "t0k3n-planted-9f2c"  # noqa: S105 - a made-up token the test looks for


def test_written_0600_unchanged_on_rerun_removed_when_empty_and_never_shown(tmp_path):
    auth, env, old = tmp_path / "auth.conf", tmp_path / "pip.env", tmp_path / "old.env"
    old.write_text("PIP_INDEX_URL=https://old@x/simple\n")
    os.chmod(old, 0o644)
    old_inode = os.stat(old).st_ino
    logins = ["https://user:%s@mirror.example/cuda/repos/" % TOKEN, "https://pypi.org/simple", "http://pu:%s@proxy.example:3128" % TOKEN]
    pip = {"PIP_INDEX_URL": "https://%s@idx.example/simple" % TOKEN, "PIP_EXTRA_INDEX_URL": "", "https_proxy": "http://proxy.example:3128"}
    calls = [
        {"path": str(auth), "logins": logins},
        {"path": str(auth), "logins": logins},
        {"path": str(env), "env": pip},
        {"path": str(old), "env": pip},
        {"path": str(tmp_path / "none.env"), "env": {"PIP_INDEX_URL": ""}},
        {"path": str(env), "state": "absent"},
        {"path": str(auth), "logins": ["https://pypi.org/simple"]},
    ]
    first, again, written, replaced, nothing, gone, emptied = ansible_module_calls("secret_file", calls, tmp_path)
    assert TOKEN not in json.dumps([first, again, written, replaced, nothing, gone, emptied])
    assert (first["changed"], first["present"], again["changed"]) == (True, True, False)
    assert written["changed"] is True and replaced["changed"] is True
    assert (nothing["changed"], nothing["present"]) == (False, False) and not (tmp_path / "none.env").exists()
    assert (gone["changed"], emptied["changed"], emptied["present"]) == (True, True, False)
    assert not env.exists() and not auth.exists()
    # the 0644 file was replaced by a new 0600 one (a rename), not narrowed in place
    assert stat.S_IMODE(os.stat(old).st_mode) == 0o600 and os.stat(old).st_ino != old_inode
    assert old.read_text() == "PIP_INDEX_URL=https://%s@idx.example/simple\nhttps_proxy=http://proxy.example:3128\n" % TOKEN
    assert sorted(p.name for p in tmp_path.iterdir()) == ["calls.yml", "old.env"]  # no temporary file left


def test_what_it_writes_is_what_apt_and_sh_read(tmp_path):
    auth = tmp_path / "auth.conf"
    (res,) = ansible_module_calls("secret_file", [{"path": str(auth), "logins": ["https://user:%s@mirror.example/cuda/repos/" % TOKEN]}], tmp_path)
    assert res["changed"] is True and stat.S_IMODE(os.stat(auth).st_mode) == 0o600
    assert auth.read_text() == "machine mirror.example/cuda/repos login user password %s\n" % TOKEN


def test_content_as_given_replaces_a_wider_file(tmp_path):
    """The service's secrets file (a systemd EnvironmentFile): the text as given, in a new 0600 file."""
    path = tmp_path / "svc.secrets.env"
    path.write_text("HF_TOKEN=old\n")
    os.chmod(path, 0o640)
    text = 'HF_TOKEN="%s"\n' % TOKEN
    calls = [{"path": str(path), "content": text}, {"path": str(path), "content": text}]
    first, again = ansible_module_calls("secret_file", calls, tmp_path)
    assert (first["changed"], again["changed"]) == (True, False) and TOKEN not in json.dumps([first, again])
    assert path.read_text() == text and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    (emptied,) = ansible_module_calls("secret_file", [{"path": str(path), "content": ""}], tmp_path)
    assert (emptied["changed"], emptied["present"]) == (True, False) and not path.exists()
