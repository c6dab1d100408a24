"""The heartbeat's decisions: elapsed time, what a task says it waits for, which lines are due when."""

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.fleet import progress


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (45.9, "45s"), (60, "1m00s"), (125, "2m05s"), (3599, "59m59s"), (3720, "1h02m"), (-3, "0s")],
)
def test_elapsed(seconds, text):
    assert progress.elapsed(seconds) == text


@pytest.mark.parametrize(
    ("task_vars", "note"),
    [
        ({"__cuda_toolkit_waits_for": "apt: downloading"}, "apt: downloading"),
        ({"__reqs": ["-r", "x"], "__sglang_venv_waits_for": "  pip: installing  "}, "pip: installing"),
        ({"__policy": "x"}, ""),
        (None, ""),
        ({"__x_waits_for": ""}, ""),
        ({"__x_waits_for": ["a list"]}, ""),
        ({"__x_waits_for": "{{ not rendered }}"}, ""),  # a callback sees the raw template: never print it
    ],
)
def test_waits_for_reads_the_task_variable(task_vars, note):
    assert progress.waits_for(task_vars) == note


def test_announce_says_what_and_how_often():
    assert progress.announce("Install the pinned components", "apt: downloading", 30) == (
        "  Install the pinned components: waits for apt: downloading (a line every 30s while it runs)"
    )
    assert progress.announce("T", "pip", 0) == "  T: waits for pip"


def test_a_line_per_interval_per_host_until_it_answers():
    running = {"ct200": ("Install the pinned packages", 100.0, "pip: installing"), "ct201": ("Install the pinned packages", 110.0, "")}
    beats = {}
    assert progress.due(running, beats, 129.0, 30) == []
    assert progress.due(running, beats, 130.0, 30) == ["  still running on ct200: Install the pinned packages (30s) - pip: installing"]
    assert progress.due(running, beats, 135.0, 30) == []  # said once per interval
    assert progress.due(running, beats, 140.5, 30) == ["  still running on ct201: Install the pinned packages (30s)"]
    assert progress.due(running, beats, 200.0, 30) == [
        "  still running on ct200: Install the pinned packages (1m40s) - pip: installing",  # a late tick says it once
        "  still running on ct201: Install the pinned packages (1m30s)",
    ]
    assert beats == {"ct200": 3, "ct201": 3}


def test_off_at_zero():
    assert progress.due({"ct200": ("T", 0.0, "")}, {}, 1000.0, 0) == []
