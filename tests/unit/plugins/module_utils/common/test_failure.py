"""A failure in one screen (issue 45 item 6): the cause picked from real outputs, bounded fields, the log; and the
jit_smoke module's failure path fed a 40 KB warm-up failure (a full JIT cache disk)."""

import datetime
import json
import os
import stat

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.common import env as service_env
from ansible_collections.blackwell.inference.plugins.module_utils.common import failure
from ansible_collections.blackwell.inference.plugins.module_utils.flashinfer import jit_smoke as js
from ansible_collections.blackwell.inference.plugins.modules import jit_smoke as mod

WS = "/var/cache/sglang/jit/2c26817414e442ed/.cache/flashinfer/0.7.4/120a"
VENV = "/opt/sglang/venvs/2c26817414e442ed/lib/python3.11/site-packages"
NVCC = (
    "/usr/local/cuda-13.0/bin/nvcc --generate-dependencies-with-compile --dependency-output {o}.d -DPy_LIMITED_API=0x03090000 "
    "-D_GLIBCXX_USE_CXX11_ABI=1 -isystem /usr/include/python3.11 -isystem /usr/local/cuda-13.0/include "
    f"-isystem /usr/local/cuda-13.0/include/cccl -isystem {VENV}/tvm_ffi/include -isystem {VENV}/flashinfer/data/include "
    f"-isystem {VENV}/flashinfer/data/csrc -isystem {VENV}/flashinfer/data/cutlass/include "
    "--compiler-options=-fPIC --expt-relaxed-constexpr -gencode=arch=compute_120a,code=sm_120a -O3 -std=c++17 "
    "--threads=1 -use_fast_math -DFLASHINFER_ENABLE_F16 -DFLASHINFER_ENABLE_BF16 -DFLASHINFER_ENABLE_FP8_E4M3 "
    f"-DFLASHINFER_ENABLE_FP8_E5M2 -c {VENV}/flashinfer/data/csrc/{{src}} -o {WS}/cached_ops/sampling/{{o}}"
)

# A ninja build of FlashInfer's sampling module on a full disk: GNU as cannot write nvcc's host object.
NINJA_ENOSPC = "\n".join(
    [
        "[1/4] " + NVCC.format(src="renorm.cu", o="renorm.cuda.o"),
        "[2/4] " + NVCC.format(src="sampling.cu", o="sampling.cuda.o"),
        "FAILED: [code=1] %s/cached_ops/sampling/sampling.cuda.o " % WS,
        NVCC.format(src="sampling.cu", o="sampling.cuda.o"),
        "Fatal error: can't write 5872 bytes to section .nv_fatbin of /tmp/tmpxft_0001a2b7_00000000-11_sampling.o: 'No space left on device'",
        "Fatal error: /tmp/tmpxft_0001a2b7_00000000-11_sampling.o: No space left on device",
        "ninja: build stopped: subcommand failed.",
    ]
)
NVCC_NO_CURAND = "\n".join(
    [
        "[1/4] " + NVCC.format(src="sampling.cu", o="sampling.cuda.o"),
        "FAILED: [code=1] %s/cached_ops/sampling/sampling.cuda.o " % WS,
        NVCC.format(src="sampling.cu", o="sampling.cuda.o"),
        "In file included from %s/flashinfer/data/csrc/sampling.cu:16:" % VENV,
        "%s/flashinfer/data/include/flashinfer/sampling.cuh:19:10: fatal error: curand.h: No such file or directory" % VENV,
        "   19 | #include <curand.h>",
        "      |          ^~~~~~~~~~",
        "compilation terminated.",
        "ninja: build stopped: subcommand failed.",
    ]
)
TRACEBACK_ENOSPC = """Traceback (most recent call last):
  File "<string>", line 45, in <module>
  File "/opt/sglang/venvs/2c26817414e442ed/lib/python3.11/site-packages/flashinfer/jit/core.py", line 297, in build
    self.write_ninja()
  File "/opt/sglang/venvs/2c26817414e442ed/lib/python3.11/site-packages/flashinfer/jit/core.py", line 283, in write_ninja
    write_if_different(self.ninja_path, content)
  File "/opt/sglang/venvs/2c26817414e442ed/lib/python3.11/site-packages/flashinfer/jit/utils.py", line 27, in write_if_different
    with open(path, "w") as f:
OSError: [Errno 28] No space left on device
"""
TRACEBACK_IMPORT = """Traceback (most recent call last):
  File "<string>", line 40, in <module>
  File "/opt/sglang/venvs/2c26817414e442ed/lib/python3.11/site-packages/flashinfer/__init__.py", line 21, in <module>
    from .activation import gelu_and_mul as gelu_and_mul
  File "/opt/sglang/venvs/2c26817414e442ed/lib/python3.11/site-packages/flashinfer/activation.py", line 22, in <module>
    import torch
ModuleNotFoundError: No module named 'torch'
"""
PIP_NO_VERSION = """Looking in links: /var/lib/blackwell-inference/wheelhouse
Processing /var/lib/blackwell-inference/wheelhouse/flashinfer_python-0.7.4-py3-none-any.whl
ERROR: Could not find a version that satisfies the requirement torch==2.9.1 (from versions: none)
ERROR: No matching distribution found for torch==2.9.1
"""
PIP_ENOSPC = """Collecting torch==2.9.1
  Using cached torch-2.9.1-cp311-cp311-manylinux_2_28_x86_64.whl (899.7 MB)
Installing collected packages: torch
ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device

"""
NVCC_ARCH = "nvcc fatal   : Unsupported gpu architecture 'compute_121a'\n"
# the warm-up's result line: the exception's text (the whole ninja output) escaped into one JSON line
WARM_JSON = json.dumps({"modules": [], "error": "RuntimeError: Ninja build failed. Ninja output:\n" + NINJA_ENOSPC * 3, "gpu_run": None})


@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        # the line that names the full disk, not ninja's "FAILED:" or its echoed nvcc command
        (("RuntimeError: Ninja build failed. Ninja output:\n" + NINJA_ENOSPC,), NINJA_ENOSPC.splitlines()[4]),
        (("RuntimeError: Ninja build failed. Ninja output:\n" + NVCC_NO_CURAND,), NVCC_NO_CURAND.splitlines()[4]),
        ((TRACEBACK_ENOSPC,), "OSError: [Errno 28] No space left on device"),
        ((TRACEBACK_IMPORT,), "ModuleNotFoundError: No module named 'torch'"),
        ((PIP_NO_VERSION,), "ERROR: Could not find a version that satisfies the requirement torch==2.9.1 (from versions: none)"),
        ((PIP_ENOSPC,), "ERROR: Could not install packages due to an OSError: [Errno 28] No space left on device"),
        ((NVCC_ARCH,), "nvcc fatal   : Unsupported gpu architecture 'compute_121a'"),
        # the failure's own text first, then stderr, then stdout
        (
            ("the saxpy kernel ran but failed: cuda error: no kernel image is available for execution on the device", "", ""),
            "the saxpy kernel ran but failed: cuda error: no kernel image is available for execution on the device",
        ),
        (("", "warning: a\nSegmentation fault (core dumped)\n", "{}"), "Segmentation fault (core dumped)"),
        (("", "", ""), ""),
    ],
)
def test_cause_of_real_outputs(texts, expected):
    assert failure.cause(*texts) == expected


def test_cause_in_one_long_json_line_is_a_window_around_it():
    got = failure.cause("", "", WARM_JSON)
    assert "No space left on device" in got and len(got) <= failure.CAUSE_CHARS


@pytest.mark.parametrize(
    ("text", "max_lines", "max_chars", "kept"),
    [
        ("a\nb\n", 40, 4096, "a\nb\n"),
        ("".join("line %d\n" % i for i in range(100)), 40, 4096, "".join("line %d\n" % i for i in range(60, 100))),
        ("x" * 10000, 40, 4096, "x" * 4096),
    ],
)
def test_bound_keeps_the_end_and_names_the_log(text, max_lines, max_chars, kept):
    got = failure.bound(text, "/var/log/blackwell-inference/x.log", max_lines, max_chars)
    if kept == text:
        assert got == text
    else:
        note, rest = got.split("\n", 1)
        assert rest == kept and note == "[... %d of %d characters cut; the full text is in /var/log/blackwell-inference/x.log]" % (
            len(text) - len(kept),
            len(text),
        )


def test_short_argv_replaces_a_script_by_its_length():
    argv = ["/opt/sglang/current/bin/python", "-c", js.WARM_SCRIPT, "sampling"]
    got = failure.short_argv(argv, "/l.log")
    assert got == ["/opt/sglang/current/bin/python", "-c", "<%d characters; in /l.log>" % len(js.WARM_SCRIPT), "sampling"]


@pytest.mark.parametrize(
    ("what", "why", "first"),
    [
        (
            "FlashInfer's JIT warm-up failed",
            "OSError: [Errno 28] No space left on device",
            "FlashInfer's JIT warm-up failed: OSError: [Errno 28] No space left on device",
        ),
        ("the kernel ran but failed: cuda error: x", "the kernel ran but failed: cuda error: x", "the kernel ran but failed: cuda error: x"),
        ("launch=always but no GPU", "", "launch=always but no GPU"),
    ],
)
def test_message_lines(what, why, first):
    assert failure.message(what, why, "nothing was changed", "/l.log").splitlines() == [
        first,
        "nothing was changed",
        "full output (commands, stdout, stderr): /l.log",
    ]
    assert (
        failure.message(what, why, log_error="/var/log/x: No space left on device").splitlines()[-1]
        == "the full output could not be logged: /var/log/x: No space left on device"
    )


def read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


NOW = datetime.datetime(2026, 12, 6, 14, 23, 1, tzinfo=datetime.UTC)


def test_log_is_new_private_and_named_by_module_unit_step_and_time(tmp_path):
    log_dir = str(tmp_path / "logs")
    first = failure.write_log(failure.log_name("jit_smoke", "warm", "sglang-k26.service", NOW), "one\n", log_dir)
    second = failure.write_log(failure.log_name("jit_smoke", "warm", "sglang-k26.service", NOW), "two\n", log_dir)
    assert os.path.basename(first) == "jit_smoke-sglang-k26.service-warm-20261206T142301Z.log"
    assert os.path.basename(second) == "jit_smoke-sglang-k26.service-warm-20261206T142301Z-1.log"
    assert read(first) == "one\n" and read(second) == "two\n"
    assert stat.S_IMODE(os.stat(first).st_mode) == 0o640 and stat.S_IMODE(os.stat(log_dir).st_mode) == 0o750


def test_a_log_that_cannot_be_written_is_said_and_the_fields_stay_bounded(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("")
    msg, fields = failure.report(
        "jit_smoke", "warm", "it failed:\n" + NINJA_ENOSPC, {"cmd": ["x"], "rc": 1, "stdout": "y\n" * 5000, "stderr": ""}, log_dir=str(blocked / "logs")
    )
    assert fields["log"] is None and msg.splitlines()[-1].startswith("the full output could not be logged: %s" % (blocked / "logs"))
    assert len(fields["stdout"]) < 200


def warm_failure(stdout, stderr):
    """The jit_smoke module's failure path as it runs: run_steps over a compiled kernel, no GPU, and the warm-up's
    command result; returns fail_json's arguments."""
    argv, _env, _data = service_env.python_call("/opt/sglang/current/bin/python", js.WARM_SCRIPT, ["sampling"], {"CUDA_HOME": "/usr/local/cuda-13.0"})
    argv = ["setpriv", "--reuid=998", "--regid=998", "--init-groups", "--", *argv]
    output = {"cmd": argv, "rc": 1, "stdout": stdout, "stderr": stderr, "os_error": None}

    def compile_saxpy():
        return True, {"ok": True, "seconds": 1.9, "archs": ["sm_120a"], "nvcc": "/usr/local/cuda-13.0/bin/nvcc", "cuda_home": "/usr/local/cuda-13.0"}, {"rc": 0}

    def warm():
        ok, step = js.warm_result(output["rc"], stdout, stderr, 41.5)
        return ok, step, output

    text, steps, out = js.run_steps(compile_saxpy, None, warm, "auto", False)
    return text, steps, out


def test_a_40kb_warm_up_failure_is_a_few_lines_naming_the_cause_and_the_log(tmp_path):
    # FlashInfer's exception carries the whole ninja output (every nvcc command) into the result line, several times
    ninja = "\n".join(["[%d/240] " % i + NVCC.format(src="sampling.cu", o="k%d.cuda.o" % i) for i in range(1, 24)] + NINJA_ENOSPC.splitlines())
    stdout = (
        "2026-12-06 14:22:10 flashinfer.jit: Loading JIT ops: sampling\n"
        + json.dumps({"modules": [], "error": "RuntimeError: Ninja build failed. Ninja output:\n" + ninja, "gpu_run": None})
        + "\n"
    )
    stderr = "/opt/sglang/venvs/2c26817414e442ed/lib/python3.11/site-packages/torch/cuda/__init__.py:63: UserWarning: CUDA initialization: no NVIDIA driver\n"
    text, steps, output = warm_failure(stdout, stderr)
    assert text and text.startswith("FlashInfer's JIT warm-up failed in the service environment: RuntimeError: Ninja build failed.")
    before = json.dumps(dict(output, msg=text, steps=steps))  # what the module answered before: the whole of it
    assert len(before) > 40000 and before.count("No space left on device") >= 4

    log_dir = tmp_path / "log"
    res = mod.failed(text, steps, output, "sglang-k26.service", str(log_dir), NOW)
    msg = res["msg"]
    log = str(log_dir / "jit_smoke-sglang-k26.service-warm-20261206T142301Z.log")
    assert len(msg.splitlines()) <= 5 and len(msg) <= 1000, msg
    assert msg.splitlines()[0] == (
        "FlashInfer's JIT warm-up failed in the service environment: Fatal error: can't write 5872 bytes to section .nv_fatbin of "
        "/tmp/tmpxft_0001a2b7_00000000-11_sampling.o: 'No space left on device'"
    )
    assert msg.splitlines()[-1] == "full output (commands, stdout, stderr): %s" % log and res["log"] == log
    # the log holds the full output: the command (the script once), the whole ninja output, stderr
    content = read(log)
    assert stdout.strip() in content and stderr.strip() in content and js.WARM_SCRIPT.strip().splitlines()[-1] in content
    assert stat.S_IMODE(os.stat(log).st_mode) == 0o640
    # the result keeps rc/stdout/stderr, bounded, and never the script's source
    after = json.dumps(res)
    assert res["rc"] == 1 and len(res["stdout"]) <= failure.MAX_CHARS + 200 and res["stderr"] == stderr
    assert "flashinfer.jit.sampling:gen_sampling_module" not in after and "<%d characters; in %s>" % (len(js.WARM_SCRIPT), log) in res["cmd"]
    assert res["steps"]["warm"]["error"] == msg.splitlines()[0].split(": ", 1)[1] and res["steps"]["compile"] == steps["compile"]
    assert len(after) < 8000, len(after)
    print("warm-up failure: before %d characters (msg %d), after %d (msg %d, %d lines)" % (len(before), len(text), len(after), len(msg), len(msg.splitlines())))


def test_the_curand_build_failure_names_the_header(tmp_path):
    stdout = json.dumps({"modules": [], "error": "RuntimeError: Ninja build failed. Ninja output:\n" + NVCC_NO_CURAND, "gpu_run": None}) + "\n"
    text, steps, output = warm_failure(stdout, "")
    res = mod.failed(text, steps, output, "sglang-k26.service", str(tmp_path), NOW)
    assert res["msg"].splitlines()[0].endswith("sampling.cuh:19:10: fatal error: curand.h: No such file or directory")


def test_a_short_failure_stays_as_it_is_and_writes_no_log(tmp_path):
    fields = {"cmd": ["dpkg-query", "-W"], "rc": 2, "stdout": "", "stderr": "dpkg-query: error: unknown option\n", "unit": "x"}
    assert failure.result("toolkit_probe", "read", "dpkg-query failed", fields, failure.READ_ONLY, log_dir=str(tmp_path)) == dict(
        fields, msg="dpkg-query failed"
    )
    assert list(tmp_path.iterdir()) == []


def test_a_long_failure_of_a_read_only_module_is_cut_and_logged(tmp_path):
    # a FlashInfer probe (python -c PROBE_SCRIPT) that died of a traceback, with pip's chatter before it
    argv = ["/opt/sglang/current/bin/python", "-c", "import json\n" * 40]
    stderr = "warning\n" * 100 + TRACEBACK_IMPORT
    got = failure.result(
        "cuda_facts",
        "probe",
        "FlashInfer probe printed no result",
        {"cmd": argv, "rc": 1, "stdout": "", "stderr": stderr, "venv": "v"},
        failure.READ_ONLY,
        "sglang-k26.service",
        str(tmp_path),
        NOW,
    )
    log = str(tmp_path / "cuda_facts-sglang-k26.service-probe-20261206T142301Z.log")
    assert got["msg"].splitlines() == [
        "FlashInfer probe printed no result: ModuleNotFoundError: No module named 'torch'",
        failure.READ_ONLY,
        "full output (commands, stdout, stderr): %s" % log,
    ]
    assert got["venv"] == "v" and got["log"] == log and got["cmd"][2] == "<480 characters; in %s>" % log
    assert got["stderr"].startswith("[... ") and got["stderr"].endswith(TRACEBACK_IMPORT) and stderr in read(log)


@pytest.mark.parametrize(
    ("sizes", "max_logs", "max_bytes", "kept"),
    [
        ([10, 10, 10], 5, 100, [0, 1, 2]),  # within both caps: nothing removed
        ([10, 10, 10, 10], 2, 100, [0, 1]),  # the newest two
        ([10, 50, 10, 10], 5, 60, [0, 1]),  # 60 bytes: the two newest fit, the rest is removed
        ([500, 10, 10], 5, 100, [0]),  # the newest alone is over the cap: kept (it was just written), the rest goes
    ],
)
def test_prune_keeps_the_newest_logs_within_both_caps(tmp_path, sizes, max_logs, max_bytes, kept):
    """issue 58 item 5: the failure logs do not grow without bound. Index 0 is the newest."""
    paths = []
    for n, size in enumerate(sizes):
        path = tmp_path / ("f-%d.log" % n)
        path.write_text("x" * size)
        os.utime(path, (1000 - n, 1000 - n))
        paths.append(str(path))
    (tmp_path / "notes.txt").write_text("not a log")
    removed = failure.prune(str(tmp_path), keep=paths[0], max_logs=max_logs, max_bytes=max_bytes)
    assert sorted(removed) == sorted(p for n, p in enumerate(paths) if n not in kept)
    assert sorted(os.listdir(tmp_path)) == sorted(["notes.txt"] + ["f-%d.log" % n for n in kept])


def test_write_log_prunes_the_oldest(tmp_path, monkeypatch):
    monkeypatch.setattr(failure, "KEEP_LOGS", 3)
    for n in range(3):
        old = tmp_path / ("old-%d.log" % n)
        old.write_text("old")
        os.utime(old, (100 + n, 100 + n))
    path = failure.write_log("jit_smoke-x.log", "new", str(tmp_path))
    assert sorted(os.listdir(tmp_path)) == ["jit_smoke-x.log", "old-1.log", "old-2.log"] and path.endswith("jit_smoke-x.log")
