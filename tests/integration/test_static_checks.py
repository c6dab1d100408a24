"""lint (yamllint, ruff, ansible-lint production, the generated docs, the changelog) and `ansible-test sanity` as
`make test` runs them: beside pytest, from its start (tools/test.sh). This file is handed out last (tests/conftest.py)
and waits for their exit status, so a lint or sanity failure is a failed test in pytest's summary, with its log.
Run without `make test` (no BLACKWELL_STATIC_CHECKS), it runs the check itself."""

import os
import subprocess
import time

import pytest

from .conftest import ROOT

RESULTS = os.environ.get("BLACKWELL_STATIC_CHECKS")


def result(check, timeout=3600):
    """(exit status, log) of `make CHECK`, as tools/test.sh left them, or from a run of its own."""
    if not RESULTS:
        proc = subprocess.run(["make", "--no-print-directory", check], cwd=ROOT, capture_output=True, text=True, check=False)
        return proc.returncode, proc.stdout + proc.stderr
    rc_file, log = os.path.join(RESULTS, check + ".rc"), os.path.join(RESULTS, check + ".log")
    deadline = time.monotonic() + timeout
    while not os.path.exists(rc_file):  # the check's end, not a fixed wait
        assert time.monotonic() < deadline, "make %s did not end within %d s" % (check, timeout)
        time.sleep(1)
    with open(rc_file, encoding="utf-8") as fh:
        rc = int(fh.read().strip())
    with open(log, encoding="utf-8", errors="replace") as fh:
        return rc, fh.read()


@pytest.mark.parametrize("check", ["lint", "sanity"])
def test_the_static_checks_pass(check):
    rc, log = result(check)
    assert rc == 0, "make %s failed (rc %d):\n%s" % (check, rc, log[-8000:])
