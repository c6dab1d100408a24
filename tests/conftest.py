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
    _current.update(path=None, seconds=0.0, failed=0)  # keeps "controller"


# Seconds each lab file took on this machine kind (2 cores, a fresh run: ba6ac74's), a scheduling hint only: the lab
# files are handed to the two workers longest first, so neither ends with a long file while the other idles. A file
# missing here would run last (tests/unit/test_schedule.py fails on one).
LAB_FILE_SECONDS = {
    "tests/lab/faults/test_ready_rollback.py": 900,
    "tests/lab/faults/test_ready_boot_lock.py": 640,
    "tests/lab/after/test_sglang_venv.py": 410,
    "tests/lab/faults/test_faults_kill.py": 340,
    "tests/lab/faults/test_faults.py": 300,
    "tests/lab/faults/test_bad_variables.py": 280,
    "tests/lab/faults/test_failure_causes.py": 270,
    "tests/lab/before/test_cuda_link.py": 270,
    "tests/lab/after/test_sglang_service.py": 200,
    "tests/lab/after/test_cuda_toolkit.py": 190,
    "tests/lab/faults/test_short_failures.py": 170,
    "tests/lab/before/test_cuda_repo_trust.py": 170,
    "tests/lab/faults/test_security.py": 130,
    "tests/lab/faults/test_fleet_roll.py": 120,
    "tests/lab/before/test_cuda_toolkit_refusals.py": 90,
    "tests/lab/after/test_operator_account.py": 90,
    "tests/lab/faults/test_rollback_goes_on.py": 80,
    "tests/lab/faults/test_foreign_dropin.py": 80,
    "tests/lab/faults/test_not_the_units_answer.py": 70,
    "tests/lab/before/test_unit_values.py": 50,
    "tests/lab/before/test_lab_host.py": 30,
    "tests/lab/after/test_site_facts.py": 20,
    "tests/lab/before/test_before_state.py": 10,
}


def pytest_ignore_collect(collection_path, config):
    """pytest leaves out directories named venv (norecursedirs); the unit tests of module_utils/venv are one."""
    if collection_path.name == "venv" and collection_path.parent.name == "module_utils" and collection_path.parent.parent.name == "plugins":
        return False
    return None


def pytest_collection_modifyitems(config, items):
    """The lab scenario first: it is the longest file and saves the images the lab suites start from, so
    under pytest-xdist it runs on one worker while the other takes the controller-side tests; then the
    rest in order: the lab files on the `before` image (saved early in the scenario, so the other worker does not sit
    waiting for the converged image), then the other lab files, longest first (files keep their own test order)."""

    def rank(item):
        path = item.nodeid.split("::", 1)[0]
        if path == "tests/integration/test_lab_scenario.py":
            return (0, 0)
        if path.startswith("tests/lab/before/"):
            return (2, -LAB_FILE_SECONDS.get(path, 0))  # the `before` image is saved at the end of the scenario's prepare: no wait for its converge
        if path.startswith("tests/lab/"):
            return (3, -LAB_FILE_SECONDS.get(path, 0))
        return (1, 0)

    items.sort(key=rank)  # stable: the order inside each file is kept


def pytest_configure(config):
    # under pytest-xdist the workers time their own files; the controller only prints the table
    _current["controller"] = bool(getattr(config.option, "numprocesses", None)) and not hasattr(config, "workerinput")


def pytest_runtest_logreport(report):
    if _current.get("controller"):
        return
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
        budget = int(os.environ.get("BLACKWELL_TEST_BUDGET", "4800"))
        elapsed = time.time() - float(start)
        tr.write_line("make test: %.1f min of its %d min budget (CI stops at 90)" % (elapsed / 60, budget // 60))


def pytest_sessionfinish(session, exitstatus):
    _flush()
