"""Make `ansible_collections.blackwell.inference` importable from a plain checkout (`make collection`)."""

import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(ROOT, ".collections")
LINK = os.path.join(COLLECTIONS, "ansible_collections", "blackwell", "inference")
if not os.path.lexists(LINK):
    os.makedirs(os.path.dirname(LINK), exist_ok=True)
    os.symlink("../../..", LINK)
if COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)


# -- stage timings (`make test` within its budget) ----------------------------------------------------
# Every pytest run appends the time of each test file to $BLACKWELL_TIMINGS as soon as the file is done
# (so a run killed by the budget still says where the time went); `make test` (tools/test.sh) prints the
# whole table (its own stages, each molecule step, each test file) before pytest's summary.
TIMINGS = os.environ.get("BLACKWELL_TIMINGS")
_current = {"path": None, "seconds": 0.0, "failed": 0}


def record_timing(name, seconds, rc=0):
    """Append one row to the stage timings file (a no-op when $BLACKWELL_TIMINGS is unset)."""
    if TIMINGS:
        os.makedirs(os.path.dirname(TIMINGS), exist_ok=True)
        with open(TIMINGS, "a", encoding="utf-8") as fh:
            fh.write("%s\t%.3f\t%s\n" % (name, seconds, rc))


def _flush():
    if _current["path"]:
        record_timing("pytest " + _current["path"], _current["seconds"], _current["failed"])
    _current.update(path=None, seconds=0.0, failed=0)


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::", 1)[0]
    if path != _current["path"]:
        _flush()
        _current["path"] = path
    _current["seconds"] += report.duration
    _current["failed"] |= int(report.failed)


def read_timings(path):
    rows = []
    if path and os.path.exists(path):
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                parts = line.rstrip("\n").split("\t")
                if len(parts) == 3:
                    rows.append((parts[0], float(parts[1]), parts[2]))
    return rows


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    _flush()
    if not TIMINGS or os.environ.get("BLACKWELL_TIMINGS_REPORT") != "1":
        return
    rows = read_timings(TIMINGS)
    tr = terminalreporter
    tr.section("stage timings (seconds)")
    for name, seconds, rc in rows:
        tr.write_line("%8.1f  %s%s" % (seconds, name, "" if rc == "0" else "  (failed)"))
    top = sorted(rows, key=lambda r: -r[1])[:6]
    tr.write_line("slowest: " + ", ".join("%s %.0f s" % (n, s) for n, s, _rc in top))
    start = os.environ.get("BLACKWELL_TEST_START")
    if start:
        budget = int(os.environ.get("BLACKWELL_TEST_BUDGET", "3600"))
        elapsed = time.time() - float(start)
        tr.write_line("make test: %.1f min of its %d min budget (CI stops at 90)" % (elapsed / 60, budget // 60))


def pytest_sessionfinish(session, exitstatus):
    _flush()
