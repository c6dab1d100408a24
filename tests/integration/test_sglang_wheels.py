"""SGLang's layer over FlashInfer's inputs (module_utils/sglang/rules.py) against the real SGLang wheels from PyPI.

Each wheel of the versions below is downloaded once (cached by the list, under the lab cache) and read, never
installed or imported: its own `set_cuda_arch()` (srt/utils/common.py, srt/utils.py before 0.5.3) runs against a
GPU of each compute capability with FlashInfer available and not, its model runner must call it when it loads the
model, and its `import sglang` must default FlashInfer's workspace exactly from the version the table says. The
table is a model of this code; only these facts carry over, no SGLang code is in the collection.
"""

import ast
import hashlib
import os
import re
import shutil
import subprocess
import sys
import types
import zipfile

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.sglang import rules as sglang_rules

CACHE = os.environ.get("BLACKWELL_CACHE_DIR", "/var/cache/blackwell-inference")
# every boundary of the table on both sides: no set_cuda_arch yet (0.4.0), TORCH_CUDA_ARCH_LIST (0.4.5 .. 0.5.4.post2),
# FLASHINFER_CUDA_ARCH_LIST from the post release 0.5.4.post3, the workspace default from 0.5.18 (not 0.5.17), the newest
VERSIONS = ("0.4.0", "0.4.5", "0.4.10", "0.5.3", "0.5.4.post2", "0.5.4.post3", "0.5.5", "0.5.10", "0.5.17", "0.5.18", "0.5.23")
# the wheels' own files: no compiled part is read, so one platform's wheel stands for all
PLATFORM = ["--python-version", "3.12", "--implementation", "cp", "--platform", "manylinux_2_34_x86_64", "--platform", "any"]
CCS = ((8, 9), (9, 0), (10, 0), (12, 0), (12, 1))


@pytest.fixture(scope="module")
def wheels():
    key = hashlib.sha256(repr((VERSIONS, PLATFORM)).encode()).hexdigest()[:12]
    where = os.path.join(CACHE, "sglang-wheels-" + key)
    if not os.path.exists(os.path.join(where, ".complete")):
        tmp = where + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        pip = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps", "--only-binary=:all:", *PLATFORM]
        res = subprocess.run([*pip, "-d", tmp, *("sglang==" + v for v in VERSIONS)], capture_output=True, text=True, check=False)
        if res.returncode != 0:  # pip resolves the list as one set: fetch them one by one then
            for v in VERSIONS:
                one = subprocess.run([*pip, "-d", tmp, "sglang==" + v], capture_output=True, text=True, check=False)
                assert one.returncode == 0, "pip download sglang==%s failed:\n%s" % (v, one.stderr[-2000:])
        open(os.path.join(tmp, ".complete"), "w").close()
        shutil.rmtree(where, ignore_errors=True)
        os.rename(tmp, where)
        for stale in os.listdir(CACHE):  # lists of older inputs are never read again
            if stale.startswith("sglang-wheels-") and os.path.join(CACHE, stale) not in (where, tmp):
                shutil.rmtree(os.path.join(CACHE, stale), ignore_errors=True)
    found = {}
    for name in os.listdir(where):
        m = re.match(r"^sglang-([^-]+)-", name)
        if m:
            found[m.group(1)] = os.path.join(where, name)
    assert sorted(found) == sorted(VERSIONS), found
    return found


def source(wheel, *paths):
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        for path in paths:
            if path in names:
                return path, zf.read(path).decode()
    return None, None


def set_cuda_arch(wheel):
    """The wheel's own set_cuda_arch, compiled alone with the names it uses given: torch's capability, FlashInfer's
    availability, os.environ. None when the wheel has none."""
    path, text = source(wheel, "sglang/srt/utils/common.py", "sglang/srt/utils.py")
    assert path, "no srt/utils in %s" % wheel
    func = next((n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == "set_cuda_arch"), None)
    if func is None:
        return None
    code = compile(ast.Module(body=[func], type_ignores=[]), "%s:%s" % (os.path.basename(wheel), path), "exec")

    def call(cc, flashinfer_available):
        environ = {}
        namespace = {
            "os": types.SimpleNamespace(environ=environ),
            "torch": types.SimpleNamespace(cuda=types.SimpleNamespace(get_device_capability=lambda *_a: cc)),
            "is_flashinfer_available": lambda: flashinfer_available,
        }
        exec(code, namespace)  # noqa: S102 - the wheel's own function, read from the wheel
        namespace["set_cuda_arch"]()
        return environ

    return call


@pytest.mark.parametrize("version", VERSIONS)
def test_set_cuda_arch_of_each_wheel_does_what_the_table_says(wheels, version):
    var, note = sglang_rules.sets(version)
    call = set_cuda_arch(wheels[version])
    if call is None:
        assert var is None and "predates" in note
        return
    assert note is None, note
    for cc in CCS:
        written = call(cc, True)
        assert list(written) == [var], (version, cc, written)
        model = sglang_rules.worker_env(version, {"SGLANG_CACHE_DIR": "/c", "FLASHINFER_WORKSPACE_BASE": "/w"}, "%d.%d" % cc)
        if var == "FLASHINFER_CUDA_ARCH_LIST":
            # what FlashInfer sees in that worker: the model's list, spelled as set_cuda_arch spells it
            assert written[var] == model["FLASHINFER_CUDA_ARCH_LIST"] == sglang_rules.worker_arch_list("%d.%d" % cc)
        else:
            # TORCH_CUDA_ARCH_LIST only: FlashInfer's own list holds in the worker (the model gives no worker env)
            assert model is None
        # without FlashInfer importable it writes nothing (SGLANG_IS_FLASHINFER_AVAILABLE=false makes it so)
        assert call(cc, False) == {}


@pytest.mark.parametrize("version", VERSIONS)
def test_every_worker_calls_it_when_it_loads_the_model(wheels, version):
    if set_cuda_arch(wheels[version]) is None:
        return
    path, text = source(wheels[version], "sglang/srt/model_executor/model_runner.py")
    runner = next(n for n in ast.parse(text).body if isinstance(n, ast.ClassDef) and n.name == "ModelRunner")
    load = next(n for n in runner.body if isinstance(n, ast.FunctionDef) and n.name == "load_model")
    calls = [n.func.id for n in ast.walk(load) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
    assert "set_cuda_arch" in calls, "%s: ModelRunner.load_model does not call set_cuda_arch" % path


@pytest.mark.parametrize("version", VERSIONS)
def test_import_sglang_defaults_flashinfers_workspace_from_the_version_the_table_says(wheels, version):
    _path, environ = source(wheels[version], "sglang/srt/environ.py")
    _path, init = source(wheels[version], "sglang/__init__.py")
    defaults = False
    if environ and "redirect_third_party_caches()" in (init or ""):
        tree = ast.parse(environ)
        func = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "third_party_cache_defaults"), None)
        keys = [k.value for n in ast.walk(func) if isinstance(n, ast.Dict) for k in n.keys if isinstance(k, ast.Constant)] if func else []
        defaults = "FLASHINFER_WORKSPACE_BASE" in keys
    model = sglang_rules.worker_env(version, {"SGLANG_CACHE_DIR": "/c"}, "12.0")
    assert defaults == bool(model and model.get("FLASHINFER_WORKSPACE_BASE") == "/c"), (version, defaults, model)
