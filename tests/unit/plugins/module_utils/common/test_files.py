"""write_atomic: the new content in one rename, the mode asked for, nothing left behind on a failure."""

import os

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
