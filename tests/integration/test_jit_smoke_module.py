"""jit_smoke through Ansible: a real saxpy compile with NVIDIA's nvcc 13.0 and a real FlashInfer JIT
warm-up (0.7.2.post1, compile-only: no GPU here), with a CUDA 13.0 tree unpacked from the lab mirror.
The warm-up's mechanics (build, rerun unchanged, repair) are run on FlashInfer's quantization module (packbits), a cold
build of about a minute of CPU; the sampling module's own cold build (minutes of CPU on 2 cores) is the lab's (the scenario's converge and
the boot-time re-warm), where it is the service's."""

import os
import pathlib
import shutil
import subprocess

import pytest
import yaml

from .conftest import BIN, CACHE, ROOT, ansible_module

SLIM = [
    "cuda-nvcc-13-0",
    "cuda-crt-13-0",
    "cuda-nvvm-13-0",
    "cuda-cudart-13-0",
    "cuda-cudart-dev-13-0",
    "cuda-cccl-13-0",
    "libcurand-13-0",
    "libcurand-dev-13-0",
    "cuda-driver-dev-13-0",
]


@pytest.fixture(scope="module")
def cuda_home(tmp_path_factory):
    """CUDA 13.0 as the cuda_toolkit role installs it (slim), unpacked from the lab mirror's packages."""
    repo = subprocess.run(
        ["python3", os.path.join(ROOT, "tests", "fixtures", "lab", "build_aptrepo.py"), CACHE], capture_output=True, text=True, check=True
    ).stdout.strip()
    pool = os.path.join(repo, "mirror", "debian12", "x86_64")
    root = tmp_path_factory.mktemp("cuda-root")
    with open(os.path.join(ROOT, "roles", "cuda_toolkit", "vars", "main.yml")) as fh:
        pins = yaml.safe_load(fh)["__cuda_toolkit_releases"]["13.0.2"]["packages"]  # the mirror also has 13.0.3
    for name in SLIM:
        (deb,) = [f for f in os.listdir(pool) if f.startswith("%s_%s_" % (name, pins[name]))]
        subprocess.run(["dpkg-deb", "-x", os.path.join(pool, deb), str(root)], check=True)
    return str(root / "usr" / "local" / "cuda-13.0")


def service_env(cuda_home, workspace):
    return {
        "CUDA_HOME": cuda_home,
        "PATH": cuda_home + "/bin:/usr/bin:/bin",
        "FLASHINFER_CUDA_ARCH_LIST": "12.0a",
        "FLASHINFER_WORKSPACE_BASE": str(workspace),
        "HF_TOKEN": "hf_not_a_real_token",
    }


def test_compile_only(cuda_home, tmp_path):
    res = ansible_module("jit_smoke", {"environment": service_env(cuda_home, tmp_path), "warm": []})
    assert not res.get("failed"), res.get("msg")
    steps = res["steps"]
    assert steps["compile"]["ok"] and steps["compile"]["archs"] == ["sm_120a"] and steps["compile"]["cuda_home"] == cuda_home
    assert steps["launch"] == {"launched": False, "ok": None, "reason": "no GPU device node (/dev/nvidia0)"}
    assert res["changed"] is False and res["launched"] is False


def test_the_compile_runs_as_the_service_user_never_root(cuda_home, tmp_path):
    """Issue 58 item 1: with a service user, nvcc and the host compiler it calls run as that user. A TEST DOUBLE g++ and
    gcc first on the unit's PATH (what an environment file others could write would plant) record who runs them, then
    run the real ones; the compile itself is real."""
    spy, seen = tmp_path / "spy", tmp_path / "seen"
    spy.mkdir()
    seen.mkdir()
    seen.chmod(0o777)
    for name in ("gcc", "g++"):
        (spy / name).write_text('#!/bin/sh\nid -un >> %s/%s\nexec /usr/bin/%s "$@"\n' % (seen, name, name))
        (spy / name).chmod(0o755)
    for path in [tmp_path, *tmp_path.parents, *pathlib.Path(cuda_home).parents]:
        if str(path).startswith("/tmp/") and path.stat().st_uid == 0:
            path.chmod(path.stat().st_mode | 0o011)  # pytest's directories are root's 0700: nobody may traverse them
    env = dict(service_env(cuda_home, tmp_path), PATH="%s:%s/bin:/usr/bin:/bin" % (spy, cuda_home))
    res = ansible_module("jit_smoke", {"environment": env, "warm": [], "user": "nobody"})
    assert not res.get("failed"), res.get("msg")
    assert res["steps"]["compile"]["ok"]
    ran = {p.name: p.read_text().split() for p in seen.iterdir()}
    assert ran and all(who == ["nobody"] * len(who) for who in ran.values()), ran


def test_warm_then_rerun_is_unchanged(oracle_venv, cuda_home, tmp_path):
    env = service_env(cuda_home, tmp_path)
    args = {"venv": oracle_venv, "environment": env, "warm": ["quantization"]}
    first = ansible_module("jit_smoke", args)
    assert not first.get("failed"), first.get("msg")
    (module,) = first["steps"]["warm"]["modules"]
    assert first["changed"] is True and module["name"] == "quantization" and module["compiled"] and module["exists"]
    assert first["steps"]["warm"]["cache_dir"] == str(tmp_path / ".cache" / "flashinfer" / "0.7.2.post1" / "120a")
    assert os.path.exists(module["library"])
    second = ansible_module("jit_smoke", args)
    assert second["changed"] is False and second["steps"]["warm"]["modules"][0]["compiled"] is False
    assert second["steps"]["warm"]["modules"][0]["loads"]  # compiled False above: the library as it was
    # a truncated library: ninja sees nothing to do, loading it kills the loader (SIGBUS); the smoke rebuilds it
    with open(module["library"], "r+b") as fh:
        fh.truncate(4096)
    third = ansible_module("jit_smoke", args)
    (repaired,) = third["steps"]["warm"]["modules"]
    assert not third.get("failed"), third.get("msg")
    assert third["changed"] is True and repaired["repaired"] == "killed by signal 7" and repaired["compiled"] and repaired["loads"]
    assert os.path.getsize(module["library"]) > 4096


def test_toolkit_without_curand_fails_the_warm_up(oracle_venv, cuda_home, tmp_path):
    broken = tmp_path / "cuda-13.0"
    shutil.copytree(cuda_home, broken, symlinks=True)
    os.remove(broken / "targets" / "x86_64-linux" / "include" / "curand.h")
    res = ansible_module("jit_smoke", {"venv": oracle_venv, "environment": service_env(str(broken), tmp_path / "ws")})
    assert res["failed"] and "FlashInfer's JIT warm-up failed in the service environment" in res["msg"]
    assert "curand.h" in res["steps"]["warm"]["error"] + res["stdout"] + res["stderr"]


def test_check_mode_runs_nothing(cuda_home, tmp_path):
    res = ansible_module("jit_smoke", {"environment": service_env(cuda_home, tmp_path), "warm": []}, extra_args=["--check"])
    assert res["changed"] is False and res["steps"] == {} and not res.get("skipped")


def test_bad_input():
    res = ansible_module("jit_smoke", {"environment": {"CUDA_HOME": "/usr/local/cuda-13.0"}})
    assert res["failed"] and "needs venv" in res["msg"]
    res = ansible_module("jit_smoke", {"environment": {"CUDA_HOME": "/usr/local/cuda-13.0"}, "warm": [], "archs": ["sm_120"]})
    assert res["failed"] and "archs: arch 'sm_120' is not MAJOR.MINOR[a|f]" in res["msg"]


def test_ansible_doc_renders():
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))
    out = subprocess.run(
        [os.path.join(BIN, "ansible-doc"), "blackwell.inference.jit_smoke"], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    ).stdout
    for section in ("OPTIONS", "EXAMPLES:", "RETURN VALUES:", "launch", "warm"):
        assert section in out
