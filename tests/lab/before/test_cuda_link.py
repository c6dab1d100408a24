"""/usr/local/cuda never moves, whatever made it (issue 13): ct200 variants prepared from the before image (CUDA 12.8
from NVIDIA's apt repo, alternatives in auto mode), each converged with --tags cuda_toolkit. The lab mirror's 13.0
config-common package registers /usr/local/cuda and /usr/local/cuda-13 at priority 130 the way NVIDIA's does, which
replaces any plain link there and, in auto mode, wins over 12.8 (128).
"""

import importlib.util
import json
import os
import subprocess
import time

import pytest

from ..conftest import CACHE, ROOT, SSH_CONFIG, on_host_until, playbook, playbook_command

RECORD = "/etc/blackwell-inference/cuda-links.json"
NVCC_12_8 = "release 12.8, V12.8.93"


def links(run):
    """Every link directly under /usr/local: {path: (readlink, readlink -f)}."""
    out = run('for l in $(find /usr/local -maxdepth 1 -type l | sort); do echo "$l $(readlink $l) $(readlink -f $l)"; done')
    return {p: (t, r) for p, t, r in (line.split() for line in out.splitlines())}


def converge(*args, extra_vars=None):
    rc, out, recap = playbook("--tags", "cuda_toolkit", *args, extra_vars=extra_vars)
    return rc, " ".join(out.split()), recap, out


def assert_13_0_beside_it(run):
    assert "release 13.0" in run("/usr/local/cuda-13.0/bin/nvcc --version")
    # the real 13.0 nvcc compiles for the GPUs' arch
    assert (
        run(
            "echo '__global__ void k(float *x) { x[0] = 1; }' | /usr/local/cuda-13.0/bin/nvcc -arch=sm_120a -cubin -x cu -o /dev/null /dev/stdin && echo ok"
        ).strip()
        == "ok"
    )


def make_runfile_style(run):
    # 12.8 as NVIDIA's runfile leaves it: a plain link, no alternatives groups, no /usr/local/cuda-12
    run("update-alternatives --remove-all cuda-12; update-alternatives --remove-all cuda; rm -f /usr/local/cuda-12; ln -s /usr/local/cuda-12.8 /usr/local/cuda")


def test_a_runfile_style_link_is_kept_and_13_0_still_registers(fresh, run):
    make_runfile_style(run)
    before = links(run)
    assert before["/usr/local/cuda"] == ("/usr/local/cuda-12.8", "/usr/local/cuda-12.8") and "/usr/local/cuda-12" not in before
    rc, flat, recap, out = converge()
    assert rc == 0, out[-4000:]
    assert "/usr/local/cuda: kept on /usr/local/cuda-12.8" in flat
    # the fault was real: 13.0's package registered itself with a higher priority than 12.8 ...
    query = run("update-alternatives --query cuda")
    assert "Alternative: /usr/local/cuda-13.0\nPriority: 130" in query and "Alternative: /usr/local/cuda-12.8\nPriority: 128" in query
    # ... and the group stayed in manual mode on 12.8
    assert "Status: manual" in query and "Value: /usr/local/cuda-12.8" in query
    rc, flat, recap, out = converge()
    assert rc == 0 and recap["changed"] == 0, out[-4000:]
    after = links(run)
    # every link resolves where it did; the only new one is 13.0's own /usr/local/cuda-13
    assert {p: r for p, (_t, r) in after.items() if p in before} == {p: r for p, (_t, r) in before.items()}
    assert set(after) - set(before) == {"/usr/local/cuda-13"} and after["/usr/local/cuda-13"][1] == "/usr/local/cuda-13.0"
    assert NVCC_12_8 in run("/usr/local/cuda/bin/nvcc --version")
    assert_13_0_beside_it(run)
    record = json.loads(run("cat " + RECORD))
    assert record["links"] == {"/usr/local/cuda": "/usr/local/cuda-12.8", "/usr/local/cuda-13": "/usr/local/cuda-13.0"}


def test_a_link_moved_behind_the_roles_back_is_reported_then_put_back(run):
    # on the host the test above converged: someone re-points the link by hand
    run("ln -sfn /usr/local/cuda-13.0 /usr/local/cuda")
    rc, out, _recap = playbook("--tags", "verify")
    flat = " ".join(out.split())
    assert rc != 0 and "moved behind the role's back: /usr/local/cuda -> /usr/local/cuda-13.0 (recorded: /usr/local/cuda-12.8)" in flat, out[-4000:]
    assert run("readlink -f /usr/local/cuda").strip() == "/usr/local/cuda-13.0"  # verify changes nothing
    rc, flat, recap, out = converge()
    assert rc == 0 and recap["changed"] > 0, out[-4000:]
    assert "/usr/local/cuda: kept on /usr/local/cuda-12.8 (it had been moved to /usr/local/cuda-13.0 behind the role's back: put back)" in flat
    assert NVCC_12_8 in run("/usr/local/cuda/bin/nvcc --version")
    # the same through the alternatives: someone puts the group back in auto mode (13.0 wins there)
    run("update-alternatives --auto cuda")
    assert run("readlink -f /usr/local/cuda").strip() == "/usr/local/cuda-13.0"
    rc, flat, recap, out = converge()
    assert rc == 0 and "(it had been moved to /usr/local/cuda-13.0 behind the role's back: put back)" in flat, out[-4000:]
    assert "Status: manual" in run("update-alternatives --query cuda") and NVCC_12_8 in run("/usr/local/cuda/bin/nvcc --version")


def test_a_competing_alternative_of_higher_priority_is_kept_not_replaced_by_12_8(fresh, run):
    # a site toolkit registered above NVIDIA's (auto mode follows it); 12.8 is registered too, at 128
    run("ln -sfn /usr/local/cuda-12.8 /opt/site-cuda && update-alternatives --install /usr/local/cuda cuda /opt/site-cuda 500")
    assert run("readlink /etc/alternatives/cuda").strip() == "/opt/site-cuda"
    rc, flat, _recap, out = converge()
    assert rc == 0, out[-4000:]
    assert "/usr/local/cuda: kept on /opt/site-cuda" in flat
    query = run("update-alternatives --query cuda")
    assert "Status: manual" in query and "Value: /opt/site-cuda" in query and "Alternative: /usr/local/cuda-13.0" in query
    # the apt-made /usr/local/cuda-12 is pinned too
    assert run("readlink -f /usr/local/cuda-12").strip() == "/usr/local/cuda-12.8" and "Status: manual" in run("update-alternatives --query cuda-12")
    assert_13_0_beside_it(run)


def test_a_real_directory_is_kept_and_cannot_be_pointed_elsewhere(fresh, run):
    # a toolkit installed straight into /usr/local/cuda (runfile --toolkitpath=/usr/local/cuda)
    run("update-alternatives --remove-all cuda; rm -f /usr/local/cuda && cp -a /usr/local/cuda-12.8 /usr/local/cuda")
    inode = run("stat -c %i /usr/local/cuda")
    rc, flat, recap, out = converge()
    assert rc == 0, out[-4000:]
    assert "/usr/local/cuda: a directory, kept as it is" in flat
    assert run("stat -c '%i %F' /usr/local/cuda") == inode.strip() + " directory\n"
    assert "Alternative: /usr/local/cuda-13.0" in run("update-alternatives --query cuda")  # 13.0's package tried
    assert NVCC_12_8 in run("/usr/local/cuda/bin/nvcc --version")
    # asked to point it at 13.0: refused before any change
    rc, flat, recap, out = converge(extra_vars={"cuda_toolkit_default": "13.0"})
    assert rc != 0 and recap.get("changed", 0) == 0, out[-4000:]
    assert "/usr/local/cuda is a directory, not a link to /usr/local/cuda-13.0 (cuda_toolkit_default)" in flat


def test_a_missing_link_is_made_for_the_oldest_toolkit_wanted(fresh, run):
    run("update-alternatives --remove-all cuda")  # removes /usr/local/cuda with the group
    assert run("test -e /usr/local/cuda || echo missing").strip() == "missing"
    rc, flat, _recap, out = converge()
    assert rc == 0, out[-4000:]
    assert "/usr/local/cuda did not exist: it is made for /usr/local/cuda-13.0" in flat
    assert run("readlink -f /usr/local/cuda").strip() == "/usr/local/cuda-13.0"
    assert "Status: manual" in run("update-alternatives --query cuda")
    # 12.8's own major link is kept where apt made it
    assert run("readlink -f /usr/local/cuda-12").strip() == "/usr/local/cuda-12.8"


# The runfile method (issue 47 item 7) with the lab's TEST DOUBLE of NVIDIA's runfile (tests/fixtures/runfile_double):
# NVIDIA's options, NVIDIA's toolkit layout, and it re-points /usr/local/cuda the way NVIDIA's installer does.
KNOB = "/run/cuda-runfile-double"


@pytest.fixture(scope="module")
def runfile_double():
    """(path on the controller, checksum) of the double, built once per cache."""
    spec = importlib.util.spec_from_file_location("runfile_double", os.path.join(ROOT, "tests", "fixtures", "runfile_double", "build.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build(CACHE)


def runfile_vars(run, runfile_double):
    """Copy the double onto the host; the role's variables that install 13.0.2 from it."""
    path, checksum = runfile_double
    run("mkdir -p /srv/runfile-double")
    subprocess.run(["scp", "-q", "-F", SSH_CONFIG, path, "ct200:/srv/runfile-double/"], check=True)
    src = "file:///srv/runfile-double/" + os.path.basename(path)
    return {"cuda_toolkit_method": "runfile", "cuda_toolkit_runfiles": {"13.0.2": {"src": src, "checksum": checksum}}}


def test_the_runfile_never_moves_the_link_and_a_killed_install_is_redone(fresh, run, runfile_double):
    make_runfile_style(run)
    extra = runfile_vars(run, runfile_double)
    started = time.monotonic()
    # the double stops half-way: bin/ extracted, its own /usr/local/cuda re-pointed, the rest to come
    run("mkdir -p %s && touch %s/pause" % (KNOB, KNOB))
    cmd, env = playbook_command("--tags", "cuda_toolkit", extra_vars=extra)
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    on_host_until(run, "test -s %s/paused" % KNOB, "the runfile half-way", timeout=600)
    # the links phase has pinned the plain link in an alternatives group (manual, on 12.8); while the installer runs,
    # that link has not moved and no half toolkit is where a finished one goes
    pinned = ("/etc/alternatives/cuda", "/usr/local/cuda-12.8")
    assert (run("readlink /usr/local/cuda").strip(), run("readlink -f /usr/local/cuda").strip()) == pinned
    assert run("test -e /usr/local/cuda-13.0 || echo absent").strip() == "absent"
    assert run("ls /usr/local/.cuda-13.0.staging/root/cuda-13.0").split() == ["bin"]
    run("kill -KILL $(cat %s/paused)" % KNOB)  # the install dies half-way
    out = proc.communicate(timeout=300)[0]
    assert proc.returncode != 0, out[-4000:]
    assert (run("readlink /usr/local/cuda").strip(), run("readlink -f /usr/local/cuda").strip()) == pinned
    assert run("test -e /usr/local/cuda-13.0 || echo absent").strip() == "absent"  # the half is not counted as installed
    # the next run installs it again, whole; the link stays an alternatives link (not flattened) on 12.8
    run("rm -rf %s" % KNOB)
    rc, _flat, _recap, out = converge(extra_vars=extra)
    assert rc == 0, out[-4000:]
    assert (run("readlink /usr/local/cuda").strip(), run("readlink -f /usr/local/cuda").strip()) == pinned
    assert NVCC_12_8 in run("/usr/local/cuda/bin/nvcc --version") and "Value: /usr/local/cuda-12.8" in run("update-alternatives --query cuda")
    assert run("ls -A /usr/local | grep -c staging || true").strip() == "0"
    assert run("ls /usr/local/cuda-13.0").split() == ["bin", "include", "lib64", "nvvm", "targets"]
    # whole: the role's verify compiled for sm_120a with it (rc 0 above); the uninstaller, written last, is there
    assert "release 13.0" in run("/usr/local/cuda-13.0/bin/nvcc --version")
    assert run("test -x /usr/local/cuda-13.0/bin/cuda-uninstaller && echo ok").strip() == "ok"
    print("runfile kill and redo: %.0f s" % (time.monotonic() - started))
