"""Versions read from a venv's files without importing anything."""

import os

import json

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.common import commands
from ansible_collections.blackwell.inference.plugins.module_utils.venv import info as vi

# torch/version.py as shipped in the 2.13.0 CPU wheel on this machine and in a cu130 wheel.
TORCH_CPU = """from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'rocm', 'xpu']
__version__ = '2.13.0+cpu'
debug = False
cuda: Optional[str] = None
git_version = 'cf30153c4c131c8164ee7798e5022d810682e2cb'
hip: Optional[str] = None
"""
TORCH_CU130 = TORCH_CPU.replace("2.13.0+cpu", "2.14.1+cu130").replace("cuda: Optional[str] = None", "cuda: Optional[str] = '13.0'")
TORCH_OLD = "__version__ = '2.1.0+cu121'\ndebug = False\ncuda = '12.1'\n"


@pytest.mark.parametrize(
    "text,want",
    [(TORCH_CPU, ("2.13.0+cpu", None)), (TORCH_CU130, ("2.14.1+cu130", "13.0")), (TORCH_OLD, ("2.1.0+cu121", "12.1")), ("", (None, None))],
)
def test_torch_version_py(text, want):
    assert vi.parse_torch_version_py(text) == want


def make_venv(root, packages, torch_text=None):
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "python").write_text("")
    (root / "pyvenv.cfg").write_text("home = /usr/bin\n")
    sp = root / "lib" / "python3.11" / "site-packages"
    sp.mkdir(parents=True)
    for name, version in packages.items():
        d = sp / ("%s-%s.dist-info" % (name.replace("-", "_"), version))
        d.mkdir()
        (d / "METADATA").write_text("Metadata-Version: 2.1\nName: %s\nVersion: %s\n\nlong description\nVersion: 9\n" % (name, version))
    if torch_text is not None:
        (sp / "torch").mkdir()
        (sp / "torch" / "version.py").write_text(torch_text)
    return root


def test_venv(tmp_path):
    venv = make_venv(tmp_path / "v", {"flashinfer_python": "0.7.0", "torch": "2.14.1+cu130", "SGLang": "0.5.21"}, TORCH_CU130)
    assert vi.check_venv(str(venv)).endswith("bin/python")
    sites = vi.site_packages(str(venv))
    assert vi.installed_versions(sites) == {"flashinfer-python": "0.7.0", "torch": "2.14.1+cu130", "sglang": "0.5.21"}
    assert vi.torch_info(sites) == {"version": "2.14.1+cu130", "cuda": "13.0"}


@pytest.mark.parametrize(
    "setup,message",
    [("missing", "does not exist"), ("plain", "no pyvenv.cfg"), ("nopython", "has no bin/python")],
)
def test_not_a_venv(tmp_path, setup, message):
    path = tmp_path / "v"
    if setup != "missing":
        path.mkdir()
    if setup == "nopython":
        (path / "pyvenv.cfg").write_text("")
    with pytest.raises(vi.VenvError, match=message):
        vi.check_venv(str(path))


# pip 23.2.1's `pip check` in a venv with sglang 0.5.23 installed --no-deps beside the lab's CPU torch.
PIP_CHECK_SGLANG_NODEPS = """sglang 0.5.23 requires anthropic, which is not installed.
sglang 0.5.23 requires blobfile, which is not installed.
sglang 0.5.23 has requirement apache-tvm-ffi==0.1.11, but you have apache-tvm-ffi 0.1.15.post2.
sglang 0.5.23 has requirement flashinfer_python[cu13]==0.7.2, but you have flashinfer-python 0.7.4.
sglang 0.5.23 has requirement torch==2.14.1, but you have torch 2.13.0+cpu.
"""
PIP_CHECK_OTHERS = """pydantic 2.14.4 requires annotated-types, which is not installed.
torch 2.13.0+cpu has requirement setuptools>=77.0.3, but you have setuptools 65.5.0.
"""


@pytest.mark.parametrize(
    "stdout,no_deps,kept,skipped",
    [
        ("No broken requirements found.\n", [], [], 0),
        (PIP_CHECK_SGLANG_NODEPS, [], PIP_CHECK_SGLANG_NODEPS.splitlines(), 0),
        (PIP_CHECK_SGLANG_NODEPS, ["sglang==0.5.23"], [], 5),
        (PIP_CHECK_SGLANG_NODEPS, ["SGLang"], [], 5),
        # another distribution's problems still count, also when they name the no-deps one
        (PIP_CHECK_SGLANG_NODEPS + PIP_CHECK_OTHERS, ["sglang==0.5.23"], PIP_CHECK_OTHERS.splitlines(), 5),
        (
            "sgl-kernel 0.4.10 has requirement sglang==0.5.22, but you have sglang 0.5.23.\n",
            ["sglang==0.5.23"],
            ["sgl-kernel 0.4.10 has requirement sglang==0.5.22, but you have sglang 0.5.23."],
            0,
        ),
        # names normalize both ways (flashinfer_python / flashinfer-python), extras are not part of the name
        ("flashinfer-python 0.7.4 requires ninja, which is not installed.\n", ["flashinfer_python[cu13]==0.7.4"], [], 1),
        ("torch 2.13.0 is not supported on this platform\n", ["torch==2.13.0"], [], 1),
        ("something pip never said\n", ["sglang==0.5.23"], ["something pip never said"], 0),
    ],
)
def test_pip_check_problems(stdout, no_deps, kept, skipped):
    assert vi.pip_check_problems(stdout, no_deps) == (kept, skipped)


@pytest.mark.parametrize(
    "result,no_deps,expected",
    [
        # the check did not run (turned off, check mode): nothing to hold against the venv
        ({"skipped": True, "changed": False}, [], (True, [], 0)),
        ({}, [], (True, [], 0)),
        ({"rc": 0, "stdout": "No broken requirements found.\n"}, [], (True, [], 0)),
        # only lines about the no-deps distributions: passes, with what was set aside counted
        ({"rc": 1, "stdout": PIP_CHECK_SGLANG_NODEPS}, ["sglang==0.5.23"], (True, [], 5)),
        ({"rc": 1, "stdout": PIP_CHECK_SGLANG_NODEPS}, [], (False, PIP_CHECK_SGLANG_NODEPS.splitlines(), 0)),
        ({"rc": 1, "stdout": PIP_CHECK_SGLANG_NODEPS + PIP_CHECK_OTHERS}, ["sglang==0.5.23"], (False, PIP_CHECK_OTHERS.splitlines(), 5)),
        # pip check failed without a line to read (it crashed): fails, the caller shows its stderr
        ({"rc": 2, "stdout": "", "stderr": "ModuleNotFoundError: No module named 'pip'"}, [], (False, [], 0)),
    ],
)
def test_pip_check_verdict(result, no_deps, expected):
    assert vi.pip_check_verdict(result, no_deps) == expected


@pytest.mark.parametrize(
    "no_deps,packages,lock_file,accepted",
    [
        ([], ["flashinfer-python==0.7.4"], "", True),
        ([], [], "/srv/lock.txt", True),
        (["sglang==0.5.23"], ["flashinfer-python==0.7.4", "torch==2.13.0"], "", True),
        (["sglang[srt]==0.5.23"], ["flashinfer-python==0.7.4"], "", True),
        (["sglang>=0.5"], ["flashinfer-python==0.7.4"], "", False),  # not pinned
        (["sglang"], ["flashinfer-python==0.7.4"], "", False),
        (["flashinfer_python==0.7.4"], ["flashinfer-python==0.7.4"], "", False),  # the same distribution, PEP 503
        (["Torch==2.13.0"], ["torch==2.13.0"], "", False),
        (["sglang==0.5.23"], [], "/srv/lock.txt", False),  # the lock file is the whole set
    ],
)
def test_no_deps_accepted(no_deps, packages, lock_file, accepted):
    assert vi.no_deps_accepted(no_deps, packages, lock_file) is accepted


@pytest.mark.parametrize(
    "requirement,name",
    [("flashinfer_python[cu13]==0.7.4", "flashinfer-python"), ("SGLang==0.5.23", "sglang"), ("torch>=2.13", "torch"), ("zope.interface", "zope-interface")],
)
def test_requirement_name(requirement, name):
    assert vi.requirement_name(requirement) == name


# The marker a build wrote on the lab host (tests/lab: the converged ct200), as it is on disk.
MARKER = """{
    "built_at": "2026-12-02T13:59:48.126946",
    "hash": "2c26817414e442ed",
    "imports": {"flashinfer": "ok", "torch": "ok"},
    "inputs": {"extra_index_urls": [], "find_links": ["/srv/wheelhouse"], "index_url": "", "patches": [],
               "python": "/usr/bin/python3", "python_version": "3.11.2",
               "requirements": ["flashinfer-python==0.7.4", "torch==2.13.0"]},
    "no_deps": [], "patches": [], "pip_check_set_aside": 0, "torch_cuda": null,
    "versions": {"flashinfer-python": "0.7.4", "torch": "2.13.0+cpu"}
}
"""


def make_root(tmp_path, complete=(), incomplete=(), files=(), hidden=()):
    venvs = tmp_path / "venvs"
    venvs.mkdir()
    for i, name in enumerate(complete):
        (venvs / name).mkdir()
        marker = venvs / name / vi.MARKER
        marker.write_text(MARKER.replace("2c26817414e442ed", name))
        os.utime(marker, (1000 + i, 1000 + i))  # later in the list: written later
    for name in incomplete:
        (venvs / name / "bin").mkdir(parents=True)
    for name in files:
        (venvs / name).write_text("")
    for name in hidden:
        (venvs / name).write_text("")
    return str(tmp_path)


def test_list_venvs_reads_markers_and_leaves_hidden_entries_out(tmp_path):
    root = make_root(tmp_path, complete=["2c26817414e442ed"], incomplete=["9f00aa"], files=["stray"], hidden=[".2c26817414e442ed.lock"])
    venvs = vi.list_venvs(root)
    assert [(v["name"], v["isdir"], v["complete"]) for v in venvs] == [("2c26817414e442ed", True, True), ("9f00aa", True, False), ("stray", False, False)]
    assert venvs[0]["marker"]["versions"] == {"flashinfer-python": "0.7.4", "torch": "2.13.0+cpu"}
    assert venvs[0]["marker_mtime"] == 1000
    assert venvs[0]["path"] == os.path.join(root, "venvs", "2c26817414e442ed")
    assert venvs[1]["marker"] is None


def test_list_venvs_of_a_root_without_venvs(tmp_path):
    assert vi.list_venvs(str(tmp_path / "nothing")) == []


@pytest.mark.parametrize("text", ["{truncated", "[1, 2]", ""])
def test_a_marker_changed_by_hand_is_refused_naming_it(tmp_path, text):
    root = make_root(tmp_path, complete=["abc"])
    (tmp_path / "venvs" / "abc" / vi.MARKER).write_text(text)
    with pytest.raises(vi.VenvError, match=r"venvs/abc/\.blackwell-venv\.json"):
        vi.list_venvs(root)


V = "/opt/sglang/venvs/"


def venv(name, complete=True, mtime=0, isdir=True):
    return {"name": name, "path": V + name, "isdir": isdir, "complete": complete, "marker_mtime": mtime if complete else None}


READY = {"sglang_k26": {"ready": True, "last_good": {"venv": V + "old", "inputs": "x"}}, "other": "not a marker", "none": {"last_good": None}}


@pytest.mark.parametrize(
    "venvs,this,link,facts,keep,removed",
    [
        # a no-op run: this run's venv is current, nothing else
        ([venv("a", mtime=1)], V + "a", V + "a", {}, 2, []),
        # a switch: the new one and the previous one stay; an older complete one and a killed build go
        ([venv("a", mtime=1), venv("b", mtime=2), venv("c", mtime=3), venv("k", complete=False)], V + "c", V + "c", {}, 2, [V + "a", V + "k"]),
        # keep 3: the two newest besides this run's
        ([venv("a", mtime=1), venv("b", mtime=2), venv("c", mtime=3)], V + "c", V + "c", {}, 3, []),
        # the ready marker's last good venv is never removed, and counts in keep (the newer b goes)
        ([venv("old", mtime=1), venv("b", mtime=2), venv("c", mtime=3)], V + "c", V + "c", READY, 2, [V + "b"]),
        # check mode, no switch: current still points at the previous venv, which stays with this run's
        ([venv("a", mtime=1), venv("b", mtime=2)], V + "new", V + "a", {}, 2, [V + "b"]),
        # a failed build rolled back: this run's incomplete venv is not removed here (the next build replaces it)
        ([venv("a", mtime=1), venv("n", complete=False)], V + "n", V + "a", {}, 2, []),
        # a stray file is not a venv; a trailing / or // in the root spells the same venv
        ([venv("a", mtime=1), venv("stray", complete=False, isdir=False)], "/opt/sglang//venvs/a", V + "a/", {}, 2, []),
    ],
)
def test_prune_plan(venvs, this, link, facts, keep, removed):
    plan = vi.prune_plan(venvs, this, link, facts, keep)
    assert plan["remove"] == removed
    assert not set(plan["remove"]) & set(plan["keep"])


def test_last_good_venvs_from_the_local_facts():
    assert vi.last_good_venvs(READY) == [V + "old"]
    assert vi.last_good_venvs(None) == []


# the lab's venv: its marker (written by a converge before inputs_plan existed, when Jinja hashed the inputs) names it
LAB_OPTIONS = {
    "python": "/usr/bin/python3",
    "requirements": ["flashinfer-python==0.7.4", "torch==2.13.0"],
    "no_index": True,
    "index_url": "https://pypi.org/simple",
    "extra_index_urls": ["https://download.pytorch.org/whl/cu130"],
    "find_links": ["/srv/wheelhouse"],
    "patches": [],
    "no_deps": ["sglang==0.5.23"],
    "bytecode": True,
}
LAB_HOST = {
    "python": {"version": "3.11.2"},
    "venvs": [
        {"name": "0123456789abcdef", "path": "/opt/sglang/venvs/0123456789abcdef", "complete": True},
        {"name": "119f0a510a34ff5f", "path": "/opt/sglang/venvs/119f0a510a34ff5f", "complete": True},
    ],
    "current": "/opt/sglang/venvs/0123456789abcdef",
}


def test_inputs_plan_names_the_venv_as_its_marker_does():
    plan = vi.inputs_plan(LAB_HOST, "/opt/sglang", LAB_OPTIONS)
    assert plan["hash"] == "119f0a510a34ff5f"
    assert plan["inputs"] == {
        "extra_index_urls": [],
        "find_links": ["/srv/wheelhouse"],
        "index_url": "",
        "no_deps": ["sglang==0.5.23"],
        "patches": [],
        "python": "/usr/bin/python3",
        "python_version": "3.11.2",
        "requirements": ["flashinfer-python==0.7.4", "torch==2.13.0"],
    }
    assert plan["dir"] == "/opt/sglang/venvs/119f0a510a34ff5f"
    assert plan["site"] == "/opt/sglang/venvs/119f0a510a34ff5f/lib/python3.11/site-packages"
    assert plan["this"]["complete"] is True and plan["build"] is False
    assert plan["previous"] == "/opt/sglang/venvs/0123456789abcdef"
    assert plan["switch"] is True  # current points at another venv
    converged = vi.inputs_plan(dict(LAB_HOST, current="/opt/sglang/venvs/119f0a510a34ff5f"), "/opt/sglang", LAB_OPTIONS)
    assert converged["switch"] is False and converged["build"] is False


@pytest.mark.parametrize(
    ("change", "keys"),
    [
        ({"no_index": False}, {"index_url": "https://pypi.org/simple", "extra_index_urls": ["https://download.pytorch.org/whl/cu130"]}),
        ({"bytecode": False}, {"bytecode": False}),
        ({"no_deps": []}, {}),
        ({"requirements": "9f86d081884c7d65"}, {"requirements": "9f86d081884c7d65"}),
        ({"patches": ["e3b0c44298fc1c14"]}, {"patches": ["e3b0c44298fc1c14"]}),
    ],
)
def test_each_input_names_another_venv_and_defaults_add_no_key(change, keys):
    plan = vi.inputs_plan(LAB_HOST, "/opt/sglang", dict(LAB_OPTIONS, **change))
    assert plan["hash"] != "119f0a510a34ff5f" and plan["build"] is True and plan["this"] == {}
    for key, value in keys.items():
        assert plan["inputs"][key] == value
    assert ("no_deps" in plan["inputs"]) is bool(dict(LAB_OPTIONS, **change)["no_deps"])
    assert ("bytecode" in plan["inputs"]) is (change.get("bytecode") is False)


def test_credentials_in_the_index_urls_are_neither_inputs_nor_argv():
    """The inputs go into the 0644 marker and name the venv (a digest): the URLs without their credentials, so a new
    token is no new venv; pip's argv (ps) names no URL at all, only the environment file pip reads them from."""
    public = dict(LAB_OPTIONS, no_index=False)
    secret = dict(public, index_url="https://user:t0ken@pypi.org/simple", extra_index_urls=["https://TOKEN2@download.pytorch.org/whl/cu130"])
    plan, bare = vi.inputs_plan(LAB_HOST, "/opt/sglang", secret), vi.inputs_plan(LAB_HOST, "/opt/sglang", public)
    assert plan["inputs"] == bare["inputs"] and plan["hash"] == bare["hash"]
    assert plan["inputs"]["index_url"] == "https://pypi.org/simple"
    role = vi.role_plan(LAB_HOST, dict(LAB_ROLE, no_index=False, index_url=secret["index_url"], extra_index_urls=secret["extra_index_urls"]))
    shown = json.dumps(role)
    assert "t0ken" not in shown and "TOKEN2" not in shown
    assert not [w for w in role["pip_install"] if "pypi.org" in w or "pytorch" in w]
    assert role["pip_env_file"] == "/opt/sglang/venvs/.%s.pip.env" % role["hash"] and role["pip_install"][7] == role["pip_env_file"]


def test_an_incomplete_venv_of_these_inputs_is_built_again():
    host = dict(LAB_HOST, venvs=[{"name": "119f0a510a34ff5f", "path": "/opt/sglang/venvs/119f0a510a34ff5f", "complete": False}], current=None)
    plan = vi.inputs_plan(host, "/srv/venvs", LAB_OPTIONS)
    assert plan["build"] is True and plan["this"]["complete"] is False
    assert plan["dir"] == "/srv/venvs/venvs/119f0a510a34ff5f" and plan["previous"] is None


def _runner(answers):
    calls = []

    def run(argv, env=None, timeout=60, data=None):
        calls.append(argv)
        return answers[argv[0] if argv[0] != "/usr/bin/env" else argv[1]]

    return run, calls


def _res(rc=0, stdout="", stderr="", os_error=None):
    return commands.CommandResult(["x"], rc=rc, stdout=stdout, stderr=stderr, os_error=os_error)


def test_read_host_reads_the_interpreter_the_tools_current_and_the_venvs(tmp_path):
    venv = tmp_path / "venvs" / "119f0a510a34ff5f"
    venv.mkdir(parents=True)
    (venv / vi.MARKER).write_text('{"hash": "119f0a510a34ff5f"}')
    (tmp_path / "venvs" / "0123456789abcdef").mkdir()  # a build that never finished: no marker
    (tmp_path / "current").symlink_to(venv)
    run, calls = _runner({"/usr/bin/python3": _res(stdout="3.11.2\n"), "patch": _res(stdout="GNU patch 2.7.6\nCopyright (C) 2003\n")})
    got = vi.read_host(run, str(tmp_path), "/usr/bin/python3", ["patch"])
    assert got["python"] == {"version": "3.11.2", "rc": 0, "stderr": ""}
    assert got["tools"] == {"patch": {"found": True, "version": "GNU patch 2.7.6"}}
    assert got["current"] == str(venv)
    assert [(v["name"], v["complete"]) for v in got["venvs"]] == [("0123456789abcdef", False), ("119f0a510a34ff5f", True)]
    assert calls[0] == ["/usr/bin/env", "/usr/bin/python3", "-c", vi.PYTHON_CHECK]


def test_read_host_of_an_interpreter_without_ensurepip_and_a_host_without_patch(tmp_path):
    broken = _res(rc=1, stderr="Traceback (most recent call last):\nModuleNotFoundError: No module named 'ensurepip'\n")
    run, _calls = _runner({"python3": broken, "patch": _res(rc=127, os_error="FileNotFoundError", stderr="No such file or directory")})
    got = vi.read_host(run, str(tmp_path), "python3", ["patch"])
    assert got["python"]["version"] is None and got["python"]["rc"] == 1
    assert got["python"]["stderr"].endswith("No module named 'ensurepip'")
    assert got["tools"] == {"patch": {"found": False, "version": None}}
    assert got["current"] == "" and got["venvs"] == []


def test_read_host_refuses_a_marker_changed_by_hand_with_what_it_read(tmp_path):
    venv = tmp_path / "venvs" / "119f0a510a34ff5f"
    venv.mkdir(parents=True)
    (venv / vi.MARKER).write_text("{not json")
    run, _calls = _runner({"python3": _res(stdout="3.11.2\n")})
    with pytest.raises(vi.VenvError, match="is not JSON") as exc:
        vi.read_host(run, str(tmp_path), "python3")
    assert exc.value.reading["python"]["version"] == "3.11.2" and exc.value.reading["current"] == ""


def test_inputs_plan_says_whether_the_prune_phase_has_work():
    def host(*venvs, current="/opt/sglang/venvs/119f0a510a34ff5f"):
        return dict(LAB_HOST, venvs=[dict(v, isdir=True) for v in venvs], current=current)

    this = {"name": "119f0a510a34ff5f", "path": "/opt/sglang/venvs/119f0a510a34ff5f", "complete": True, "marker_mtime": 2}
    old = {"name": "0123456789abcdef", "path": "/opt/sglang/venvs/0123456789abcdef", "complete": True, "marker_mtime": 1}
    broken = {"name": "fedcba9876543210", "path": "/opt/sglang/venvs/fedcba9876543210", "complete": False}
    keep2 = {"keep": 2, "local_facts": {}}
    # converged: this venv current, one older kept (keep 2): nothing to prune; no prune key without the option
    assert vi.inputs_plan(host(this, old), "/opt/sglang", LAB_OPTIONS, keep2)["prune"] is False
    assert "prune" not in vi.inputs_plan(host(this, old), "/opt/sglang", LAB_OPTIONS)
    # beyond keep, an incomplete one, current elsewhere (it moves), a build: the phase runs and decides again
    assert vi.inputs_plan(host(this, old), "/opt/sglang", LAB_OPTIONS, {"keep": 1, "local_facts": {}})["prune"] is True
    assert vi.inputs_plan(host(this, old, broken), "/opt/sglang", LAB_OPTIONS, keep2)["prune"] is True
    assert vi.inputs_plan(host(this, old, current=old["path"]), "/opt/sglang", LAB_OPTIONS, keep2)["prune"] is True
    assert vi.inputs_plan(host(old), "/opt/sglang", LAB_OPTIONS, keep2)["prune"] is True
    # a ready marker's last good venv is kept beyond keep (prune_plan): nothing to remove
    ready = {"sglang": {"ready": True, "last_good": {"venv": old["path"]}}}
    assert vi.inputs_plan(host(this, old), "/opt/sglang", LAB_OPTIONS, {"keep": 1, "local_facts": ready})["prune"] is False


def test_current_is_the_role_result_from_the_marker():
    marker = {"hash": "119f0a510a34ff5f", "versions": {"torch": "2.13.0"}, "torch_cuda": "13.0", "no_deps": ["sglang==0.5.23"], "pip_check_set_aside": 2}
    got = vi.current(marker, "/opt/sglang", "119f0a510a34ff5f", False)
    assert got == {
        "path": "/opt/sglang/current",
        "dir": "/opt/sglang/venvs/119f0a510a34ff5f",
        "hash": "119f0a510a34ff5f",
        "versions": {"torch": "2.13.0"},
        "torch_cuda": "13.0",
        "patches": [],
        "no_deps": ["sglang==0.5.23"],
        "pip_check_set_aside": 2,
        "matches_inputs": True,
        "changed": False,
        "switched": False,
        "previous": None,
    }
    assert vi.current(marker, "/opt/sglang", "0123456789abcdef", True)["matches_inputs"] is False
    # where current pointed before the run: the link a later refusal of the same run puts back (issue 57 item 3)
    before = "/opt/sglang/venvs/0123456789abcdef"
    assert vi.current(marker, "/opt/sglang", "119f0a510a34ff5f", True, True, before)["previous"] == before
    # a build or a prune changes the role's result, only a moved link is a switch
    assert vi.current(marker, "/opt/sglang", "119f0a510a34ff5f", True)["switched"] is False
    assert vi.current(marker, "/opt/sglang", "119f0a510a34ff5f", True, True)["switched"] is True
    # no marker (no complete venv yet, or check mode before the first build)
    none = vi.current(None, "/opt/sglang", "119f0a510a34ff5f", False)
    assert none["hash"] is None and none["dir"] == "/opt/sglang/venvs/" and none["versions"] == {} and none["matches_inputs"] is False


# role_plan: the role's variables as the venv_probe action is given them (vars/main.yml __sglang_venv_plan_options)
LAB_ROLE = {
    "root": "/opt/sglang/",
    "python": "/usr/bin/python3",
    "packages": ["flashinfer-python==0.7.4", "torch==2.13.0"],
    "lock_file": "",
    "lock_file_sha256": [],
    "no_index": True,
    "index_url": "https://pypi.org/simple",
    "extra_index_urls": ["https://download.pytorch.org/whl/cu130"],
    "find_links": ["/srv/wheelhouse"],
    "patches": [],
    "packages_no_deps": ["sglang==0.5.23"],
    "bytecode": True,
    "keep": "2",
    "local_facts": {},
    "check_mode": False,
}
PIP = ["flock", "--exclusive", "--nonblock", "/opt/sglang/venvs/.119f0a510a34ff5f.lock", "/bin/sh", "-c", vi.SOURCE_ENV]
PIP += ["/opt/sglang/venvs/.119f0a510a34ff5f.pip.env", "/opt/sglang/venvs/119f0a510a34ff5f/bin/python", "-m", "pip"]
PIP += ["install", "--disable-pip-version-check", "--no-input"]


def test_role_plan_is_the_inputs_plan_with_what_the_tasks_run():
    plan = vi.role_plan(dict(LAB_HOST, tools={"patch": {"found": False}}), LAB_ROLE)
    inputs = vi.inputs_plan(LAB_HOST, "/opt/sglang", LAB_OPTIONS, {"keep": 2, "local_facts": {}})
    assert {k: plan[k] for k in inputs} == inputs
    assert plan["root"] == "/opt/sglang" and plan["lock"] == "/opt/sglang/venvs/.119f0a510a34ff5f.lock"
    assert plan["pip_install"] == [*PIP, "--no-index", "--find-links=/srv/wheelhouse"]
    assert plan["requirements"] == LAB_ROLE["packages"] and plan["refusals"] == []
    # current moves to this venv: the prune decides with it there; in check mode current stays
    assert plan["link_target"] == plan["dir"] and plan["remove"] == []
    assert vi.role_plan(LAB_HOST, dict(LAB_ROLE, check_mode=True))["link_target"] == "/opt/sglang/venvs/0123456789abcdef"


@pytest.mark.parametrize(
    "change, key, want",
    [
        # the index URLs come from pip's environment file, never argv (ps shows it to every user)
        ({"no_index": False}, "pip_install", [*PIP, "--find-links=/srv/wheelhouse"]),
        ({"bytecode": False}, "pip_install", [*PIP, "--no-compile", "--no-index", "--find-links=/srv/wheelhouse"]),
        ({"lock_file": "req.lock", "lock_file_sha256": ["9f86d081884c7d65"]}, "requirements", ["--require-hashes", "-r", "%s/requirements.lock"]),
        ({"lock_file": "req.lock", "lock_file_sha256": ["9f86d081884c7d65"]}, "inputs", "9f86d081884c7d65"),
    ],
)
def test_role_plan_of_other_inputs(change, key, want):
    plan = vi.role_plan(LAB_HOST, dict(LAB_ROLE, **change))
    got = plan[key]["requirements"] if key == "inputs" else plan[key]
    if key == "pip_install":
        swap = {".lock": plan["lock"], "/bin/python": plan["dir"] + "/bin/python", ".pip.env": plan["pip_env_file"]}
        want = [next((v for k, v in swap.items() if w.endswith(k)), w) for w in want]
    elif key == "requirements":
        want = [w % plan["dir"] if "%s" in w else w for w in want]
    assert got == want


@pytest.mark.parametrize(
    "host, options, refusals",
    [
        ({"python": {"version": "3.11.2"}, "tools": {"patch": {"found": True}}}, {"python": "python3", "patches": ["e3b0"]}, []),
        ({"python": {"version": "3.11.2"}, "tools": {}}, {"python": "python3", "patches": []}, []),
        (
            {"python": {"version": None, "stderr": "No module named ensurepip"}, "tools": {"patch": {"found": False}}},
            {"python": "/usr/bin/python3", "patches": ["e3b0"]},
            [
                "sglang_venv_python=/usr/bin/python3 cannot create venvs here (No module named ensurepip): install its venv package"
                " (python3-venv) or point sglang_venv_python at another interpreter.",
                "sglang_venv_patches needs GNU patch on the host: install the patch package, or empty sglang_venv_patches.",
            ],
        ),
    ],
)
def test_refusals_of_the_host(host, options, refusals):
    assert vi.refusals(host, options) == refusals


def test_role_plan_prunes_beyond_keep_with_current_moved():
    venvs = [
        {"name": n, "path": "/opt/sglang/venvs/" + n, "isdir": True, "complete": True, "marker_mtime": t}
        for n, t in (("aaaa", 3), ("bbbb", 2), ("cccc", 1), ("119f0a510a34ff5f", 4))
    ]
    plan = vi.role_plan(dict(LAB_HOST, venvs=venvs, current="/opt/sglang/venvs/aaaa"), LAB_ROLE)
    assert plan["switch"] is True and plan["prune"] is True
    # current moves to this run's venv: the one current pointed at is held no more, the newest complete other one is kept
    assert plan["remove"] == ["/opt/sglang/venvs/bbbb", "/opt/sglang/venvs/cccc"]


# sglang_venv_root=/opt/sglang where /opt is a symlink to /data/opt: the listing names /opt/sglang/venvs/x, while
# current (readlink -f) and the ready markers' last_good name /data/opt/sglang/venvs/x
R = "/data/opt/sglang/venvs/"


def linked(name, complete=True, mtime=0):
    return dict(venv(name, complete, mtime), real=R + name)


LINKED_READY = {"sglang_k26": {"ready": False, "last_good": {"venv": R + "old", "inputs": "x"}}}


@pytest.mark.parametrize(
    "venvs,this,link,facts,keep,removed",
    [
        # a failed change rolled back to old, then a new pin (c): old is the last good one and stays; b goes
        ([linked("old", mtime=1), linked("b", mtime=2), linked("c", mtime=3)], V + "c", R + "c", LINKED_READY, 2, [V + "b"]),
        # current named resolved, this run's venv by the root's path: the same venv, kept once (keep 2: b stays too)
        ([linked("a", mtime=1), linked("b", mtime=2), linked("c", mtime=3)], V + "c", R + "c", {}, 2, [V + "a"]),
        # check mode, no switch: current (resolved) is the previous venv, kept with this run's
        ([linked("a", mtime=1), linked("b", mtime=2)], V + "new", R + "a", {}, 2, [V + "b"]),
    ],
)
def test_prune_plan_compares_real_paths(venvs, this, link, facts, keep, removed):
    plan = vi.prune_plan(venvs, this, link, facts, keep)
    assert plan["remove"] == removed and plan["stopped"] == ""
    assert R + "old" in plan["keep"] if facts else True


@pytest.mark.parametrize(
    "facts,names",
    [
        # Ansible's own words for a .fact it could not load (module_utils/facts/system/local.py)
        ({"sglang_k26": "error loading facts as JSON or ini - please check content: /etc/ansible/facts.d/sglang_k26.fact"}, "sglang_k26"),
        ({"sglang_k26": 'error loading fact - output of running "/etc/ansible/facts.d/sglang_k26.fact" was not utf-8'}, "sglang_k26"),
        ({"sglang_k26": "Could not stat fact (/etc/ansible/facts.d/sglang_k26.fact): [Errno 5] Input/output error"}, "sglang_k26"),
        # a file it could not read at all comes back empty
        ({"sglang_k26": {}, "other": READY["sglang_k26"]}, "sglang_k26"),
        # a marker whose last_good names no venv
        ({"sglang_k26": {"ready": True, "last_good": {"inputs": "x"}}}, "sglang_k26"),
        ({"sglang_k26": {"ready": True, "last_good": "/opt/sglang/venvs/old"}}, "sglang_k26"),
    ],
)
def test_an_unreadable_marker_stops_the_prune_and_nothing_is_removed(facts, names):
    venvs = [venv("old", mtime=1), venv("b", mtime=2), venv("c", mtime=3), venv("k", complete=False)]
    plan = vi.prune_plan(venvs, V + "c", V + "c", facts, 2)
    assert plan["remove"] == [] and plan["keep"] == [V + n for n in ("old", "b", "c", "k")]
    assert plan["stopped"] == (
        "the local fact(s) /etc/ansible/facts.d/%s.fact cannot be read, so the last good venv they name is unknown: nothing pruned" % names
    )


def test_readable_facts_of_other_tools_do_not_stop_the_prune():
    assert vi.unreadable_markers(READY) == [] and vi.unreadable_markers({"tool": {"section": {"k": "v"}}}) == []


def test_list_venvs_and_the_plan_under_a_symlinked_root(tmp_path):
    real = tmp_path / "data" / "sglang"
    real.mkdir(parents=True)
    make_root(real, complete=["aaaa", "bbbb"])
    (tmp_path / "opt").symlink_to(tmp_path / "data")
    root = str(tmp_path / "opt" / "sglang")
    (real / "current").symlink_to(real / "venvs" / "bbbb")
    venvs = vi.list_venvs(root)
    assert [(v["path"], v["real"]) for v in venvs] == [(root + "/venvs/" + n, str(real / "venvs" / n)) for n in ("aaaa", "bbbb")]
    host = {"python": {"version": "3.11.2"}, "current": os.path.realpath(root + "/current"), "venvs": venvs}
    # current is this venv, read resolved: no switch, and nothing to prune with keep 2
    this = dict(LAB_OPTIONS)
    name = vi.inputs_plan(host, root, this)["hash"]
    os.rename(real / "venvs" / "bbbb", real / "venvs" / name)
    os.unlink(real / "current")
    (real / "current").symlink_to(real / "venvs" / name)
    host = {"python": {"version": "3.11.2"}, "current": os.path.realpath(root + "/current"), "venvs": vi.list_venvs(root)}
    plan = vi.inputs_plan(host, root, this, {"keep": 2, "local_facts": {}})
    assert plan["build"] is False and plan["switch"] is False and plan["prune"] is False
