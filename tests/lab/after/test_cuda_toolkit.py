"""After converge: CUDA 13.0 beside 12.8, pinned, held, /usr/local/cuda untouched, a real compile; then a pin bump."""

import importlib.util
import json
import os
import re
import shlex

import pytest
import yaml

from ..conftest import ROOT, playbook

LAB_READ_ONLY = True  # reads, or asserts that its runs changed nothing, except the last test (a `fresh` one)

SLIM_13_0 = {
    "cuda-nvcc-13-0": "13.0.88-1",
    "cuda-crt-13-0": "13.0.88-1",
    "cuda-nvvm-13-0": "13.0.88-1",
    "cuda-cudart-13-0": "13.0.96-1",
    "cuda-cudart-dev-13-0": "13.0.96-1",
    "cuda-cccl-13-0": "13.0.85-1",
    "libcurand-13-0": "10.4.0.35-1",
    "libcurand-dev-13-0": "10.4.0.35-1",
    "cuda-nvrtc-13-0": "13.0.88-1",
    "cuda-nvrtc-dev-13-0": "13.0.88-1",
    "cuda-driver-dev-13-0": "13.0.96-1",
    "cuda-toolkit-13-0-config-common": "13.0.96-1",
}


@pytest.mark.parametrize("name,version", sorted(SLIM_13_0.items()))
def test_slim_components_pinned_and_held(host, name, version):
    pkg = host.package(name)
    assert pkg.is_installed and pkg.version == version
    assert name in host.run("apt-mark showhold").stdout.split()


def test_no_full_toolkit_no_driver(host, run):
    assert not host.package("cuda-toolkit-13-0").is_installed
    assert run("dpkg-query -W -f '${Package}\\n' 'nvidia-*' 'libnvidia-*' 'cuda-drivers*' 2>/dev/null || true").strip() == ""


def test_12_8_untouched_and_still_default(host, run):
    assert host.package("cuda-toolkit-12-8").is_installed
    assert host.file("/usr/local/cuda").linked_to == "/usr/local/cuda-12.8"
    assert host.file("/usr/local/cuda-12").linked_to == "/usr/local/cuda-12.8"
    assert host.file("/usr/local/cuda-13").linked_to == "/usr/local/cuda-13.0"
    query = run("update-alternatives --query cuda")
    assert "Status: manual" in query and "Value: /usr/local/cuda-12.8" in query
    assert "release 12.8, V12.8.93" in run("/usr/local/cuda/bin/nvcc --version")
    # 12.8 programs still get 12.8's runtime from the library search path
    assert "/usr/local/cuda/targets/x86_64-linux/lib/libcudart.so.12" in run("ldconfig -p | grep 'libcudart.so.12 '")


def test_installed_nvcc_13_0_compiles_sm_120a(run):
    script = (
        "set -e; d=$(mktemp -d); cd $d; "
        "printf '#include <curand_kernel.h>\\n__global__ void saxpy(int n, float a, const float *x, float *y)"
        "{int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i];}\\n' > k.cu; "
        "/usr/local/cuda-13.0/bin/nvcc -arch=sm_120a -cubin -o k.cubin k.cu; od -An -c -N4 k.cubin | tr -d ' '; "
        "test -s /usr/local/cuda-13.0/lib64/stubs/libcuda.so; cd /; rm -rf $d"
    )
    assert "177ELF" in run("bash -c %s" % shlex.quote(script)).replace("\\", "")


# the compile task's header and its host line (cuda_compile: every toolkit and arch in one task); the verify-only run on
# the fresh image that compiles live is test_sglang_service.py's (one run for both roles' verify output)
COMPILE = r"TASK \[blackwell\.inference\.cuda_toolkit : Each toolkit compiles a kernel for the GPUs' archs[^\n]*\n"


# A run that changed nothing takes the compile from the record the converge wrote (the toolkit's compile chain is as
# it was then); once a file of that chain changes (an upgrade, a reinstall of other files), the next run compiles again.
RECORD = "/var/lib/blackwell-inference/cuda-compiles.json"


def test_a_run_that_changed_nothing_takes_the_compile_from_the_record_and_a_changed_toolkit_compiles_again(fresh, run):
    before = json.loads(run("cat %s" % RECORD))["/usr/local/cuda-13.0"]["sm_120a"]
    rc, out, recap = playbook("--tags", "cuda_toolkit")
    assert rc == 0 and recap["changed"] == 0, out[-3000:]
    # nothing to check: the verify phase's checks (the compile among them) are skipped with one condition
    checks = r"TASK \[blackwell\.inference\.cuda_toolkit : Measure, check, compile and record the toolkits[^\n]*\nskipping: \[ct200\]"
    assert re.search(checks, out), out[-3000:]
    assert not re.search(COMPILE, out), out[-3000:]
    assert "compiles: sm_120a (sm_120a as recorded: the toolkit is unchanged since; --tags verify compiles again)" in out

    run("touch -d '2026-01-01 00:00:00' /usr/local/cuda-13.0/bin/ptxas")  # ptxas as another build of it would be
    rc, out, recap = playbook("--tags", "cuda_toolkit")
    assert rc == 0 and recap["changed"] == 1, out[-3000:]  # the record, and nothing else
    assert re.search(COMPILE + r"changed: \[ct200\]", out) and "as recorded" not in out, out[-3000:]  # nvcc ran, the record written
    after = json.loads(run("cat %s" % RECORD))["/usr/local/cuda-13.0"]["sm_120a"]
    assert after != before  # the fault hit: the toolkit's identity moved
    rc, out, recap = playbook("--tags", "cuda_toolkit")
    assert rc == 0 and recap["changed"] == 0 and "(sm_120a as recorded" in out, out[-3000:]


# -- a pin bump (issue 13 item 3), last in this file: it changes the host (the `fresh` fixture resets the next file) --
# The role holds its CUDA 13.0 packages; bumping cuda_toolkit_versions to the lab mirror's second 13.0 patch release
# (13.0.3: the same real binaries repacked with new versions, tests/fixtures/lab/build_aptrepo.py) upgrades them
# through the hold without anyone unholding them, holds them again, keeps every /usr/local/cuda link where it was
# (13.0's config-common postinst runs again on the upgrade), and 13.0 still compiles. The older pin again is a
# downgrade, refused before any change with the packages named. Only the preflight and install phases run (the
# rest of the role is covered above and by the scenario).

_spec = importlib.util.spec_from_file_location("build_aptrepo", os.path.join(ROOT, "tests", "fixtures", "lab", "build_aptrepo.py"))
aptrepo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(aptrepo)
PIN_TAGS = "cuda_toolkit_preflight,cuda_toolkit_install"

STATE = "dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev}\\n' | grep -- '-13-0 '; update-alternatives --query cuda | grep -E '^(Status|Value):'"
LINKS = "for l in /usr/local/cuda /usr/local/cuda-12 /usr/local/cuda-13; do echo $l $(readlink $l) $(readlink -f $l); done"


def shipped_pins():
    with open(os.path.join(ROOT, "roles", "cuda_toolkit", "vars", "main.yml")) as fh:
        return yaml.safe_load(fh)["__cuda_toolkit_releases"]["13.0.2"]["packages"]


def bumped_pins():
    return {name: aptrepo.patch_version(name, v) if "-13-0" in name else v for name, v in shipped_pins().items()}


def installed(run):
    rows = [line.split() for line in run("dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev}\\n'").splitlines()]
    return {r[0]: (r[1], r[2]) for r in rows if len(r) == 3}


def test_a_pin_bump_upgrades_the_held_packages_keeps_the_links_and_a_downgrade_is_refused(fresh, run):
    old, new = shipped_pins(), bumped_pins()
    before = installed(run)
    bumped = sorted(n for n in new if new[n] != old[n] and n in before)  # the slim set (not the cuda-toolkit-13-0 meta)
    assert {"cuda-nvcc-13-0", "libcurand-dev-13-0", "cuda-toolkit-13-0-config-common"} <= set(bumped), bumped
    # the fault's precondition: the role's packages are held at the shipped release
    assert bumped and all(before[n] == (old[n], "hi") for n in bumped), {n: before.get(n) for n in bumped}
    links = run(LINKS)
    assert "/usr/local/cuda /etc/alternatives/cuda /usr/local/cuda-12.8" in links, links
    pins = {"cuda_toolkit_versions": [aptrepo.PATCH_RELEASE], "cuda_toolkit_package_versions": {aptrepo.PATCH_RELEASE: new}}

    rc, out, recap = playbook("--tags", PIN_TAGS, extra_vars=pins)
    assert rc == 0 and recap["changed"] > 0, out[-4000:]
    after = installed(run)
    assert {n: after[n] for n in bumped} == {n: (new[n], "hi") for n in bumped}  # upgraded through the hold, held again
    assert all(after[n] == before[n] for n in new if n not in bumped and n in before)  # the shared config-common as it was
    assert run(LINKS) == links  # the postinst of 13.0's config-common ran again and moved nothing
    assert "release 12.8" in run("/usr/local/cuda/bin/nvcc --version")
    # the bumped 13.0 compiles for the GPUs
    src = shlex.quote("__global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }")
    run("cd /tmp && printf '%%s\\n' %s > bump.cu && /usr/local/cuda-13.0/bin/nvcc -arch=sm_120a -c bump.cu -o bump.o && test -s bump.o" % src)

    rc, out, recap = playbook("--tags", PIN_TAGS, extra_vars=pins)
    assert rc == 0 and recap["changed"] == 0, out[-4000:]

    state = run(STATE)
    rc, out, _recap = playbook("--tags", "cuda_toolkit_preflight")  # the shipped 13.0.2 again: a downgrade
    flat = " ".join(out.split())
    assert rc != 0 and "cuda_toolkit_versions=['13.0.2'] would downgrade " in flat, flat[-3000:]
    for name in ("cuda-nvcc-13-0", "cuda-toolkit-13-0-config-common"):
        assert "%s from %s to %s" % (name, new[name], old[name]) in flat, flat[-3000:]
    assert "the role never moves an installed toolkit backwards" in flat
    assert run(STATE) == state and run(LINKS) == links
