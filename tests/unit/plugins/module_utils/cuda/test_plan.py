"""The package plan of the cuda_toolkit role: exact pins, config-common first, no driver, no floating metas."""

import json
import pathlib

import pytest
import yaml

from ansible_collections.blackwell.inference.plugins.module_utils.cuda import plan as cp

from ...conftest_paths import ROLE_VARS

with open(ROLE_VARS) as _fh:
    KNOWN = yaml.safe_load(_fh)["__cuda_toolkit_releases"]


def test_slim_13_0_2():
    (entry,) = cp.plan(["13.0.2"], "slim", KNOWN)
    assert entry["version"] == "13.0"
    assert entry["packages"][:3] == [
        "cuda-toolkit-config-common=13.0.96-1",
        "cuda-toolkit-13-config-common=13.0.96-1",
        "cuda-toolkit-13-0-config-common=13.0.96-1",
    ]
    assert "cuda-nvcc-13-0=13.0.88-1" in entry["packages"] and "libcurand-dev-13-0=10.4.0.35-1" in entry["packages"]
    assert "cuda-driver-dev-13-0=13.0.96-1" in entry["packages"]
    assert not any(p.startswith("cuda-toolkit-13-0=") for p in entry["packages"])
    assert len(entry["packages"]) == 14


def test_full_adds_the_versioned_meta_only():
    (entry,) = cp.plan(["13.0.2"], "full", KNOWN)
    assert entry["packages"][-1] == "cuda-toolkit-13-0=13.0.2-1"


@pytest.mark.parametrize(
    "releases,components,overrides,message",
    [
        (["13.x"], "slim", {}, "'13.x' is not a full CUDA release X.Y.Z"),
        (["13.0"], "slim", {}, "'13.0' is not a full CUDA release"),
        (["13.0.3"], "slim", {}, "no pinned versions for CUDA 13.0.3 packages cuda-toolkit-config-common"),
        (["13.0.2"], "everything", {}, "cuda_toolkit_components must be one of slim, full"),
    ],
)
def test_refusals(releases, components, overrides, message):
    with pytest.raises(cp.PlanError, match=message.replace("(", r"\(").replace(")", r"\)")):
        cp.plan(releases, components, KNOWN, overrides)


def test_overrides_complete_an_unknown_release():
    pins = dict.fromkeys(cp.package_names("13.0.3", "slim"), "13.0.99-1")
    (entry,) = cp.plan(["13.0.3"], "slim", KNOWN, {"13.0.3": pins})
    assert all(p.endswith("=13.0.99-1") for p in entry["packages"])


@pytest.mark.parametrize(
    "name",
    ["cuda", "cuda-13-0", "cuda-runtime-13-0", "cuda-drivers", "cuda-drivers-580", "cuda-toolkit", "cuda-toolkit-13", "nvidia-open", "libnvidia-compute-580"],
)
def test_forbidden_names(name):
    assert cp.FORBIDDEN.match(name)


@pytest.mark.parametrize("name", cp.package_names("13.0.2", "full"))
def test_planned_names_are_allowed(name):
    assert not cp.FORBIDDEN.match(name)


@pytest.mark.parametrize(
    "driver,minimum,too_old",
    [
        ("570.124.06", "580.95.05", True),
        ("580.95.05", "580.95.05", False),
        ("580.82.07", "580.95.05", True),
        ("590.44.01", "580.65.06", False),
        ("575.57.08", "575.51.03", False),
    ],
)
def test_driver_too_old(driver, minimum, too_old):
    assert cp.driver_too_old(driver, minimum) is too_old


def test_summary_lines():
    toolkits = [
        {
            "path": "/usr/local/cuda-12.8",
            "dir_version": "12.8",
            "version": "12.8",
            "release": "12.8.93",
            "has_curand_headers": False,
            "has_driver_stubs": False,
        },
        {"path": "/usr/local/cuda-13.0", "dir_version": "13.0", "version": "13.0", "release": "13.0.88", "has_curand_headers": True, "has_driver_stubs": True},
    ]
    results = [{"version": "13.0", "arch": "sm_120a", "skipped": False, "rc": 0}, {"version": "13.0", "arch": "sm_90a", "skipped": True}]
    summary = cp.summarize(toolkits, results, {"path": "/usr/local/cuda-12.8"}, ["13.0"])
    assert [cp.summary_line(e) for e in summary] == [
        "/usr/local/cuda-12.8: CUDA 12.8.93, JIT-ready: no, compiles: not checked (not managed here) [/usr/local/cuda]",
        "/usr/local/cuda-13.0: CUDA 13.0.88, JIT-ready: yes, compiles: sm_120a",
    ]


TK13 = {"path": "/usr/local/cuda-13.0", "dir_version": "13.0", "version": "13.0", "release": "13.0.88", "identity": "aaaa000011112222"}
TK13_UPGRADED = dict(TK13, identity="bbbb000011112222")
TK12 = {"path": "/usr/local/cuda-12.8", "dir_version": "12.8", "version": "12.8", "release": "12.8.93", "identity": "cccc000011112222"}
RECORD = {"/usr/local/cuda-13.0": {"sm_120a": "aaaa000011112222"}}


@pytest.mark.parametrize(
    "record,toolkits,version,arch,live,needed",
    [
        (RECORD, [TK13], "13.0", "sm_120a", False, False),  # compiled before with the toolkit as it is now
        (RECORD, [TK13], "13.0", "sm_120a", True, True),  # --tags verify compiles whatever the record says
        (RECORD, [TK13_UPGRADED], "13.0", "sm_120a", False, True),  # upgraded or reinstalled since
        (RECORD, [TK13], "13.0", "sm_100a", False, True),  # another arch (another GPU model)
        ({}, [TK13], "13.0", "sm_120a", False, True),  # no record yet
        (RECORD, [], "13.0", "sm_120a", False, True),  # not measured: compile (the task's own condition skips a missing one)
        (RECORD, [dict(TK13, identity=None)], "13.0", "sm_120a", False, True),
        ({"/usr/local/cuda-13.0": {"sm_120a": None}}, [dict(TK13, identity=None)], "13.0", "sm_120a", False, True),
    ],
)
def test_compile_needed(record, toolkits, version, arch, live, needed):
    assert cp.compile_needed(record, toolkits, version, arch, live) is needed


def test_compile_record_keeps_what_still_holds_and_adds_what_passed():
    results = [
        {"version": "13.0", "arch": "sm_120a", "skipped": True},  # vouched for by the record
        {"version": "13.0", "arch": "sm_100a", "skipped": False, "rc": 0},  # compiled now
        {"version": "12.8", "arch": "sm_120a", "skipped": False, "rc": 1},  # failed (the module fails then; never recorded)
    ]
    record = dict(RECORD, **{"/usr/local/cuda-12.6": {"sm_90a": "dddd"}})  # a toolkit that is gone
    assert cp.compile_record([TK13, TK12], results, record) == {"/usr/local/cuda-13.0": {"sm_120a": "aaaa000011112222", "sm_100a": "aaaa000011112222"}}
    # an upgrade drops the old entry; what compiled after it is recorded with the new identity
    after = [{"version": "13.0", "arch": "sm_120a", "skipped": False, "rc": 0}]
    assert cp.compile_record([TK13_UPGRADED], after, RECORD) == {"/usr/local/cuda-13.0": {"sm_120a": "bbbb000011112222"}}
    assert cp.compile_record([TK13], [], None) == {}


def test_compiles_are_every_toolkit_and_arch_in_order_and_only_those_present_and_not_vouched_for():
    jobs = cp.compiles(["13.0", "12.9"], ["sm_120a", "sm_100a"], [TK13], RECORD, False)
    assert jobs == [
        {"version": "13.0", "arch": "sm_120a", "needed": False},  # the record vouches for it
        {"version": "13.0", "arch": "sm_100a", "needed": True},
        {"version": "12.9", "arch": "sm_120a", "needed": False},  # not measured there (check mode before the install)
        {"version": "12.9", "arch": "sm_100a", "needed": False},
    ]
    # --tags verify compiles every toolkit that is there, whatever the record says
    assert [j["needed"] for j in cp.compiles(["13.0", "12.9"], ["sm_120a"], [TK13], RECORD, True)] == [True, False]
    assert cp.compiles(["13.0"], [], [TK13], RECORD, False) == []


def test_compile_argv_is_the_kernel_on_stdin_and_nothing_written():
    assert cp.compile_argv("/usr/local", "13.0", "sm_120a") == [
        "/usr/local/cuda-13.0/bin/nvcc",
        "-arch=sm_120a",
        "-cubin",
        "-x",
        "cu",
        "-o",
        "/dev/null",
        "/dev/stdin",
    ]
    assert cp.KERNEL == "__global__ void scale(float *x, float a) { x[threadIdx.x] *= a; }"


# nvcc 13.0.88 on this machine: the kernel for an arch it does not know, and a source it cannot parse (stderr, rc 1)
NVCC_BAD_ARCH = "nvcc fatal   : Unsupported gpu architecture 'sm_999'"
NVCC_BAD_SOURCE = (
    "/dev/stdin(1): error: this declaration has no storage class or type specifier\n  garbage {\n  ^\n\n"
    'At end of source: error: expected an expression\n\nAt end of source: error: expected a "}"\n\n'
    'At end of source: error: expected a ";"\n\n4 errors detected in the compilation of "/dev/stdin".'
)


def _compiled(version, arch, rc, stderr=""):
    return {"version": version, "arch": arch, "skipped": False, "cmd": cp.compile_argv("/usr/local", version, arch), "rc": rc, "stdout": "", "stderr": stderr}


@pytest.mark.parametrize(
    "results,msg",
    [
        ([_compiled("13.0", "sm_120a", 0), {"version": "12.8", "arch": "sm_120a", "skipped": True}], ""),
        ([], ""),
        (
            [_compiled("13.0", "sm_120a", 0), _compiled("13.0", "sm_999", 1, NVCC_BAD_ARCH)],
            "the verify kernel did not compile (non-zero return code): /usr/local/cuda-13.0/bin/nvcc -arch=sm_999: rc 1:"
            " nvcc fatal   : Unsupported gpu architecture 'sm_999'",
        ),
        (
            [_compiled("13.0", "sm_120a", 1, NVCC_BAD_SOURCE), _compiled("12.9", "sm_120a", 2)],
            "the verify kernel did not compile (non-zero return code): /usr/local/cuda-13.0/bin/nvcc -arch=sm_120a: rc 1:"
            " /dev/stdin(1): error: this declaration has no storage class or type specifier;"
            " /usr/local/cuda-12.9/bin/nvcc -arch=sm_120a: rc 2",
        ),
    ],
)
def test_compile_failure_names_each_failed_compile_and_why(results, msg):
    assert cp.compile_failure(results) == msg


def test_compile_record_text_is_the_json_the_role_has_always_written():
    # ansible.builtin.to_nice_json's format, then a newline (the paths task's content)
    record = {"/usr/local/cuda-13.0": {"sm_120a": "aaaa000011112222", "sm_100a": "aaaa000011112222"}}
    assert cp.compile_record_text(record) == (
        '{\n    "/usr/local/cuda-13.0": {\n        "sm_100a": "aaaa000011112222",\n        "sm_120a": "aaaa000011112222"\n    }\n}\n'
    )
    assert cp.compile_record_text({}) == "{}\n"


def test_summary_line_says_a_compile_came_from_the_record():
    results = [{"version": "13.0", "arch": "sm_120a", "skipped": True}]
    jit = {"has_curand_headers": True, "has_driver_stubs": True}
    (entry,) = cp.summarize([dict(TK13, **jit)], results, None, ["13.0"], RECORD)
    assert entry["compiled_for"] == ["sm_120a"] and entry["recorded"] == ["sm_120a"]
    assert cp.summary_line(entry) == (
        "/usr/local/cuda-13.0: CUDA 13.0.88, JIT-ready: yes, compiles: sm_120a"
        " (sm_120a as recorded: the toolkit is unchanged since; --tags verify compiles again)"
    )
    # the record no longer matches (the toolkit changed) and the compile was skipped: not vouched for
    (entry,) = cp.summarize([dict(TK13_UPGRADED, **jit)], results, None, ["13.0"], RECORD)
    assert entry["compiled_for"] == [] and cp.summary_line(entry).endswith("compiles: FAILED")


def test_summary_without_compile_results_takes_the_record_for_the_archs_wanted():
    """The verify phase's checks skipped (nothing to check): no compile results; each wanted toolkit and arch the record
    vouches for is listed as recorded, as a compile the loop skipped would be."""
    jit = {"has_curand_headers": True, "has_driver_stubs": True}
    (entry, other) = cp.summarize([dict(TK13, **jit), dict(TK12, **jit)], [], None, ["13.0"], RECORD, ["sm_120a"])
    assert entry["compiled_for"] == entry["recorded"] == ["sm_120a"] and other["compiled_for"] == []
    assert "compiles: sm_120a (sm_120a as recorded" in cp.summary_line(entry)
    # an arch the record does not vouch for, or without archs given (as before): not compiled
    (entry, _other) = cp.summarize([dict(TK13, **jit), dict(TK12, **jit)], [], None, ["13.0"], RECORD, ["sm_100a"])
    assert entry["compiled_for"] == [] and cp.summary_line(entry).endswith("compiles: FAILED")
    assert cp.summarize([dict(TK13, **jit)], [], None, ["13.0"], RECORD)[0]["compiled_for"] == []


@pytest.mark.parametrize(
    "content,want",
    [
        (None, {}),  # no file
        ("not json", {}),
        ("[1, 2]", {}),
        ('{"/usr/local/cuda-13.0": {"sm_120a": "aaaa", "sm_90a": 7}, "x": "y"}', {"/usr/local/cuda-13.0": {"sm_120a": "aaaa"}}),
    ],
)
def test_read_compile_record(tmp_path, content, want):
    path = tmp_path / "cuda-compiles.json"
    if content is not None:
        path.write_text(content)
    assert cp.read_compile_record(str(path)) == want
    assert cp.read_compile_record("") == {}


# every row checked with `dpkg --compare-versions A lt|eq|gt B` (dpkg 1.21.22, Debian 12)
DPKG_ORDER = [
    ("13.0.88-1", "13.0.88-2", -1),
    ("13.0.88-1", "13.0.88-1", 0),
    ("13.0.96-1", "13.0.88-1", 1),
    ("1:12.8-1", "13.0-1", 1),
    ("13.0~rc1-1", "13.0-1", -1),
    ("13.0.2-1", "13.0.10-1", -1),
    ("13.0-1", "13.0", 1),
    ("13.0a-1", "13.0-1", 1),
    ("13.0+lab1-1", "13.0-1", 1),
    ("2.0-1ubuntu1", "2.0-1", 1),
    ("1.0~~a", "1.0~", -1),
    ("12.8.90-1", "13.0.88-1", -1),
]


@pytest.mark.parametrize("row", DPKG_ORDER)
def test_versions_compare_as_dpkg_does(row):
    first, second, expected = row
    assert cp.compare_versions(first, second) == expected
    assert cp.compare_versions(*reversed(row[:2])) == -expected  # and the other way round


# dpkg-query -W -f='${Package} ${Version} ${Status}\n' on a host the role converged for 13.0.2 (held), 12.8's
# config-common from NVIDIA's repo not held, one package removed with its config kept
DPKG_QUERY = """cuda-toolkit-config-common 13.0.96-1 hold ok installed
cuda-toolkit-13-config-common 13.0.96-1 hold ok installed
cuda-toolkit-13-0-config-common 13.0.96-1 hold ok installed
cuda-nvcc-13-0 13.0.88-1 hold ok installed
cuda-crt-13-0 13.0.88-1 install ok installed
libcurand-dev-13-0 10.4.0.35-1 deinstall ok config-files
"""


def test_parse_installed_keeps_installed_packages_and_their_hold():
    got = cp.parse_installed(DPKG_QUERY)
    assert got["cuda-nvcc-13-0"] == {"version": "13.0.88-1", "held": True}
    assert got["cuda-crt-13-0"] == {"version": "13.0.88-1", "held": False}
    assert "libcurand-dev-13-0" not in got and cp.parse_installed("") == {}


def plan_of(pins):
    return [{"release": "13.0.3", "version": "13.0", "packages": ["%s=%s" % kv for kv in pins.items()]}]


def test_a_pin_bump_upgrades_the_held_packages_and_a_lower_pin_is_a_downgrade():
    installed = cp.parse_installed(DPKG_QUERY)
    bump = plan_of(
        {"cuda-toolkit-config-common": "13.0.96-1", "cuda-nvcc-13-0": "13.0.88-2", "cuda-crt-13-0": "13.0.88-2", "libcurand-dev-13-0": "10.4.0.35-1"}
    )
    got = cp.changes(bump, installed)
    assert got["install"] == ["libcurand-dev-13-0"] and got["unchanged"] == ["cuda-toolkit-config-common"] and got["downgrade"] == []
    assert got["upgrade"] == [
        {"name": "cuda-nvcc-13-0", "installed": "13.0.88-1", "wanted": "13.0.88-2", "held": True},
        {"name": "cuda-crt-13-0", "installed": "13.0.88-1", "wanted": "13.0.88-2", "held": False},
    ]
    # crt was not held, libcurand-dev is new, nvcc loses its hold in the upgrade (apt's doing): all three held after
    assert got["unheld"] == ["cuda-nvcc-13-0", "cuda-crt-13-0", "libcurand-dev-13-0"]
    back = cp.changes(plan_of({"cuda-nvcc-13-0": "13.0.48-1", "cuda-toolkit-config-common": "1:12.0-1"}), installed)
    assert [d["name"] for d in back["downgrade"]] == ["cuda-nvcc-13-0"] and back["upgrade"][0]["name"] == "cuda-toolkit-config-common"
    assert back["downgrades"] == "cuda-nvcc-13-0 from 13.0.88-1 to 13.0.48-1" and got["downgrades"] == ""


def test_the_shipped_release_is_unchanged_on_a_host_converged_for_it():
    with open(ROLE_VARS) as fh:
        known = yaml.safe_load(fh)["__cuda_toolkit_releases"]
    shipped = cp.plan(["13.0.2"], "slim", known)
    query = "".join("%s %s hold ok installed\n" % tuple(p.split("=")) for p in shipped[0]["packages"])
    got = cp.changes(shipped, cp.parse_installed(query))
    assert got["upgrade"] == got["downgrade"] == got["install"] == got["unheld"] == [] and len(got["unchanged"]) == len(shipped[0]["packages"])


# every package (no names), on the lab host after `dpkg --unpack` of one pinned package without configuring it (what a
# play killed inside apt leaves), a package removed with its config kept, one dpkg knows but never installed
DPKG_QUERY_ALL = """cuda-cudart-12-8 12.8.90-1 install ok installed
cuda-cudart-13-0 13.0.96-1 hold ok installed
cuda-cudart-dev-13-0 13.0.96-1 install ok unpacked
cuda-keyring 1.1-1 install ok installed
libcurand-dev-13-0 10.4.0.35-1 deinstall ok config-files
libfoo1  unknown ok not-installed
openssh-server 1:9.2p1-2+deb12u10 install ok installed
"""


def test_dpkg_state_names_an_unfinished_dpkg_run_and_each_package_status():
    got = cp.dpkg_state(DPKG_QUERY_ALL)
    assert got["interrupted"] == ["cuda-cudart-dev-13-0"]
    assert got["status"]["cuda-keyring"] == "install ok installed" and got["status"]["cuda-cudart-13-0"] == "hold ok installed"
    assert got["status"]["libfoo1"] == "unknown ok not-installed" and "libcurand-dev-13-0" not in got["interrupted"]
    # a half-configured package and one whose reinstall is required are unfinished too; an empty read has nothing
    assert cp.dpkg_state("a 1 install ok half-configured\nb 1 install reinstreq installed\n")["interrupted"] == ["a", "b"]
    assert cp.dpkg_state("") == {"status": {}, "interrupted": []}
    # the unpacked one is not installed for the plan: apt has work, and the role finishes dpkg's run first
    assert "cuda-cudart-dev-13-0" not in cp.parse_installed(DPKG_QUERY_ALL)


def test_apt_has_work_only_when_something_is_installed_or_upgraded():
    installed = cp.parse_installed(DPKG_QUERY)
    assert cp.changes(plan_of({"cuda-nvcc-13-0": "13.0.88-1"}), installed)["apt"] is False
    assert cp.changes(plan_of({"cuda-nvcc-13-0": "13.0.88-2"}), installed)["apt"] is True  # a pin bump
    assert cp.changes(plan_of({"libcurand-dev-13-0": "10.4.0.35-1"}), installed)["apt"] is True  # removed, config kept
    # not held yet: apt has nothing to do, the hold is apt-mark's
    got = cp.changes(plan_of({"cuda-crt-13-0": "13.0.88-1"}), installed)
    assert got["apt"] is False and got["unheld"] == ["cuda-crt-13-0"]


@pytest.mark.parametrize(
    "releases, root, expected",
    [
        (["13.0.2"], "/usr/local", "/usr/local/cuda-13.0"),
        (["12.9.1", "13.0.2"], "/usr/local/", "/usr/local/cuda-13.0"),
        # numbers, not strings: 12.10 is newer than 12.9
        (["12.9.1", "12.10.0"], "/opt", "/opt/cuda-12.10"),
        (["13.0.2", "12.8.1"], "/usr/local", "/usr/local/cuda-13.0"),
    ],
)
def test_home_is_the_newest_release_wanted(releases, root, expected):
    assert cp.home(releases, root) == expected


@pytest.mark.parametrize("releases", [[], ["13.0"], ["latest"]])
def test_home_refuses_what_is_not_a_release(releases):
    with pytest.raises(cp.PlanError, match="cuda_toolkit_versions"):
        cp.home(releases)


# cuda_facts' reading of ct200 (8x RTX PRO 6000, open module, driver 580) and of a host on an older proprietary driver
CT200 = {
    "toolkits": [{"dir_version": "12.8", "version": "12.8"}, {"dir_version": "13.0", "version": "13.0"}],
    "driver": {"present": True, "version": "580.95.05", "branch": "580", "cuda_version": "13.0", "open_kernel_module": True, "error": None},
    "compute_capabilities": ["12.0"] * 8,
}
OLD = {
    "toolkits": [{"dir_version": "12.8", "version": "12.8"}],
    "driver": {"present": True, "version": "570.124.06", "branch": "570", "cuda_version": "12.8", "open_kernel_module": False, "error": None},
    "compute_capabilities": ["12.0", "8.9"],
}
NO_DRIVER = {"toolkits": [], "driver": {"present": False, "version": None, "error": "nvidia-smi: No such file or directory"}, "compute_capabilities": []}
OPTIONS = {
    "root": "/usr/local",
    "default": "",
    "newest": "13.0.2",
    "min_driver": "580.65.06",
    "check_driver": True,
    "require_open_kernel_module": True,
    "live": False,
    "check_mode": False,
    "links": {"error": None, "verify_refusal": ""},
}


@pytest.mark.parametrize(
    ("facts", "wanted", "options", "refusals"),
    [
        (CT200, ["13.0"], {}, []),
        (CT200, ["13.0"], {"default": "12.8"}, []),
        (
            CT200,
            ["13.0"],
            {"default": "13.1"},
            [
                "cuda_toolkit_default=13.1 must be the X.Y of a toolkit that is installed under /usr/local or wanted in"
                " cuda_toolkit_versions (known here: 12.8, 13.0)."
            ],
        ),
        (CT200, ["13.0"], {"default": "13"}, ["cuda_toolkit_default=13 must be the X.Y"]),
        (CT200, ["13.0"], {"min_driver": None}, []),
        (
            OLD,
            ["13.0"],
            {},
            [
                "driver 570.124.06 (R570, CUDA <= 12.8) is too old for CUDA 13.0.2, which needs >= 580.65.06. Upgrade the"
                " driver, or set cuda_toolkit_versions to releases it supports (or cuda_toolkit_check_driver=false for a host"
                " without GPUs).",
                "GPUs of compute capability 12.0 (Blackwell) need NVIDIA's open kernel module, but the proprietary one is"
                " loaded: reinstall the driver with the open modules, or set cuda_toolkit_require_open_kernel_module=false.",
            ],
        ),
        (OLD, ["13.0"], {"check_driver": False, "require_open_kernel_module": False}, []),
        (NO_DRIVER, ["13.0"], {}, ["no NVIDIA driver answers (nvidia-smi: No such file or directory). Upgrade the driver"]),
        (NO_DRIVER, ["13.0"], {"check_driver": False}, []),
        # --tags verify: the links as the probe read them
        (CT200, ["13.0"], {"live": True, "links": {"error": None, "verify_refusal": "/usr/local/cuda moved"}}, ["/usr/local/cuda moved"]),
        (CT200, ["13.0"], {"live": True, "check_mode": True, "links": {"error": None, "verify_refusal": "/usr/local/cuda moved"}}, []),
        (CT200, ["13.0"], {"live": True, "check_mode": True, "links": {"error": "cannot read it", "verify_refusal": ""}}, ["cannot read it"]),
        (CT200, ["13.0"], {"live": False, "links": {"error": "cannot read /usr/local/cuda", "verify_refusal": "x"}}, []),
    ],
)
def test_host_refusals(facts, wanted, options, refusals):
    got = cp.host_refusals(facts, wanted, dict(OPTIONS, **options))
    assert len(got) == len(refusals)
    assert all(g.startswith(r) for g, r in zip(got, refusals, strict=True)), got


def test_newest_compares_releases_as_numbers_and_home_follows_it():
    assert cp.newest(["12.9.1", "13.0.2", "12.10.0"]) == "13.0.2"
    assert cp.newest(["12.10.0", "12.9.1"]) == "12.10.0"  # not as strings ("12.9" > "12.1")
    assert cp.home(["12.10.0", "12.9.1"], "/usr/local/") == "/usr/local/cuda-12.10"
    with pytest.raises(cp.PlanError, match="at least one release"):
        cp.newest([])
    with pytest.raises(cp.PlanError, match="not a full CUDA release"):
        cp.newest(["13.0"])


FACTS_DEBIAN = {"distribution": "Debian", "distribution_major_version": "12", "distribution_version": "12.8", "architecture": "x86_64"}
FACTS_UBUNTU_ARM = {"distribution": "Ubuntu", "distribution_major_version": "24", "distribution_version": "24.04", "architecture": "aarch64"}
BASE = "https://developer.download.nvidia.com/compute/cuda/repos"


@pytest.mark.parametrize(
    "base, distro, arch, facts, expected",
    [
        (BASE, "", "", FACTS_DEBIAN, BASE + "/debian12/x86_64/"),
        (BASE + "//", "", "", FACTS_UBUNTU_ARM, BASE + "/ubuntu2404/sbsa/"),  # aarch64 servers are NVIDIA's sbsa
        (BASE, "ubuntu2204", "x86_64", FACTS_UBUNTU_ARM, BASE + "/ubuntu2204/x86_64/"),  # the overrides win
        ("file:///srv/cuda-repo", "", "", dict(FACTS_DEBIAN, architecture="ppc64le"), "file:///srv/cuda-repo/debian12/ppc64le/"),
    ],
)
def test_repo_url_from_the_host_or_the_overrides(base, distro, arch, facts, expected):
    assert cp.repo_url(base, distro, arch, facts) == expected


NVIDIA = "EB693B3035CD5710E231E123A4B469963BF863CC"
NVIDIA_URL = "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/"
APT = {"method": "apt", "repo_source": "deb822", "hold": True, "repo_name": "cuda-toolkit", "repo_url": NVIDIA_URL, "key_fingerprint": NVIDIA}


def shipped_plan():
    with open(ROLE_VARS) as fh:
        known = yaml.safe_load(fh)["__cuda_toolkit_releases"]
    return cp.plan(["13.0.2"], "slim", known)


def converged_query(plan_, extra=""):
    return "".join("%s %s hold ok installed\n" % tuple(p.split("=")) for p in plan_[0]["packages"]) + extra


def in_place_repo(key="/etc/apt/keyrings/cuda-archive-keyring.asc", fingerprint=NVIDIA, url=NVIDIA_URL, mode="0644"):
    """toolkit_read's apt_repo on a host whose deb822 source and key the repo phase wrote (apt_repo.read's shape)."""
    fields = {"X-Repolib-Name": "cuda-toolkit", "Signed-By": key, "Suites": "/", "Types": "deb", "URIs": url}
    return {
        "source": {"path": "/etc/apt/sources.list.d/cuda-toolkit.sources", "present": True, "mode": mode, "stanzas": [fields], "error": None},
        "key": {"path": key, "present": True, "mode": "0644", "armored": True, "fingerprints": [fingerprint], "error": None},
    }


def test_work_on_a_converged_host_is_nothing_once_the_deb822_source_and_its_key_are_in_place():
    plan_ = shipped_plan()
    reading = {"packages": {"stdout": converged_query(plan_)}, "links": {"needed": False}, "apt_repo": in_place_repo()}
    got = cp.work(plan_, reading, APT)
    assert (got["apt"], got["links"], got["repo"], got["any"], got["repo_why"]) == (False, False, False, False, [])
    assert got["sources_naming"] == []  # no apt_sources in this reading
    ours = "/etc/apt/sources.list.d/cuda-toolkit.sources"
    named = cp.work(plan_, dict(reading, apt_sources={ours: [NVIDIA_URL.rstrip("/")], "/etc/apt/sources.list": ["http://deb.debian.org/debian"]}), APT)
    assert named["sources_naming"] == [ours]
    assert got["host"] is reading and got["changes"]["apt"] is False and got["dpkg"]["interrupted"] == []
    # the source not read (an older lock's reading), a source changed by hand, a key pinned anew, no pin at all: work
    for changed, options in [
        (dict(reading, apt_repo=None), APT),
        (dict(reading, apt_repo=in_place_repo(mode="0600")), APT),
        (reading, dict(APT, key_fingerprint="3C1036BC43DEFC0761E569751FB871BE8BE30BF2")),
        (reading, dict(APT, key_fingerprint="")),
        (reading, dict(APT, repo_url="file:/srv/cuda-mirror/debian12/x86_64/")),
    ]:
        got = cp.work(plan_, changed, options)
        assert got["repo"] is True and got["any"] is True and got["repo_why"], changed
    # with the keyring's source and its package installed, nothing at all: the change phases are skipped
    keyring = dict(APT, repo_source="keyring")
    done = cp.work(plan_, {"packages": {"stdout": converged_query(plan_, "cuda-keyring 1.1-1 install ok installed\n")}, "links": {}}, keyring)
    assert done["keyring_installed"] is True and done["any"] is False and done["repo_why"] == []
    assert cp.work(plan_, reading, keyring)["repo"] is True  # the keyring package is still to install


def test_work_finds_a_missing_package_an_unfinished_dpkg_run_an_unheld_pin_and_links():
    plan_ = shipped_plan()
    none = dict(APT, repo_source="none")
    missing = converged_query(plan_).replace("cuda-nvcc-13-0 13.0.88-1 hold ok installed\n", "")
    assert cp.work(plan_, {"packages": {"stdout": missing}}, none)["apt"] is True
    unpacked = converged_query(plan_, "cuda-cudart-12-8 12.8.90-1 install ok unpacked\n")
    got = cp.work(plan_, {"packages": {"stdout": unpacked}}, none)
    assert got["apt"] is True and got["changes"]["apt"] is False and got["dpkg"]["interrupted"] == ["cuda-cudart-12-8"]
    unheld = converged_query(plan_).replace("cuda-crt-13-0 13.0.88-1 hold", "cuda-crt-13-0 13.0.88-1 install")
    assert cp.work(plan_, {"packages": {"stdout": unheld}}, none)["apt"] is True
    assert cp.work(plan_, {"packages": {"stdout": unheld}}, dict(none, hold=False))["any"] is False  # unheld is fine then
    links = cp.work(plan_, {"packages": {"stdout": converged_query(plan_)}, "links": {"needed": True}}, none)
    assert (links["links"], links["apt"], links["any"]) == (True, False, True)


def test_work_of_the_runfile_method_is_checked_each_run_and_never_apt():
    plan_ = shipped_plan()
    got = cp.work(plan_, {"packages": {"stdout": ""}, "links": {"needed": False}}, {"method": "runfile", "repo_source": "deb822", "hold": True})
    assert (got["apt"], got["repo"], got["links"], got["any"]) == (False, False, False, True)
    assert cp.work(plan_, {}, {"method": "runfile", "repo_source": "none", "hold": False})["changes"]["install"]  # no reading of packages


FACTS13 = {"toolkits": [dict(TK13, has_curand_headers=True, has_driver_stubs=True), dict(TK12, has_curand_headers=True, has_driver_stubs=True)]}
READ = {"compile_record": RECORD, "links": {"pending": []}}
QUIET = {"live": False, "method": "apt", "changed": False, "check_mode": False}


def facts_with(**changes):
    return {"toolkits": [dict(FACTS13["toolkits"][0], **changes), FACTS13["toolkits"][1]]}


@pytest.mark.parametrize(
    "facts, versions, archs, reading, options, work",
    [
        # a converged host: every check would be skipped or pass
        (FACTS13, ["13.0"], ["sm_120a"], READ, QUIET, False),
        # --tags verify compiles every one; a runfile install is checked each run; this run changed something; no facts
        (FACTS13, ["13.0"], ["sm_120a"], READ, dict(QUIET, live=True), True),
        (FACTS13, ["13.0"], ["sm_120a"], READ, dict(QUIET, method="runfile"), True),
        (FACTS13, ["13.0"], ["sm_120a"], READ, dict(QUIET, changed=True), True),
        (None, ["13.0"], ["sm_120a"], READ, QUIET, True),
        # what the checks would fail on: curand headers gone (nvcc still answers), no stubs, another release, missing
        (facts_with(has_curand_headers=False), ["13.0"], ["sm_120a"], READ, QUIET, True),
        (facts_with(has_driver_stubs=False), ["13.0"], ["sm_120a"], READ, QUIET, True),
        (facts_with(version="12.9"), ["13.0"], ["sm_120a"], READ, QUIET, True),
        (FACTS13, ["13.1"], ["sm_120a"], READ, QUIET, True),
        # ... except a toolkit not installed yet in check mode (its checks are skipped there)
        (FACTS13, ["13.1"], ["sm_120a"], READ, dict(QUIET, check_mode=True), False),
        # a compile not on record: another arch, the toolkit upgraded since, no record
        (FACTS13, ["13.0"], ["sm_120a", "sm_100a"], READ, QUIET, True),
        (facts_with(identity="bbbb000011112222"), ["13.0"], ["sm_120a"], READ, QUIET, True),
        (FACTS13, ["13.0"], ["sm_120a"], {"links": {"pending": []}}, QUIET, True),
        # the links not where they belong; a record entry that no longer holds (a toolkit gone)
        (FACTS13, ["13.0"], ["sm_120a"], dict(READ, links={"pending": ["/usr/local/cuda-13"]}), QUIET, True),
        (FACTS13, ["13.0"], ["sm_120a"], dict(READ, compile_record=dict(RECORD, **{"/usr/local/cuda-12.9": {"sm_120a": "dddd"}})), QUIET, True),
    ],
)
def test_verify_work(facts, versions, archs, reading, options, work):
    assert cp.verify_work(facts, versions, archs, reading, options) is work


def test_jit_ready_needs_curand_headers_and_the_driver_stubs():
    assert cp.jit_ready({"has_curand_headers": True, "has_driver_stubs": True}) is True
    assert cp.jit_ready({"has_curand_headers": True, "has_driver_stubs": False}) is False
    assert cp.jit_ready({"has_driver_stubs": True}) is False


def _simulate(name, rc=0):
    """`apt-get --simulate --no-install-recommends install ...` as this Debian 12 machine answered it (data/)."""
    data = pathlib.Path(__file__).parent.parent / "data"
    if rc:
        return {"rc": rc, "stdout": (data / (name + ".out")).read_text(), "stderr": (data / (name + ".err")).read_text()}
    return {"rc": 0, "stdout": (data / (name + ".txt")).read_text(), "stderr": ""}


def test_dry_run_lists_what_apt_would_install_and_upgrade():
    assert cp.dry_run(_simulate("apt-simulate-hello")) == {"ok": True, "installs": ["hello"], "msg": "apt would install 1 package(s): hello"}
    # an upgrade's line carries the installed version in brackets: the name is still the second field
    assert cp.dry_run(_simulate("apt-simulate-upgrade"))["installs"] == ["base-files"]
    assert cp.dry_run({"rc": 0, "stdout": "Reading package lists...\n", "stderr": ""})["msg"] == "apt would install 0 package(s): none (all present)"


def test_dry_run_refuses_a_plan_that_removes_a_package():
    got = cp.dry_run(_simulate("apt-simulate-sysvinit-removes"))
    assert not got["ok"] and got["installs"] == ["insserv", "startpar", "sysv-rc", "initscripts", "sysvinit-core"]
    assert got["msg"].startswith("the plan would remove at-spi2-core, gsettings-desktop-schemas, dconf-gsettings-backend, ")
    assert got["msg"].endswith(": nothing may be lost; check cuda_toolkit_versions and cuda_toolkit_package_versions")


def test_dry_run_refuses_what_apt_cannot_plan_naming_the_repository():
    got = cp.dry_run(_simulate("apt-simulate-unknown", rc=100), "file:/srv/cuda-mirror")
    assert not got["ok"] and got["msg"] == (
        "apt cannot plan the pinned packages (E: Unable to locate package nosuchpkg-xyz): check cuda_toolkit_versions,"
        " cuda_toolkit_package_versions and the repository (cuda_toolkit_repo_base_url=file:/srv/cuda-mirror)"
    )
    assert cp.dry_run({"rc": 100, "stdout": "", "stderr": ""})["msg"].startswith("apt cannot plan the pinned packages (rc 100)")


@pytest.mark.parametrize("name", ["nvidia-driver-580-open", "libnvidia-compute-580", "cuda-drivers", "cuda-drivers-580"])
def test_dry_run_refuses_a_driver_package(name):
    # hello's real line, the package renamed: this machine has no NVIDIA repository to plan a driver from
    stdout = _simulate("apt-simulate-hello")["stdout"].replace("Inst hello ", "Inst %s " % name)
    got = cp.dry_run({"rc": 0, "stdout": stdout, "stderr": ""})
    assert not got["ok"] and got["msg"] == (
        "the plan would install driver packages (%s): this role never touches the driver; check cuda_toolkit_package_versions" % name
    )


def test_dry_run_argv_is_apt_simulating_the_pins():
    assert cp.dry_run_argv(["cuda-nvcc-13-0=13.0.88-1", "libcurand-13-0=10.4.0.35-1"]) == [
        "apt-get",
        "--simulate",
        "--no-install-recommends",
        "--allow-change-held-packages",
        "install",
        "cuda-nvcc-13-0=13.0.88-1",
        "libcurand-13-0=10.4.0.35-1",
    ]


def test_dry_run_lets_the_toolkit_packages_through():
    # cuda-driver-dev (the stubs) and the toolkit's own packages are no driver
    stdout = "Inst cuda-driver-dev-13-0 (13.0.96-1 lab-mirror [amd64])\nInst cuda-nvcc-13-0 (13.0.88-1 lab-mirror [amd64])\n"
    assert cp.dry_run({"rc": 0, "stdout": stdout, "stderr": ""})["ok"]


# role_plan: the role's variables as the toolkit_probe action is given them (vars/main.yml __cuda_toolkit_plan_options)
ROLE = {
    "versions": ["13.0.2"],
    "components": "slim",
    "releases": KNOWN,
    "package_versions": {},
    "method": "apt",
    "repo_source": "deb822",
    "hold": True,
    "repo_name": "cuda-toolkit",
    "source_file": "/etc/apt/sources.list.d/cuda-toolkit.sources",
    "repo_base_url": "https://developer.download.nvidia.com/compute/cuda/repos",
    "repo_distro": "",
    "repo_arch": "",
    "repo_key_url": "",
    "key_fingerprint": NVIDIA,
    "root": "/usr/local",
    "default": "",
    "check_driver": True,
    "require_open_kernel_module": True,
    "verify_archs": [],
    "live": False,
    "check_mode": False,
}
BLACKWELL = {
    "toolkits": FACTS13["toolkits"],
    "driver": {"present": True, "version": "580.95.05", "branch": "580", "cuda_version": "13.0", "open_kernel_module": True, "error": None},
    "compute_capabilities": ["12.0"],
}
OURS = "/etc/apt/sources.list.d/cuda-toolkit.sources"
CONVERGED = {
    "packages": {"stdout": converged_query(shipped_plan())},
    "apt_sources": {OURS: [NVIDIA_URL]},
    "apt_repo": in_place_repo(),
    "links": {"needed": False, "pending": [], "kept": {"version": "12.8"}},
    "compile_record": RECORD,
    "apt_access": {"proxy": {"exists": False}, "auth": {"exists": False}},  # no proxy, no logins
}


def test_role_plan_of_a_converged_host_is_nothing_to_do():
    got = cp.role_plan(dict(CONVERGED, ansible_facts={"blackwell_cuda": BLACKWELL}), FACTS_DEBIAN, ROLE)
    assert (got["any"], got["apt"], got["repo"], got["links"], got["verify"], got["live"]) == (False, False, False, False, False, False)
    assert got["releases"] == shipped_plan() and got["versions"] == ["13.0"] and got["packages"] == shipped_plan()[0]["packages"]
    assert (got["newest"], got["min_driver"], got["repo_url"]) == ("13.0.2", "580.95.05", NVIDIA_URL)
    assert got["key_url"] == NVIDIA_URL + "3bf863cc.pub" and got["keyring_url"] == NVIDIA_URL + "cuda-keyring_1.1-1_all.deb"
    assert (got["archs"], got["refusals"], got["change_refusals"], got["keep"]) == (["sm_120a"], [], [], "12.8")
    assert "host" not in got
    # the lock's reading has no facts of its own: the host's (the lock task's) are taken
    assert cp.role_plan(CONVERGED, dict(FACTS_DEBIAN, blackwell_cuda=BLACKWELL), ROLE) == got


@pytest.mark.parametrize(
    "reading, facts, options, want",
    [
        # the runfile method: no repository, no apt, checked each run; the default keeps /usr/local/cuda when nothing was kept
        ({}, FACTS_DEBIAN, dict(ROLE, method="runfile", default="13.0"), {"repo_url": None, "key_url": None, "any": True, "apt": False, "keep": "13.0"}),
        # no link kept, no default: the oldest toolkit wanted
        ({}, FACTS_DEBIAN, dict(ROLE, method="runfile", versions=["13.0.2", "12.8.0"], package_versions={"12.8.0": {}}), None),
        # the archs asked for; no GPUs: sm_120a; the GPUs' archs otherwise
        ({}, dict(FACTS_DEBIAN, blackwell_cuda={"compute_capabilities": ["8.9"]}), dict(ROLE, verify_archs=["sm_100a"]), {"archs": ["sm_100a"]}),
        ({}, dict(FACTS_DEBIAN, blackwell_cuda={"compute_capabilities": []}), ROLE, {"archs": ["sm_120a"]}),
        ({}, dict(FACTS_DEBIAN, blackwell_cuda={"compute_capabilities": ["12.0", "8.9"]}), ROLE, {"archs": ["sm_120a", "sm_89"]}),
        # a mirror's key; the distro and arch given; --tags verify
        (
            {},
            {},
            dict(ROLE, repo_key_url="https://m/key.asc", repo_distro="ubuntu2404", repo_arch="sbsa", live=True),
            {"key_url": "https://m/key.asc", "repo_url": BASE + "/ubuntu2404/sbsa/", "live": True, "verify": True},
        ),
    ],
)
def test_role_plan_decides_from_the_variables(reading, facts, options, want):
    if want is None:  # an unknown release without pins is refused, naming the releases asked for
        with pytest.raises(cp.PlanError, match=r"^cuda_toolkit_versions=\['13.0.2', '12.8.0'\] with cuda_toolkit_package_versions=\{'12.8.0': \{\}\}"):
            cp.role_plan(reading, facts, options)
        return
    got = cp.role_plan(reading, facts, options)
    assert {k: got[k] for k in want} == want


@pytest.mark.parametrize(
    "releases, overrides, message",
    [
        (
            ["13.x"],
            {},
            "cuda_toolkit_versions=['13.x'] with cuda_toolkit_package_versions={} (known releases: 12.8.0, 12.8.1, 12.9.0, 12.9.1, "
            "13.0.0, 13.0.1, 13.0.2): cuda_toolkit_versions: '13.x' is not a full CUDA release X.Y.Z (e.g. 13.0.2)",
        ),
        (
            ["13.0.3"],
            {"13.0.3": {"cuda-nvcc-13-0": "13.0.99-1"}},
            "cuda_toolkit_versions=['13.0.3'] with cuda_toolkit_package_versions="
            "{'13.0.3': {'cuda-nvcc-13-0': '13.0.99-1'}} (known releases: 12.8.0, 12.8.1, 12.9.0, 12.9.1, 13.0.0, 13.0.1, 13.0.2): "
            "no pinned versions for CUDA 13.0.3 packages",
        ),
    ],
)
def test_released_says_what_was_asked_and_why_the_plan_cannot_make_it(releases, overrides, message):
    with pytest.raises(cp.PlanError) as exc:
        cp.released(releases, "slim", KNOWN, overrides)
    assert str(exc.value).startswith(message)


def test_role_plan_shows_no_credentials_and_renders_the_proxies():
    """The plan is printed by the play and its repo_url goes into the 0644 .sources file: the mirror's and the proxies'
    credentials stay out of it (they go to auth.conf.d)."""
    options = dict(
        ROLE,
        repo_base_url="https://user:hunter2@mirror.example/cuda/repos/",
        repo_key_url="https://keyuser:hunter3@mirror.example/key.asc",
        http_proxy="http://pu:hunter4@proxy.example:3128",
        https_proxy="http://proxy.example:3129",
        no_proxy="localhost",
    )
    got = cp.role_plan({}, FACTS_DEBIAN, options)
    assert got["repo_url"] == "https://mirror.example/cuda/repos/debian12/x86_64/"
    assert got["key_url"] == "https://mirror.example/key.asc"
    assert got["keyring_url"] == "https://mirror.example/cuda/repos/debian12/x86_64/cuda-keyring_1.1-1_all.deb"
    assert got["download_proxies"] == {"http": "http://proxy.example:3128", "https": "http://proxy.example:3129"}
    assert got["apt_proxy"].splitlines() == [
        'Acquire::http::Proxy "http://proxy.example:3128";',
        'Acquire::https::Proxy "http://proxy.example:3129";',
        'Acquire::http::Proxy::localhost "DIRECT";',
        'Acquire::https::Proxy::localhost "DIRECT";',
    ]
    assert "hunter" not in json.dumps(got)
    assert cp.role_plan({}, FACTS_DEBIAN, ROLE)["apt_proxy"] == ""
    assert "hunter" not in cp.dry_run({"rc": 100, "stderr": "E: 401"}, options["repo_base_url"])["msg"]
    # what the role gives apt's dry run to name (cuda_apt_plan's repo_base_url): the same message as from the variable
    assert got["repo_base_url"] == "https://mirror.example/cuda/repos/"
    failed = {"rc": 100, "stderr": "E: 401"}
    assert cp.dry_run(failed, got["repo_base_url"])["msg"] == cp.dry_run(failed, options["repo_base_url"])["msg"]
    assert cp.role_plan({}, FACTS_DEBIAN, dict(ROLE, method="runfile"))["repo_base_url"] is None


def test_role_plan_refuses_a_downgrade_a_second_source_and_an_old_driver():
    lower = converged_query(shipped_plan()).replace("cuda-nvcc-13-0 13.0.88-1", "cuda-nvcc-13-0 13.0.99-1")
    mirror = "/etc/apt/sources.list.d/cuda-debian12-x86_64.list"
    reading = dict(CONVERGED, packages={"stdout": lower}, apt_sources={OURS: [NVIDIA_URL], mirror: [NVIDIA_URL]})
    got = cp.role_plan(reading, dict(FACTS_DEBIAN, blackwell_cuda=OLD), ROLE)
    assert got["change_refusals"] == [
        "cuda_toolkit_versions=['13.0.2'] would downgrade cuda-nvcc-13-0 from 13.0.99-1 to 13.0.88-1: the role never moves an installed"
        " toolkit backwards (pin the installed release or a newer one in cuda_toolkit_versions and cuda_toolkit_package_versions).",
        "/etc/apt/sources.list.d/cuda-debian12-x86_64.list already point(s) at"
        " https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/ (e.g. from the cuda-keyring package); a second source"
        " with another Signed-By makes apt update fail. Set cuda_toolkit_repo_source=keyring to use that source, or remove it and keep"
        " cuda_toolkit_repo_source=deb822.",
    ]
    assert any("driver 570.124.06 (R570, CUDA <= 12.8) is too old for CUDA 13.0.2, which needs >= 580.95.05" in r for r in got["refusals"])
    # the keyring's source is the one to use then: no second-source refusal (the package's sha256 given: it is not installed)
    keyring = dict(ROLE, repo_source="keyring", keyring_sha256=KEYRING_SHA256)
    assert len(cp.role_plan(reading, dict(FACTS_DEBIAN, blackwell_cuda=OLD), keyring)["change_refusals"]) == 1


# a sha256 as an operator gives it (the plan checks that there is one; get_url checks the download against it)
KEYRING_SHA256 = "5c1d3c1f0f1e0bb6d8b0c7c2a4f7b1e0c9d8a7b6c5d4e3f2a1b0c9d8e7f6a5b4"
NO_SHA = (
    "cuda_toolkit_repo_keyring_sha256 must be set: cuda-keyring is not installed, so this run would download"
    " https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/cuda-keyring_1.1-1_all.deb and install it as root;"
    " give the sha256 of the package you checked (NVIDIA's differs per distro and architecture)."
)
WITH_KEYRING = converged_query(shipped_plan(), "cuda-keyring 1.1-1 install ok installed\n")


@pytest.mark.parametrize(
    "packages, options, refusals",
    [
        # the role downloads the package: its sha256 is required
        (converged_query(shipped_plan()), dict(ROLE, repo_source="keyring"), [NO_SHA]),
        (converged_query(shipped_plan()), dict(ROLE, repo_source="keyring", keyring_sha256=""), [NO_SHA]),
        (converged_query(shipped_plan()), dict(ROLE, repo_source="keyring", keyring_sha256=KEYRING_SHA256), []),
        # installed already (ct200 as the seeds found it): nothing is downloaded, nothing to check
        (WITH_KEYRING, dict(ROLE, repo_source="keyring"), []),
        # the role's own deb822 source, sources managed elsewhere, the runfile: no keyring package
        (converged_query(shipped_plan()), ROLE, []),
        (converged_query(shipped_plan()), dict(ROLE, repo_source="none"), []),
    ],
)
def test_role_plan_refuses_a_keyring_package_it_would_download_without_its_sha256(packages, options, refusals):
    reading = dict(CONVERGED, packages={"stdout": packages}, apt_sources={})
    assert cp.role_plan(reading, FACTS_DEBIAN, options)["change_refusals"] == refusals


PROXY_TEXT = 'Acquire::http::Proxy "http://proxy.example:3128";\n'
AUTH_TEXT = "machine proxy.example:3128 login u password p\n"
ROOT_0644 = {"exists": True, "mode": 0o644, "uid": 0, "content": PROXY_TEXT}
ROOT_0600 = {"exists": True, "mode": 0o600, "uid": 0}
NONE = {"exists": False}


@pytest.mark.parametrize(
    "access, proxy_text, auth_text, auth_matches, work",
    [
        # as the variables want them: nothing to do
        ({"proxy": NONE, "auth": NONE}, "", "", None, False),
        ({"proxy": ROOT_0644, "auth": ROOT_0600}, PROXY_TEXT, AUTH_TEXT, True, False),
        # a proxy set, changed, or removed from the variables
        ({"proxy": NONE, "auth": NONE}, PROXY_TEXT, "", None, True),
        ({"proxy": dict(ROOT_0644, content='Acquire::http::Proxy "http://old.example:3128";\n'), "auth": NONE}, PROXY_TEXT, "", None, True),
        ({"proxy": ROOT_0644, "auth": NONE}, "", "", None, True),
        ({"proxy": dict(ROOT_0644, mode=0o666), "auth": NONE}, PROXY_TEXT, "", None, True),
        # a credential set, changed (secret_file said the file holds other logins), or removed
        ({"proxy": NONE, "auth": NONE}, "", AUTH_TEXT, None, True),
        ({"proxy": NONE, "auth": ROOT_0600}, "", AUTH_TEXT, False, True),
        ({"proxy": NONE, "auth": ROOT_0600}, "", "", None, True),
        # the right logins but readable by others, or not asked: written again
        ({"proxy": NONE, "auth": dict(ROOT_0600, mode=0o644)}, "", AUTH_TEXT, True, True),
        ({"proxy": NONE, "auth": ROOT_0600}, "", AUTH_TEXT, None, True),
        # not read: written
        (None, "", "", None, True),
    ],
)
def test_apt_access_work(access, proxy_text, auth_text, auth_matches, work):
    assert cp.apt_access_work(access, proxy_text, auth_text, auth_matches) is work


@pytest.mark.parametrize(
    "options, access, apt_access",
    [
        ({}, {"proxy": NONE, "auth": NONE}, False),
        # a proxy added on a host whose pins are met: only the access files to write (any, and nothing else)
        ({"http_proxy": "http://proxy.example:3128"}, {"proxy": NONE, "auth": NONE}, True),
        ({"http_proxy": "http://proxy.example:3128"}, {"proxy": ROOT_0644, "auth": NONE}, False),
        # a password on the proxy: its logins file, as secret_file found it
        ({"http_proxy": "http://u:p@proxy.example:3128"}, {"proxy": ROOT_0644, "auth": ROOT_0600, "auth_matches": True}, False),
        ({"http_proxy": "http://u:p2@proxy.example:3128"}, {"proxy": ROOT_0644, "auth": ROOT_0600, "auth_matches": False}, True),
        # the credential and the proxy removed from the variables: both files go
        ({}, {"proxy": ROOT_0644, "auth": ROOT_0600}, True),
    ],
)
def test_role_plan_of_a_converged_host_sees_changed_apt_access(options, access, apt_access):
    got = cp.role_plan(dict(CONVERGED, apt_access=access, ansible_facts={"blackwell_cuda": BLACKWELL}), FACTS_DEBIAN, dict(ROLE, **options))
    assert (got["apt_access"], got["any"], got["apt"], got["repo"], got["links"]) == (apt_access, apt_access, False, False, False)


def test_the_logins_file_holds_the_repository_key_and_proxy_credentials():
    o = {"repo_base_url": "https://u:p@m.example/r", "repo_key_url": "", "http_proxy": "http://a:b@proxy.example:3128", "https_proxy": None}
    assert cp.apt_logins_urls(o) == ["https://u:p@m.example/r", "http://a:b@proxy.example:3128"]


def test_the_downloads_name_the_proxy_whose_login_they_need_and_the_plan_holds_no_credentials():
    options = dict(
        ROLE,
        repo_source="keyring",
        https_proxy="https://u:s3cret@proxy.example:3128",
        no_proxy="mirror.corp.example",
        runfiles={"13.0.2": {"src": "https://developer.download.nvidia.com/cuda_13.0.2.run"}, "12.8.1": {"src": "https://mirror.corp.example/12.8.1.run"}},
    )
    got = cp.role_plan(dict(CONVERGED, ansible_facts={"blackwell_cuda": BLACKWELL}), FACTS_DEBIAN, options)
    assert got["download_proxy_login"] == {"key": "https_proxy", "keyring": "https_proxy", "runfiles": {"13.0.2": "https_proxy", "12.8.1": ""}}
    assert got["download_proxies"] == {"http": "", "https": "https://proxy.example:3128"} and "s3cret" not in json.dumps(got)
    plain = cp.role_plan(dict(CONVERGED, ansible_facts={"blackwell_cuda": BLACKWELL}), FACTS_DEBIAN, ROLE)["download_proxy_login"]
    assert plain == {"key": "", "keyring": "", "runfiles": {}}
