"""The lab files' scheduling hint (tests/conftest.py LAB_FILE_SECONDS): every lab test file has an entry, so that none
is handed out last by default and leaves one worker running a long file while the other idles at the end."""

import glob
import os

from ..conftest import LAB_FILE_SECONDS, ROOT


def test_every_lab_file_has_its_seconds_and_no_entry_is_stale():
    files = {os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "tests", "lab", "*", "test_*.py"))}
    assert files, "no lab test files found"
    assert sorted(files - set(LAB_FILE_SECONDS)) == [], "lab files without a time in tests/conftest.py LAB_FILE_SECONDS"
    assert sorted(set(LAB_FILE_SECONDS) - files) == [], "LAB_FILE_SECONDS names files that are gone"
