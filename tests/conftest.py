"""Make `ansible_collections.blackwell.inference` importable from a plain checkout (`make collection`)."""

import os
import subprocess
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


# Seconds each lab file takes on this machine kind (2 cores, a fresh run: 6cc5d49's, yardstick 2.01 s, adjusted for the
# cuts that followed it), a scheduling hint and the lab's budget: the lab
# files are handed to the two workers longest first, so neither ends with a long file while the other idles. A file
# missing here would run last (tests/unit/test_schedule.py fails on one).
LAB_FILE_SECONDS = {
    "tests/lab/faults/test_ready_rollback.py": 520,
    "tests/lab/faults/test_ready_boot_lock.py": 249,
    "tests/lab/faults/test_fleet_roll.py": 210,
    "tests/lab/faults/test_failure_causes.py": 208,
    "tests/lab/after/test_sglang_venv.py": 192,
    "tests/lab/faults/test_faults.py": 190,
    "tests/lab/before/test_cuda_link.py": 140,
    "tests/lab/after/test_sglang_service.py": 119,
    "tests/lab/faults/test_security.py": 102,
    "tests/lab/before/test_cuda_repo_trust.py": 85,
    "tests/lab/after/test_cuda_toolkit.py": 80,
    "tests/lab/faults/test_faults_kill.py": 77,
    "tests/lab/faults/test_short_failures.py": 59,
    "tests/lab/faults/test_foreign_dropin.py": 95,
    "tests/lab/faults/test_rollback_goes_on.py": 41,
    "tests/lab/faults/test_bad_variables.py": 40,
    "tests/lab/before/test_unit_values.py": 31,
    "tests/lab/before/test_cuda_toolkit_refusals.py": 30,
    "tests/lab/faults/test_not_the_units_answer.py": 30,
    "tests/lab/before/test_lab_host.py": 24,
    "tests/lab/after/test_site_facts.py": 20,
    "tests/lab/before/test_before_state.py": 7,
}
# The lab scenario (molecule: create, prepare, converge, idempotence, verify) is lab work too: in the budget, not in
# the schedule (it always runs first).
LAB_SCENARIO_SECONDS = {"tests/integration/test_lab_scenario.py": 312}
# What the hints may add up to: two workers, 24 minutes of lab work each (make test within 30 minutes on a fresh
# machine, with the toolchain, lint, sanity and the controller-side tests around it). A new lab test fits inside it:
# its change buys the time back elsewhere, or moves logic into a unit table (tests/unit/test_schedule.py).
LAB_BUDGET_SECONDS = 2 * 24 * 60
# tools/yardstick.py's seconds in the run the hints come from; a run's own yardstick scales them (a slow hour is not
# a file over budget), and a file over OVER_BUDGET times its scaled hint is named at the end of the run.
LAB_HINTS_YARDSTICK = 2.01
OVER_BUDGET = 1.5


def yardstick(rows):
    """The run's yardstick seconds (the mean of its `yardstick ...` rows), or None."""
    marks = [seconds for name, seconds, _rc in rows if name.startswith("yardstick")]
    return sum(marks) / len(marks) if marks else None


def over_budget(rows, hints=None, reference=LAB_HINTS_YARDSTICK, factor=OVER_BUDGET):
    """[(file, seconds, its hint scaled to this run)] of the lab files that took more than `factor` times their hint,
    the hint scaled by this run's yardstick against the hints' own (rows: read_timings())."""
    hints = dict(LAB_FILE_SECONDS, **LAB_SCENARIO_SECONDS) if hints is None else hints
    mark = yardstick(rows)
    scale = mark / reference if mark and reference else 1.0
    out = []
    for name, seconds, _rc in rows:
        path = name[len("pytest ") :] if name.startswith("pytest ") else None
        if path in hints and seconds > factor * hints[path] * scale:
            out.append((path, seconds, hints[path] * scale))
    return out


def pytest_ignore_collect(collection_path, config):
    """pytest leaves out directories named venv (norecursedirs); the unit tests of module_utils/venv are one."""
    if collection_path.name == "venv" and collection_path.parent.name == "module_utils" and collection_path.parent.parent.name == "plugins":
        return False
    return None


def pytest_collection_modifyitems(config, items):
    """The lab scenario first: it is the longest file and saves the images the lab suites start from, so
    under pytest-xdist it runs on one worker while the other takes the controller-side tests; then the
    rest in order (the static checks' results last): the lab files on the `before` image (saved early in the scenario, so the other worker does not sit
    waiting for the converged image), then the other lab files, longest first (files keep their own test order)."""

    def rank(item):
        path = item.nodeid.split("::", 1)[0]
        if path == "tests/integration/test_lab_scenario.py":
            return (0, 0)
        if path == "tests/integration/test_static_checks.py":
            return (4, 0)  # waits for lint and sanity, which run beside pytest (tools/test.sh): last
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
    if not TIMINGS or os.environ.get("BLACKWELL_TIMINGS_REPORT") != "1" or hasattr(config, "workerinput"):
        return  # the table once, by the controller (a pytest-xdist worker's summary is not shown)
    rows = read_timings(TIMINGS)
    tr = terminalreporter
    tr.section("stage timings (seconds)")
    for name, seconds, rc in rows:
        tr.write_line("%8.1f  %s%s" % (seconds, name, "" if rc == "0" else "  (failed)"))
    top = sorted(rows, key=lambda r: -r[1])[:6]
    tr.write_line("slowest: " + ", ".join("%s %.0f s" % (n, s) for n, s, _rc in top))
    if _yardstick_end(rows) is not None:
        rows = read_timings(TIMINGS)
        marks = " and ".join("%.2f" % sec for name, sec, _rc in rows if name.startswith("yardstick"))
        tr.write_line(
            "yardstick (tools/yardstick.py, start and end): %s s; the hints' run: %.2f s; the hints scaled by %.2f"
            % (marks, LAB_HINTS_YARDSTICK, yardstick(rows) / LAB_HINTS_YARDSTICK)
        )
    for path, seconds, hint in over_budget(rows):
        tr.write_line("over budget: %s took %.0f s, more than %.1fx its hint of %.0f s (scaled to this run's yardstick)" % (path, seconds, OVER_BUDGET, hint))
    start = os.environ.get("BLACKWELL_TEST_START")
    if start:
        budget = int(os.environ.get("BLACKWELL_TEST_BUDGET", "4800"))
        elapsed = time.time() - float(start)
        tr.write_line("make test: %.1f min of its %d min budget (CI stops at 90)" % (elapsed / 60, budget // 60))


def _yardstick_end(rows):
    """Run the yardstick again at the end of `make test` (its start is in the rows), record it and return its seconds."""
    if not any(n == "yardstick start" for n, _s, _rc in rows):
        return None
    python = os.environ.get("BLACKWELL_YARDSTICK_PYTHON") or sys.executable  # tools/test.sh's, for the start's mark
    out = subprocess.run([python, os.path.join(ROOT, "tools", "yardstick.py")], capture_output=True, text=True, check=False).stdout.split()
    if not out:
        return None
    record_timing("yardstick end", float(out[0]))
    return float(out[0])


def pytest_sessionfinish(session, exitstatus):
    _flush()
