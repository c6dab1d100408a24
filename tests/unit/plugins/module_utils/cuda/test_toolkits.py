"""Toolkit scan over a real directory tree with real executables (nvcc banner doubles)."""

import json
import os
import stat
import sys

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.common import env as service_env
from ansible_collections.blackwell.inference.plugins.module_utils.cuda import toolkits as ct

from ..fakehost import NVCC_12_8, NVCC_13_0, real_run


def make_toolkit(root, version, banner, curand=True, stubs=True, executable=True):
    home = root / ("cuda-" + version)
    (home / "bin").mkdir(parents=True)
    nvcc = home / "bin" / "nvcc"
    nvcc.write_text("#!/bin/sh\ncat <<'EOF'\n%sEOF\n" % banner)
    nvcc.chmod(0o755 if executable else 0o644)
    (home / "include").mkdir()
    if curand:
        for h in ct.CURAND_HEADERS:
            (home / "include" / h).write_text("/* header */\n")
    if stubs:
        (home / "lib64" / "stubs").mkdir(parents=True)
        (home / "lib64" / "stubs" / "libcuda.so").write_text("")
    return home


@pytest.mark.parametrize(
    "text,want",
    [
        (NVCC_13_0, ("13.0", "13.0.88")),
        (NVCC_12_8, ("12.8", "12.8.93")),
        ("Cuda compilation tools, release 11.8, V11.8.89\n", ("11.8", "11.8.89")),
        ("gcc (Debian 12.2.0-14) 12.2.0\n", (None, None)),
    ],
)
def test_banner(text, want):
    assert ct.parse_nvcc_banner(text) == want


def test_scan(tmp_path):
    make_toolkit(tmp_path, "12.8", NVCC_12_8, curand=False, stubs=False)
    make_toolkit(tmp_path, "13.0", NVCC_13_0)
    make_toolkit(tmp_path, "12.9", NVCC_13_0, executable=False)
    (tmp_path / "cuda-13").symlink_to("cuda-13.0")  # alternative links are not toolkits
    (tmp_path / "cuda").symlink_to(tmp_path / "cuda-12.8")
    dirs = ct.find_toolkit_dirs(str(tmp_path))
    assert [os.path.basename(d) for d in dirs] == ["cuda-12.8", "cuda-12.9", "cuda-13.0"]
    info = {os.path.basename(d): ct.describe_toolkit(d, real_run) for d in dirs}
    assert info["cuda-12.8"]["version"] == "12.8" and not info["cuda-12.8"]["has_curand_headers"]
    assert info["cuda-13.0"]["version"] == "13.0" and info["cuda-13.0"]["release"] == "13.0.88"
    assert info["cuda-13.0"]["has_curand_headers"] and info["cuda-13.0"]["has_driver_stubs"]
    assert info["cuda-12.9"]["version"] is None and info["cuda-12.9"]["nvcc_error"].startswith("PermissionError")
    default = ct.default_toolkit(str(tmp_path))
    assert default["path"] == str(tmp_path / "cuda-12.8") and default["exists"]


def test_identity_follows_the_compile_chain(tmp_path):
    home = make_toolkit(tmp_path, "13.0", NVCC_13_0)
    first = ct.describe_toolkit(str(home), real_run)["identity"]
    assert first == ct.identity(str(home)) and len(first) == 16
    (home / "bin" / "ptxas").write_text("ptxas")  # a file of the chain appears (an install)
    second = ct.identity(str(home))
    assert second != first
    os.utime(home / "bin" / "ptxas", ns=(1, 1))  # the same size, another modification time (a reinstall)
    assert ct.identity(str(home)) not in (first, second)
    third = ct.identity(str(home))
    (home / "include" / "extra.h").write_text("/* not part of the chain */\n")
    assert ct.identity(str(home)) == third


def test_no_root(tmp_path):
    assert ct.find_toolkit_dirs(str(tmp_path / "missing")) == []
    assert ct.default_toolkit(str(tmp_path)) is None


def test_run_keeps_os_error_class(tmp_path):
    script = tmp_path / "x"
    script.write_text("#!/bin/sh\necho hi\n")
    assert real_run([str(script)]).os_error == "PermissionError"
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    res = real_run([str(script)])
    assert res.ok and res.stdout == "hi\n"
    assert real_run([str(tmp_path / "nope")]).os_error == "FileNotFoundError"
    # env -i: exactly the given environment, and argv[0] is looked up on *its* PATH
    assert real_run(["sh", "-c", "echo $FOO:$HOME"], env={"FOO": "bar", "PATH": "/usr/bin:/bin"}).stdout == "bar:\n"
    assert real_run(["x"], env={"PATH": str(tmp_path)}).stdout == "hi\n"
    (tmp_path / "y").write_text("#!/bin/sh\n")
    assert real_run(["y"], env={"PATH": str(tmp_path)}).os_error == "PermissionError"
    assert real_run(["sleep", "5"], timeout=1).os_error == "TimeoutExpired"


def test_split_env_keeps_secrets_for_stdin():
    public, private = service_env.split_env(
        {
            "PATH": "/bin",
            "HOME": "/root",
            "LD_LIBRARY_PATH": "/l",
            "PYTHONPATH": "/p",
            "NVCC_APPEND_FLAGS": "-g",
            "HF_TOKEN": "hf_x",
            "FLASHINFER_CUDA_ARCH_LIST": "12.0a",
        }
    )
    assert sorted(public) == ["HOME", "LD_LIBRARY_PATH", "NVCC_APPEND_FLAGS", "PATH", "PYTHONPATH"]
    assert private == {"HF_TOKEN": "hf_x", "FLASHINFER_CUDA_ARCH_LIST": "12.0a"}


def test_stdin_env_reaches_the_process(tmp_path):
    """The probe's way: env -i with the public part, the rest as JSON on stdin."""
    script = "import json, os, sys; os.environ.update(json.load(sys.stdin)); print(os.environ['HF_TOKEN'], os.environ['PATH'])"
    res = real_run([sys.executable, "-c", script], env={"PATH": "/usr/bin:/bin"}, data=json.dumps({"HF_TOKEN": "hf_x"}))
    assert res.ok and res.stdout == "hf_x /usr/bin:/bin\n"
