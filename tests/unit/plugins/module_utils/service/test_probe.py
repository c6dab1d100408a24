"""The sglang_service role's reads of the host (service_probe): the marker, the gone workspaces, the snapshot."""

import json
import os

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.service import probe as sp

# the ready marker a validation wrote on the lab host (the converged ct200), its first keys
MARKER = {
    "archs": "12.0f",
    "inputs": "a65627bf5947ccf0",
    "last_good": {"inputs": "a65627bf5947ccf0", "time": "2026-12-02T14:02:14Z", "venv": "/opt/sglang/venvs/2c26817414e442ed"},
    "launched": False,
    "phase": "validated",
    "ready": True,
}


def test_the_marker_as_written(tmp_path):
    path = tmp_path / "blackwell_inference.fact"
    path.write_text(json.dumps(MARKER, indent=4, sort_keys=True))
    assert sp.read_marker(str(path)) == (MARKER, None)


@pytest.mark.parametrize("text,why", [('{\n    "archs": "12.0f",\n', "is not JSON"), ("[]", "is a JSON list, not an object"), ("", "is not JSON")])
def test_a_marker_that_cannot_be_used_is_no_marker_with_the_reason(tmp_path, text, why):
    path = tmp_path / "blackwell_inference.fact"
    path.write_text(text)
    marker, error = sp.read_marker(str(path))
    assert marker == {} and why in error and str(path) in error


def test_no_marker(tmp_path):
    assert sp.read_marker(str(tmp_path / "absent.fact")) == ({}, None)


def test_gone_venv_links_are_the_dangling_ones(tmp_path):
    jit, venvs = tmp_path / "jit", tmp_path / "venvs"
    (venvs / "2c26817414e442ed").mkdir(parents=True)
    for ws, target in (("2c26817414e442ed", venvs / "2c26817414e442ed"), ("9d1e0000aaaa0000", venvs / "9d1e0000aaaa0000")):
        (jit / ws).mkdir(parents=True)
        os.symlink(str(target), str(jit / ws / "venv"))
    (jit / "nolink").mkdir()
    (jit / "stray-file").write_text("")
    assert sp.gone_venv_links(str(jit)) == [str(jit / "9d1e0000aaaa0000" / "venv")]
    assert sp.gone_venv_links(str(tmp_path / "absent")) == []


def test_snapshot_state(tmp_path):
    store = tmp_path / "last-good"
    assert sp.snapshot_state(str(store)) == {"exists": False, "error": None}
    store.mkdir()
    (store / "manifest.json").write_text(json.dumps({"format": 1, "files": {}, "link": None, "time": "2026-12-02T14:02:14Z"}))
    assert sp.snapshot_state(str(store)) == {"exists": True, "error": None}
    (store / "manifest.json").write_text("{truncated")
    state = sp.snapshot_state(str(store))
    assert state["exists"] and "manifest.json" in state["error"]


@pytest.mark.parametrize(
    ("marker", "venv_now", "refused"),
    [
        ({"ready": True, "venv": "/opt/sglang/venvs/a1"}, "/opt/sglang/venvs/a1", None),  # a no-op run: look
        ({"ready": True, "venv": "/opt/sglang/venvs/a1"}, None, None),  # no venv link given: look
        # this run switched the link: the running service would load the new venv's code for the sampled request
        ({"ready": True, "venv": "/opt/sglang/venvs/a1"}, "/opt/sglang/venvs/b2", "points at /opt/sglang/venvs/b2, not at the validated"),
        ({"ready": False, "venv": "/opt/sglang/venvs/a1"}, "/opt/sglang/venvs/a1", "validation did not pass"),  # validation follows
        ({}, "/opt/sglang/venvs/a1", "validation did not pass"),  # no marker (first converge)
        # a boot's validation, waiting for the answer: looked at (the judge says whether this start serves it)
        ({"ready": False, "phase": "validated", "venv": "/opt/sglang/venvs/a1"}, "/opt/sglang/venvs/a1", None),
        ({"ready": False, "phase": "not serving", "venv": "/opt/sglang/venvs/a1"}, "/opt/sglang/venvs/a1", None),
        ({"ready": False, "phase": "failed", "venv": "/opt/sglang/venvs/a1"}, "/opt/sglang/venvs/a1", "validation did not pass"),
        (None, None, "validation did not pass"),
    ],
)
def test_look_refusal(marker, venv_now, refused):
    got = sp.look_refusal(marker, venv_now)
    assert got is None if refused is None else refused in got
