"""write_atomic: the new content in one rename, the mode asked for, nothing left behind on a failure."""

import os
import stat

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.common import files


def test_replaces_the_file_with_its_mode_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "etc" / "record.json"  # the parent is made
    files.write_atomic(str(path), b"one\n")
    files.write_atomic(str(path), b"two\n", mode=0o600)
    assert path.read_bytes() == b"two\n" and (path.stat().st_mode & 0o777) == 0o600
    assert os.listdir(path.parent) == ["record.json"]


def test_a_failed_write_keeps_the_old_file_and_removes_the_temporary(tmp_path):
    path = tmp_path / "key.asc"
    path.write_bytes(b"old")
    with pytest.raises(TypeError):
        files.write_atomic(str(path), "not bytes")
    assert path.read_bytes() == b"old" and os.listdir(tmp_path) == ["key.asc"]


def test_a_0600_file_is_never_wider_not_even_before_its_rename(tmp_path, monkeypatch):
    """write_atomic(mode=0o600), what secret_file writes with: the temporary file is created 0600 (mkstemp) and is
    0600 when renamed into place; no chmod ever widens it."""
    from ansible_collections.blackwell.inference.plugins.module_utils.common import files as files_

    seen, real_rename, real_chmod = [], os.rename, os.chmod

    def rename(src, dst):
        seen.append(("rename", stat.S_IMODE(os.stat(src).st_mode)))
        real_rename(src, dst)

    def chmod(path, mode):
        seen.append(("chmod", mode))
        real_chmod(path, mode)

    monkeypatch.setattr(os, "rename", rename)
    monkeypatch.setattr(os, "chmod", chmod)
    files_.write_atomic(str(tmp_path / "auth.conf"), b"machine m login u password p\n", mode=0o600)
    assert seen and all(step[1] == 0o600 for step in seen) and seen[-1][0] == "rename"
