"""What the links are on a host and what a pin would do, read without applying it (toolkit_probe's `links`): a
runfile-style host the pin still has to take over, and a host the role already pinned, where nothing is needed."""

import json

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.cuda import link_host as host

from .test_link import NO_GROUP, QUERY_MANUAL_12_8


class _Res:
    def __init__(self, stdout, rc, os_error=None):
        self.stdout, self.rc, self.stderr, self.os_error = stdout, rc, "", os_error

    def as_dict(self):
        return {"rc": self.rc, "stdout": self.stdout, "stderr": self.stderr}


def _runner(answers):
    calls = []

    def run(argv):
        calls.append(argv)
        return answers[argv[-1]]

    return run, calls


@pytest.fixture
def root(tmp_path, monkeypatch):
    (tmp_path / "local" / "cuda-12.8" / "bin").mkdir(parents=True)
    (tmp_path / "local" / "cuda-13.0" / "bin").mkdir(parents=True)
    (tmp_path / "alternatives").mkdir()
    monkeypatch.setattr(host, "ALTERNATIVES_DIR", str(tmp_path / "alternatives"))
    return tmp_path


def test_a_runfile_link_still_to_pin_is_needed_and_nothing_is_applied(root):
    local = root / "local"
    (local / "cuda").symlink_to(local / "cuda-12.8")  # the runfile's plain link
    run, calls = _runner({"cuda": _Res(*NO_GROUP)})
    out = host.read(run, str(local), str(root / "cuda-links.json"), ["13.0"], "")
    assert out["needed"] and out["error"] is None and out["recorded"]
    assert [a[:2] for a in out["actions"]] == [["update-alternatives", "--install"], ["update-alternatives", "--set"]]
    assert calls == [["update-alternatives", "--query", "cuda"]]
    assert (local / "cuda").readlink() == local / "cuda-12.8" and not (root / "cuda-links.json").exists()


def test_a_pinned_host_needs_nothing(root):
    local = root / "local"
    (root / "alternatives" / "cuda").symlink_to(local / "cuda-12.8")
    (local / "cuda").symlink_to(root / "alternatives" / "cuda")
    (root / "cuda-links.json").write_text(json.dumps({"version": 1, "links": {str(local / "cuda"): str(local / "cuda-12.8")}}))
    query = QUERY_MANUAL_12_8.replace("/usr/local", str(local))
    run, calls = _runner({"cuda": _Res(query, 0)})
    out = host.read(run, str(local), str(root / "cuda-links.json"), ["13.0"], "")
    assert len(calls) == 1
    assert not out["needed"] and out["actions"] == [] and out["refusals"] == [] and out["pending"] == []
    assert out["kept"] == {"path": str(local / "cuda-12.8"), "version": "12.8"}


@pytest.mark.parametrize(
    ("record", "answer", "match"),
    [
        ("not json", _Res(*NO_GROUP), "cannot be read"),
        (None, _Res("", 1), "update-alternatives --query cuda failed"),
    ],
)
def test_what_cannot_be_read_is_left_to_the_pin_to_report(root, record, answer, match):
    local = root / "local"
    if record is not None:
        (root / "cuda-links.json").write_text(record)
    run, calls = _runner({"cuda": answer})
    out = host.read(run, str(local), str(root / "cuda-links.json"), ["13.0"], "")
    assert out["needed"] and match in out["error"]
    assert len(calls) == (0 if record else 1)


def test_a_link_moved_by_hand_is_what_a_verify_run_fails_on(root):
    local = root / "local"
    (root / "alternatives" / "cuda").symlink_to(local / "cuda-12.8")
    (local / "cuda").symlink_to(local / "cuda-13.0")  # `ln -sfn` by hand, over the alternatives link
    (root / "cuda-links.json").write_text(json.dumps({"version": 1, "links": {str(local / "cuda"): str(local / "cuda-12.8")}}))
    run, calls = _runner({"cuda": _Res(QUERY_MANUAL_12_8.replace("/usr/local", str(local)), 0)})
    out = host.read(run, str(local), str(root / "cuda-links.json"), ["13.0"], "")
    assert len(calls) == 1 and out["needed"]  # the pin puts it back
    assert out["verify_refusal"] == (
        "moved behind the role's back: %s -> %s (recorded: %s); a run without --tags verify puts it back"
        % (local / "cuda", local / "cuda-13.0", local / "cuda-12.8")
    )
    assert host.verify_refusal([]) == ""
