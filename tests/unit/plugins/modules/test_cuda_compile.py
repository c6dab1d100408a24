"""cuda_compile: nvcc from an argument list with the kernel on stdin, for each toolkit and arch the record does not vouch
for; every compile reported, a failure fails the module with nvcc's output, the record written (JSON, 0644) when it
changes and not live, never in check mode. nvcc's answers are 13.0.88's on this machine."""

import stat

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.cuda import plan as cp
from ansible_collections.blackwell.inference.plugins.modules import cuda_compile as mod

from .fakemodule import run_main

TK13 = {"path": "/usr/local/cuda-13.0", "dir_version": "13.0", "version": "13.0", "release": "13.0.88", "identity": "aaaa000011112222"}
NVCC = "/usr/local/cuda-13.0/bin/nvcc"
BAD_ARCH = "nvcc fatal   : Unsupported gpu architecture 'sm_999'\n"


def params(tmp_path, **kw):
    return dict(
        {"root": "/usr/local", "versions": ["13.0"], "archs": ["sm_120a"], "toolkits": [TK13], "record": {}},
        compile_record=str(tmp_path / "lib" / "cuda-compiles.json"),
        **kw,
    )


@pytest.fixture(autouse=True)
def chowned(monkeypatch):
    """The record's chown to root, recorded instead of made (the tests need not run as root)."""
    calls = []
    monkeypatch.setattr(mod.os, "chown", lambda path, uid, gid: calls.append((path, uid, gid)))
    return calls


def test_a_compile_that_passed_is_recorded(tmp_path, monkeypatch, chowned):
    p = params(tmp_path, versions=["13.0", "12.9"])  # 12.9 is not there: not compiled for
    got, calls = run_main(monkeypatch, mod, p, {NVCC: (0, "", "")})
    assert calls == [(cp.compile_argv("/usr/local", "13.0", "sm_120a"), cp.KERNEL)]
    assert not got["failed"] and got["changed"] and got["recorded"]
    assert got["results"] == [
        {"version": "13.0", "arch": "sm_120a", "skipped": False, "cmd": calls[0][0], "rc": 0, "stdout": "", "stderr": ""},
        {"version": "12.9", "arch": "sm_120a", "skipped": True},
    ]
    assert got["record"] == {"/usr/local/cuda-13.0": {"sm_120a": "aaaa000011112222"}}
    path = tmp_path / "lib" / "cuda-compiles.json"
    assert path.read_text() == cp.compile_record_text(got["record"]) and stat.S_IMODE(path.stat().st_mode) == 0o644
    assert chowned == [(str(path), 0, 0)]
    # a rerun: the record vouches for it, nothing compiles, nothing is written
    got, calls = run_main(monkeypatch, mod, dict(p, record=got["record"]), {})
    assert calls == [] and not got["changed"] and [r["skipped"] for r in got["results"]] == [True, True] and len(chowned) == 1


def test_a_record_that_cannot_be_written_fails_naming_it(tmp_path, monkeypatch):
    def refuse(path, uid, gid):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(mod.os, "chown", refuse)
    got, _calls = run_main(monkeypatch, mod, params(tmp_path), {NVCC: (0, "", "")})
    assert got["failed"] and got["msg"] == "%s: [Errno 1] Operation not permitted" % (tmp_path / "lib" / "cuda-compiles.json")


def test_check_mode_compiles_and_writes_nothing(tmp_path, monkeypatch):
    got, calls = run_main(monkeypatch, mod, params(tmp_path), {NVCC: (0, "", "")}, check_mode=True)
    assert len(calls) == 1 and got["changed"] and got["recorded"] and not (tmp_path / "lib").exists()


def test_live_compiles_every_one_and_records_nothing(tmp_path, monkeypatch):
    record = {"/usr/local/cuda-13.0": {"sm_120a": "aaaa000011112222"}}
    got, calls = run_main(monkeypatch, mod, params(tmp_path, record=record, archs=["sm_120a", "sm_100a"], live=True), {NVCC: (0, "", "")})
    assert len(calls) == 2 and not got["changed"] and not got["recorded"] and not (tmp_path / "lib").exists()
    assert got["record"] == {"/usr/local/cuda-13.0": {"sm_120a": "aaaa000011112222", "sm_100a": "aaaa000011112222"}}


def test_a_failed_compile_fails_with_nvcc_output_after_every_compile_ran(tmp_path, monkeypatch):
    answers = {NVCC: (1, "", BAD_ARCH)}
    got, calls = run_main(monkeypatch, mod, params(tmp_path, archs=["sm_999", "sm_998"]), answers)
    assert len(calls) == 2 and got["failed"] and not got["changed"] and not got["recorded"] and not (tmp_path / "lib").exists()
    assert got["msg"].startswith(
        "the verify kernel did not compile (non-zero return code): /usr/local/cuda-13.0/bin/nvcc -arch=sm_999: rc 1:"
        " nvcc fatal   : Unsupported gpu architecture 'sm_999'; /usr/local/cuda-13.0/bin/nvcc -arch=sm_998: rc 1"
    )
    assert (got["cmd"], got["rc"], got["stdout"], got["stderr"]) == (cp.compile_argv("/usr/local", "13.0", "sm_999"), 1, "", BAD_ARCH.rstrip("\n"))
    assert [r["rc"] for r in got["results"]] == [1, 1]


def test_a_missing_nvcc_is_a_failed_compile(tmp_path, monkeypatch):
    missing = FileNotFoundError(2, "No such file or directory", NVCC)
    got, _calls = run_main(monkeypatch, mod, params(tmp_path), {NVCC: missing})
    assert got["failed"] and got["rc"] == 2 and "No such file or directory" in got["msg"]
