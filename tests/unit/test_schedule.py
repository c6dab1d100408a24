"""The lab files' scheduling hint (tests/conftest.py LAB_FILE_SECONDS): every lab test file has an entry, so that none
is handed out last by default and leaves one worker running a long file while the other idles at the end; the hints
add up to no more than the lab's budget, and a file over its hint (scaled to the run's yardstick) is named."""

import glob
import os

import pytest

from ..conftest import LAB_BUDGET_SECONDS, LAB_FILE_SECONDS, LAB_SCENARIO_SECONDS, ROOT, over_budget, yardstick


def test_every_lab_file_has_its_seconds_and_no_entry_is_stale():
    files = {os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "tests", "lab", "*", "test_*.py"))}
    assert files, "no lab test files found"
    assert sorted(files - set(LAB_FILE_SECONDS)) == [], "lab files without a time in tests/conftest.py LAB_FILE_SECONDS"
    assert sorted(set(LAB_FILE_SECONDS) - files) == [], "LAB_FILE_SECONDS names files that are gone"


def test_the_lab_hints_fit_the_budget_of_two_workers_for_24_minutes():
    total = sum(LAB_FILE_SECONDS.values()) + sum(LAB_SCENARIO_SECONDS.values())
    assert total <= LAB_BUDGET_SECONDS == 2 * 24 * 60, (
        "the lab's hints add up to %d s, over its budget of %d s: a new lab test buys its time back elsewhere, or moves "
        "its logic into a unit table" % (total, LAB_BUDGET_SECONDS)
    )


ROWS = [
    ("yardstick start", 4.0, "0"),
    ("lint", 300.0, "0"),  # not a lab file: never over budget
    ("pytest tests/lab/a.py", 140.0, "0"),
    ("pytest tests/lab/b.py", 160.0, "0"),
    ("pytest tests/lab/c.py", 10.0, "1"),
    ("yardstick end", 4.0, "0"),
]
HINTS = {"tests/lab/a.py": 100, "tests/lab/b.py": 100, "tests/lab/c.py": 100}


@pytest.mark.parametrize(
    ("marks", "reference", "over"),
    [
        ((4.0, 4.0), 4.0, ["tests/lab/b.py"]),  # the hints' own hour: 150 s is the line
        ((2.0, 2.0), 4.0, ["tests/lab/a.py", "tests/lab/b.py"]),  # a machine twice as fast: 75 s is the line
        ((6.0, 6.0), 4.0, []),  # a slow hour (1.5x the yardstick): 225 s is the line
        ((5.0, 7.0), 4.0, []),  # start and end averaged
        ((), 4.0, ["tests/lab/b.py"]),  # no yardstick in the run: the hints as they are
    ],
)
def test_a_lab_file_over_one_and_a_half_times_its_scaled_hint_is_over_budget(marks, reference, over):
    rows = [r for r in ROWS if not r[0].startswith("yardstick")]
    rows += [("yardstick %d" % i, m, "0") for i, m in enumerate(marks)]
    assert [path for path, _s, _hint in over_budget(rows, HINTS, reference)] == over


def test_the_yardstick_is_the_mean_of_the_runs_marks():
    assert yardstick(ROWS) == 4.0
    assert yardstick([("lint", 3.0, "0")]) is None
