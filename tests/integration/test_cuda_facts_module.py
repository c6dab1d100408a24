"""cuda_facts through Ansible (`ansible localhost -m`), with the nvidia-smi double for ct200."""

import ast
import json
import os
import subprocess

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.sglang import rules as sglang_rules

from .conftest import BIN, CACHE, NVIDIA_SMI_DOUBLE, ROOT, _python311, ansible_module


def double(tmp_path, **cfg):
    path = tmp_path / "nvidia-smi.json"
    path.write_text(json.dumps(cfg))
    return {"NVIDIA_SMI_DOUBLE_CONFIG": str(path)}


def test_ct200_gpus_and_driver(tmp_path):
    res = ansible_module(
        "cuda_facts",
        {"nvidia_smi": NVIDIA_SMI_DOUBLE, "flashinfer_version": "0.7.2.post1", "environment": {"CUDA_HOME": "/usr/local/cuda-13.0"}},
        double(tmp_path),
    )
    assert res["changed"] is False
    facts = res["ansible_facts"]["blackwell_cuda"]
    assert len(facts["gpus"]) == 8
    assert {g["name"] for g in facts["gpus"]} == {"NVIDIA RTX PRO 6000 Blackwell Server Edition"}
    assert facts["compute_capabilities"] == ["12.0"]
    assert facts["driver"]["version"] == "580.95.05" and facts["driver"]["cuda_version"] == "13.0"
    assert facts["environment"]["PATH"] == "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    assert [t["version"] for t in facts["toolkits"] if t["path"] == "/usr/local/cuda-13.0"] == ["13.0"]
    fi = facts["flashinfer"]
    assert fi["accepted"] is True and fi["target_archs"] == ["120f"] and fi["cuda_version"] == "13.0"
    # one nvidia-smi call per detection
    assert sum(1 for c in res["commands_run"] if c[0].endswith("nvidia-smi")) == 1


def test_mixed_fleet_strict_flashinfer(tmp_path):
    cfg = double(
        tmp_path,
        gpus=[
            {"name": "NVIDIA H200", "compute_cap": "9.0", "memory_mib": 143771},
            {"name": "NVIDIA RTX PRO 6000 Blackwell Server Edition", "compute_cap": "12.0"},
        ],
    )
    res = ansible_module(
        "cuda_facts",
        {"nvidia_smi": NVIDIA_SMI_DOUBLE, "flashinfer_version": "0.7.0", "torch_cuda": "13.0", "environment": {"CUDA_HOME": "/usr/local/cuda-13.0"}},
        cfg,
    )
    facts = res["ansible_facts"]["blackwell_cuda"]
    assert facts["compute_capabilities"] == ["9.0", "12.0"]
    assert facts["flashinfer"]["target_archs"] == ["90a", "120f"] and facts["flashinfer"]["accepted"]


@pytest.mark.parametrize(
    "cfg,present,error",
    [
        ({"mode": "no_driver"}, False, "cannot talk to the NVIDIA driver"),
        ({"mode": "no_devices"}, True, "no NVIDIA GPU was found"),
        ({"mode": "legacy", "driver_version": "470.256.02"}, True, "compute capability unknown"),
    ],
)
def test_driver_states_are_facts_not_failures(tmp_path, cfg, present, error):
    res = ansible_module("cuda_facts", {"nvidia_smi": NVIDIA_SMI_DOUBLE}, double(tmp_path, **cfg))
    assert not res.get("failed"), res.get("msg")
    driver = res["ansible_facts"]["blackwell_cuda"]["driver"]
    assert driver["present"] is present and error in driver["error"]


def test_missing_nvidia_smi():
    res = ansible_module("cuda_facts", {"nvidia_smi": "/nonexistent/nvidia-smi"})
    facts = res["ansible_facts"]["blackwell_cuda"]
    assert facts["gpus"] == [] and facts["driver"]["present"] is False


def test_malformed_output_fails_with_command_attached(tmp_path):
    res = ansible_module("cuda_facts", {"nvidia_smi": NVIDIA_SMI_DOUBLE}, double(tmp_path, mode="garbage"))
    assert res["failed"] and "unexpected nvidia-smi output" in res["msg"]
    assert res["rc"] == 0 and "Segmentation fault" in res["stdout"] and res["cmd"][0] == NVIDIA_SMI_DOUBLE


def test_not_a_venv(tmp_path):
    res = ansible_module("cuda_facts", {"nvidia_smi": NVIDIA_SMI_DOUBLE, "venv": str(tmp_path)})
    assert res["failed"] and "is not a Python virtual environment" in res["msg"]
    assert "Traceback" not in json.dumps(res)


def test_an_optional_venv_that_is_not_there_yet_is_no_venv_and_a_link_reports_its_target(tmp_path, sglang_venv):
    missing = str(tmp_path / "opt" / "sglang" / "current")
    res = ansible_module("cuda_facts", {"nvidia_smi": NVIDIA_SMI_DOUBLE, "venv": missing, "venv_optional": True})
    facts = res["ansible_facts"]["blackwell_cuda"]
    assert not res.get("failed") and facts["venv"] is None and facts["flashinfer"]["error"].startswith("no venv given")
    assert ansible_module("cuda_facts", {"nvidia_smi": NVIDIA_SMI_DOUBLE, "venv": missing})["failed"]  # not optional: refused
    # a link (as /opt/sglang/current) resolves to the venv it points at, with or without a trailing /; a dangling one fails
    link = tmp_path / "current"
    link.symlink_to(sglang_venv)
    for given in (str(link), str(link) + "/"):
        got = ansible_module("cuda_facts", {"nvidia_smi": NVIDIA_SMI_DOUBLE, "venv": given, "venv_optional": True})["ansible_facts"]["blackwell_cuda"]["venv"]
        assert got["path"] == given and got["target"] == str(sglang_venv) and got["packages"]["sglang"] == "0.5.23"
    direct = ansible_module("cuda_facts", {"nvidia_smi": NVIDIA_SMI_DOUBLE, "venv": str(sglang_venv)})["ansible_facts"]["blackwell_cuda"]["venv"]
    assert direct["target"] == str(sglang_venv)
    dangling = tmp_path / "gone"
    dangling.symlink_to(tmp_path / "pruned")
    assert ansible_module("cuda_facts", {"nvidia_smi": NVIDIA_SMI_DOUBLE, "venv": str(dangling), "venv_optional": True})["failed"]


def test_probe_needs_venv():
    res = ansible_module("cuda_facts", {"nvidia_smi": NVIDIA_SMI_DOUBLE, "probe": True})
    assert res["failed"] and "probe=true needs venv" in res["msg"]


def test_non_executable_nvcc_in_toolkit_root(tmp_path):
    nvcc = tmp_path / "cuda-12.8" / "bin" / "nvcc"
    nvcc.parent.mkdir(parents=True)
    nvcc.write_text("#!/bin/sh\necho release 12.8,\n")
    nvcc.chmod(0o644)
    res = ansible_module("cuda_facts", {"nvidia_smi": NVIDIA_SMI_DOUBLE, "toolkit_root": str(tmp_path)})
    tk = res["ansible_facts"]["blackwell_cuda"]["toolkits"]
    assert tk[0]["version"] is None and tk[0]["nvcc_error"].startswith("PermissionError")


def test_check_mode():
    res = ansible_module("cuda_facts", {"nvidia_smi": NVIDIA_SMI_DOUBLE}, extra_args=["--check"])
    # a module without check-mode support would come back skipped ("check mode not supported")
    assert not res.get("skipped") and res["changed"] is False and len(res["ansible_facts"]["blackwell_cuda"]["gpus"]) == 8


def test_ansible_doc_renders():
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))
    out = subprocess.run(
        [os.path.join(BIN, "ansible-doc"), "blackwell.inference.cuda_facts"], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    ).stdout
    for section in ("OPTIONS", "EXAMPLES:", "RETURN VALUES:", "nvidia_smi", "blackwell_cuda", "probe"):
        assert section in out


@pytest.fixture(scope="module")
def sglang_venv(tmp_path_factory):
    """A venv holding the real sglang 0.5.23 wheel (no dependencies: cuda_facts reads its metadata, never imports it)."""
    wheels = subprocess.run(
        [os.path.join(ROOT, "tests", "fixtures", "lab", "build_wheelhouse.sh"), CACHE], capture_output=True, text=True, check=True
    ).stdout.strip()
    python = _python311()  # the wheel is cp311 (Debian 12's python3), whatever python3 is first on PATH
    assert python, "the sglang wheel needs Python 3.11"
    venv = tmp_path_factory.mktemp("sglang") / "venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-index", "--no-deps", "--no-compile"]
    subprocess.run([*pip, "--find-links", wheels, "sglang==0.5.23"], check=True)
    return venv


def _set_cuda_arch(venv):
    """What the installed SGLang's own set_cuda_arch() assigns: (variable, its value for a capability), read with ast
    from the wheel's source: the assigned expression alone is evaluated, for the capabilities given."""
    (common,) = venv.glob("lib/python3*/site-packages/sglang/srt/utils/common.py")
    tree = ast.parse(common.read_text())
    (func,) = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "set_cuda_arch"]
    (assign,) = [n for n in ast.walk(func) if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Subscript)]
    expr = compile(ast.Expression(assign.value), str(common), "eval")

    def value(major, minor):
        return eval(expr, {"__builtins__": {}}, {"arch": "%d.%d" % (major, minor), "capability": (major, minor)})  # noqa: S307 - SGLang's own f-string

    return ast.literal_eval(assign.targets[0].slice), value


@pytest.mark.parametrize("unit_list, agree", [(None, False), ("12.0a", True)])
def test_sglangs_own_arch_list_and_the_workspace_of_each_import_order(tmp_path, sglang_venv, unit_list, agree):
    var, value = _set_cuda_arch(sglang_venv)
    assert var == sglang_rules.sets("0.5.23")[0] == "FLASHINFER_CUDA_ARCH_LIST"
    for cc in ((12, 0), (12, 1), (10, 0), (9, 0), (8, 9), (8, 0)):  # the model says what SGLang's own expression says
        assert value(*cc) == sglang_rules.worker_arch_list("%d.%d" % cc), cc
    env = {"CUDA_HOME": "/usr/local/cuda-13.0", "FLASHINFER_WORKSPACE_BASE": "/var/cache/sglang/jit/v1"}
    if unit_list:
        env["FLASHINFER_CUDA_ARCH_LIST"] = unit_list
    res = ansible_module(
        "cuda_facts",
        {"nvidia_smi": NVIDIA_SMI_DOUBLE, "venv": str(sglang_venv), "flashinfer_version": "0.7.4", "torch_cuda": "13.0", "environment": env},
        double(tmp_path),
    )
    facts = res["ansible_facts"]["blackwell_cuda"]
    assert facts["venv"]["packages"]["sglang"] == "0.5.23"
    sg = facts["sglang"]
    assert sg["sets"] == var and sg["arch_list"] == "12.0a" and sg["orders_agree"] is agree
    (worker,) = sg["workers"]  # eight GPUs of one compute capability
    assert worker["target_archs"] == ["120a"] and worker["cache_dir"] == "/var/cache/sglang/jit/v1/.cache/flashinfer/0.7.4/120a"
    assert facts["flashinfer"]["target_archs"] == (["120a"] if unit_list else ["120f"])  # FlashInfer alone, in the unit's env


# The lab's SGLang stand-in runs SGLang's own code from the wheel (the launcher's cache redirect, each worker's
# set_cuda_arch); here it runs in the oracle venv with the wheel's files on the path, once per environment below.
STANDIN_RUN = r"""
import json, os, sys
import sglang_standin
out = []
for env, cc in json.loads(sys.argv[1]):
    os.environ.clear()
    os.environ.update(env)
    sglang_standin.redirect_caches()
    layer = sglang_standin.sglang_layer({"compute_cap": cc, "name": "GPU double"})
    out.append({"layer": layer, "base": os.environ.get("FLASHINFER_WORKSPACE_BASE"), "list": os.environ.get("FLASHINFER_CUDA_ARCH_LIST")})
print(json.dumps(out))
"""
HOME = {"HOME": "/home/svc"}
STANDIN_CASES = [
    (HOME, "12.0"),
    (HOME, "12.1"),
    (HOME, "10.0"),
    (HOME, "9.0"),
    (HOME, "8.9"),
    (dict(HOME, SGLANG_CACHE_DIR="/var/cache/sglang/sglang", FLASHINFER_CUDA_ARCH_LIST="12.0f"), "12.0"),
    (dict(HOME, SGLANG_CACHE_DIR="~/cache"), "12.0"),
    (dict(HOME, SGLANG_CACHE_DIR=""), "12.0"),
    (dict(HOME, FLASHINFER_WORKSPACE_BASE="/var/cache/sglang/jit/v1"), "12.0"),
    (dict(HOME, FLASHINFER_WORKSPACE_BASE=""), "12.0"),
] + [
    (dict(HOME, FLASHINFER_CUDA_ARCH_LIST="12.0f", SGLANG_IS_FLASHINFER_AVAILABLE=v), "12.0")
    for v in ("false", "0", "FALSE", "no", "off", "", "yes", "True", "1", " true")
]


def test_the_lab_standin_runs_sglangs_own_code_and_the_model_agrees_with_it(sglang_venv, oracle_venv):
    (site,) = sglang_venv.glob("lib/python3*/site-packages")
    path = "%s:%s" % (site, os.path.join(ROOT, "tests", "fixtures", "lab"))
    argv = [os.path.join(oracle_venv, "bin", "python"), "-c", STANDIN_RUN, json.dumps(STANDIN_CASES)]
    proc = subprocess.run(argv, env={"PYTHONPATH": path, "PATH": os.environ["PATH"]}, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    real = json.loads(proc.stdout.splitlines()[-1])
    assert real[0]["layer"] == {"version": "0.5.23", "arch_list_before": None, "arch_list_after": "12.0a"}  # SGLang's code ran
    disagree = []
    for (env, cc), got in zip(STANDIN_CASES, real):
        model = sglang_rules.worker_env("0.5.23", env, cc)  # None: SGLang leaves FlashInfer's list alone
        want_list = model["FLASHINFER_CUDA_ARCH_LIST"] if model else env.get("FLASHINFER_CUDA_ARCH_LIST")
        if got["list"] != want_list or (model and got["base"] != model["FLASHINFER_WORKSPACE_BASE"]):
            disagree.append("%s %s: SGLang %s, model %s" % (env, cc, (got["list"], got["base"]), model and (want_list, model["FLASHINFER_WORKSPACE_BASE"])))
    assert not disagree, "\n".join(disagree)
