"""sglang_venv on ct200: built from the offline wheelhouse, blue/green, never losing the serving venv.

Runs after converge (the lab's venv is current). The tests run in file order and each leaves a
valid current venv behind.
"""

import hashlib
import json
import os
import re
import subprocess

from ..conftest import ROOT, on_host_until, playbook, playbook_command
from ..faults.test_faults import marker, serving

LAB_SET = ["flashinfer-python==0.7.4", "torch==2.13.0"]
# The venvs these tests build are checked and switched, never started by the service: without bytecode they
# build in a third of the time (the default, with bytecode, is the converged venv's: test_built_from_...), and
# carry FlashInfer + torch only (no SGLang beside them: the lab venv's SGLang layer is the converged venv's)
QUICK = {"sglang_venv_bytecode": False, "sglang_venv_packages_no_deps": [], "sglang_venv_check_imports": ["flashinfer", "torch"]}
# Where the subject is the venv role's own mechanics (a changed pin, a lock file with hashes, a patch), not what is in
# the venv: two small wheels, tabulate checked by its import (a venv of FlashInfer + torch unpacks about 1 GB). A run
# with --tags sglang_venv does not revalidate the service (its role does not run), so the venv need not serve.
SMALL = {"sglang_venv_packages": ["tabulate==0.9.0", "idna==3.21"], "sglang_venv_check_imports": ["tabulate"], "sglang_venv_bytecode": False}
SMALL["sglang_venv_packages_no_deps"] = []


def only_current(run):
    """Remove every venv but the current one, so the next inputs really build."""
    run("find /opt/sglang/venvs -mindepth 1 -maxdepth 1 ! -path $(readlink /opt/sglang/current) -exec rm -rf {} +")


def current(run):
    return run("readlink /opt/sglang/current").strip()


def meta(run, path="/opt/sglang/current"):
    return json.loads(run("cat %s/.blackwell-venv.json" % path))


def test_built_from_the_wheelhouse_and_checked(host, run):
    m = meta(run)
    assert m["versions"] == {"flashinfer-python": "0.7.4", "torch": "2.13.0+cpu", "sglang": "0.5.23"}
    # (SGLang's modules need its dependencies to import: the stand-in runs its FlashInfer code from the files)
    assert m["imports"] == {"flashinfer": "ok", "torch": "ok"} and m["inputs"]["find_links"] == ["/srv/wheelhouse"]
    assert current(run) == "/opt/sglang/venvs/" + m["hash"]
    # SGLang came without its dependencies: pip check only complains about SGLang's own pins, and those were set aside
    check = host.run("/opt/sglang/current/bin/python -m pip check")
    problems = check.stdout.strip().splitlines()
    assert check.rc == 1 and problems and all(line.startswith("sglang 0.5.23 ") for line in problems), check.stdout
    assert m["no_deps"] == ["sglang==0.5.23"] and m["pip_check_set_aside"] == len(problems)
    assert "sglang 0.5.23 has requirement torch==2.14.1, but you have torch 2.13.0+cpu." in problems
    assert "sglang venv switched to /opt/sglang/venvs/%s" % m["hash"] in run("journalctl -t blackwell-inference --no-pager")
    assert run("find /opt/sglang/current/lib/python3*/site-packages/torch/utils/benchmark/ -name '*.pyc' | head -1").strip()  # compiled at build time


def test_rerun_changes_nothing_and_runs_no_pip(run):
    assert playbook("--tags", "sglang_venv")[0] == 0  # the lab's inputs current (a no-op right after converge)
    before = (current(run), run("stat -c %Y /opt/sglang/current/.blackwell-venv.json"))
    rc, out, recap = playbook("--tags", "sglang_venv")
    assert rc == 0 and recap["changed"] == 0, out[-3000:]
    # the whole build (venv, pip install, check) is skipped: no resolver run at all
    build = out.split("TASK [blackwell.inference.sglang_venv : Build and check a venv for these inputs]", 1)[1]
    assert build.split("TASK [", 1)[0].strip().splitlines()[-1].startswith("skipping: [ct200]"), out[-3000:]
    assert "Install the pinned packages" not in out
    assert (current(run), run("stat -c %Y /opt/sglang/current/.blackwell-venv.json")) == before


def test_changed_pin_builds_a_new_venv_and_switches_after_its_check(run):
    only_current(run)
    old = current(run)
    rc, out, recap = playbook("--tags", "sglang_venv", extra_vars=SMALL)
    assert rc == 0 and recap["changed"] > 0, out[-3000:]
    new = current(run)
    assert new != old and meta(run, new)["inputs"]["bytecode"] is False and meta(run, new)["imports"] == {"tabulate": "ok"}
    # pip --no-compile: no bytecode but what the check's own import (tabulate) wrote; idna is not imported
    site = "%s/lib/python3*/site-packages" % new
    assert run("ls -d %s/tabulate/__pycache__ 2>/dev/null || true" % site).strip()  # the check imported it
    assert run("ls -d %s/idna/__pycache__ 2>/dev/null || true" % site).strip() == ""
    assert {"tabulate==0.9.0", "idna==3.21"} <= set(run("%s/bin/python -m pip freeze" % new).split())
    assert run("test -d %s && echo kept" % old).strip() == "kept"  # the previous venv stays


def test_the_venv_role_in_a_play_of_its_own_switches_and_notifies_without_the_service_role(run):
    # the venv of the lab's inputs (with SGLang) is still there (kept), current is on the changed pin's: a switch back, no build
    lab = [v for v in run("ls /opt/sglang/venvs").split() if "sglang" in meta(run, "/opt/sglang/venvs/" + v)["versions"]]
    assert len(lab) == 1 and current(run) != "/opt/sglang/venvs/" + lab[0], "the fault did not hit: current is on the lab's venv"
    rc, out, recap = playbook(play="tests/lab/plays/sglang_venv_alone.yml")
    assert rc == 0 and recap["changed"] > 0 and "was not found" not in out, out[-4000:]
    assert "Install the pinned packages" not in out and current(run) == "/opt/sglang/venvs/" + lab[0]
    assert "RUNNING HANDLER [blackwell.inference.sglang_venv : Remember that the toolkit or the venv the services run on changed]" in out
    assert "sglang venv switched to /opt/sglang/venvs/%s" % lab[0] in run("journalctl -t blackwell-inference --no-pager -o cat")


def test_broken_set_fails_clearly_and_leaves_the_old_venv_current(run):
    old = current(run)
    rc, out, recap = playbook(
        "--tags",
        "sglang_venv",
        extra_vars={
            # a set that installs but does not import (small: the check is what is tested, not the size of the set)
            "sglang_venv_packages": ["blackwell-broken-probe==1.0"],
            "sglang_venv_packages_no_deps": [],
            "sglang_venv_check_imports": ["blackwell_broken_probe"],
        },
    )
    flat = " ".join(out.split())
    assert rc != 0 and recap["failed"] == 1, out[-3000:]
    assert "fails its check: import blackwell_broken_probe: ImportError: blackwell_broken_probe is broken on purpose" in flat
    assert "it does not become current, %s stays current" % old in flat
    assert current(run) == old


def test_kill_9_during_a_build_then_rerun_recovers(host, run):
    """kill -9 mid-install (once also tests/lab/faults/test_faults_kill.py's venv case): current and the service as they
    were, the marker still ready; the rerun builds the venv of these inputs again, checks it and switches to it."""
    only_current(run)
    old, pid = current(run), serving(run)
    reordered = list(reversed(LAB_SET))  # other inputs, so another venv
    cmd, env = playbook_command("--tags", "sglang_venv", extra_vars={"sglang_venv_packages": reordered, **QUICK})
    bg = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # mid-install: pip runs and has put at least one package (other than itself) into the new venv
        on_host_until(
            run,
            "pgrep -f '[b]in/python -m pip install' >/dev/null && find /opt/sglang/venvs -mindepth 5 -maxdepth 5 -name '*.dist-info' "
            "! -name 'pip-*' -newer /opt/sglang/current/.blackwell-venv.json | grep -q .",
            "pip installing into the new venv",
            timeout=300,
        )
        run("pkill -9 -f 'bin/python -m pip install'")
        assert bg.wait(timeout=300) != 0
    finally:
        bg.kill()
    assert current(run) == old and serving(run) == pid and marker(run)["ready"]  # nothing of the service moved
    rc, out, _recap = playbook("--tags", "sglang_venv", extra_vars={"sglang_venv_packages": reordered, **QUICK})
    assert rc == 0, out[-3000:]
    new = current(run)
    assert new != old and meta(run, new)["inputs"]["requirements"] == reordered
    assert sorted(run("ls /opt/sglang/venvs").split()) == sorted([new.rsplit("/", 1)[1], old.rsplit("/", 1)[1]])  # keep = 2


def test_check_mode_changes_nothing(run):
    before = (current(run), run("ls /opt/sglang/venvs"))
    rc, out, recap = playbook("--check", "--tags", "sglang_venv", extra_vars={"sglang_venv_packages": [*LAB_SET, "tabulate==0.10.0"]})
    assert rc == 0 and recap["changed"] > 0, out[-3000:]
    assert "would build /opt/sglang/venvs/" in out
    assert (current(run), run("ls /opt/sglang/venvs")) == before


def test_lock_file_with_hashes_and_a_patch(run, tmp_path):
    """--require-hashes from a lock file (the wheelhouse's own files, hashed; its subject is the lock's mechanics, so a
    small set: SMALL's two wheels), plus a patch recorded in the metadata."""
    only_current(run)
    old = current(run)
    lines = []
    for wheel in ("tabulate-0.9.0-py3-none-any.whl", "idna-3.21-py3-none-any.whl"):
        name, version = wheel.split("-")[:2]
        digest = run("sha256sum /srv/wheelhouse/%s" % wheel).split()[0]
        lines.append("%s==%s --hash=sha256:%s" % (name, version, digest))
    lock = tmp_path / "requirements.lock"
    lock.write_text("\n".join(sorted(lines)) + "\n")
    patch = os.path.join(ROOT, "tests", "fixtures", "lab", "patches", "tabulate-marker.patch")
    inputs = dict(SMALL, sglang_venv_packages=[], sglang_venv_lock_file=str(lock), sglang_venv_patches=[patch])
    rc, out, _recap = playbook("--tags", "sglang_venv", extra_vars=inputs)
    assert rc == 0, out[-3000:]
    new = current(run)
    m = meta(run, new)
    assert new != old and m["patches"] == ["tabulate-marker.patch"]
    assert re.fullmatch(r"[0-9a-f]{64}", m["inputs"]["requirements"])  # the lock file's sha256 is the input
    assert {"tabulate==0.9.0", "idna==3.21"} <= set(run("%s/bin/python -m pip freeze" % new).split())
    assert "--require-hashes" not in run("cat %s/requirements.lock" % new) and run("test -f %s/requirements.lock && echo y" % new).strip() == "y"
    assert "BLACKWELL_LAB_PATCHED = True" in run("cat %s/lib/python3*/site-packages/tabulate/__init__.py" % new)
    # the patch is applied once: a rerun changes nothing
    rc, out, recap = playbook("--tags", "sglang_venv", extra_vars=inputs)
    assert rc == 0 and recap["changed"] == 0, out[-3000:]


def test_planted_credentials_reach_pip_and_nothing_anyone_reads(run):
    """Index URLs with a token and proxies with a password (issue 47 item 4, issue 48's proxy): pip gets them (its own
    masked "Looking in indexes" line, the proxy's ProxyError for 127.0.0.1, a direct try for the no_proxy host), and
    the token is in no file under the venv root, not in the marker, not in the journal, not in the play's -v output.
    A venv of its own (one small wheel, in a root of its own), so the lab's venvs are not touched; the index and the
    proxy refuse connections at once and pip installs from the wheelhouse."""
    token = "tok-" + hashlib.sha256(b"planted ct200").hexdigest()[:24]
    root = "/opt/bw-planted"
    planted = {
        "sglang_venv_root": root,
        "sglang_venv_packages": ["tabulate==0.9.0"],
        "sglang_venv_check_imports": ["tabulate"],
        "sglang_venv_packages_no_deps": [],
        "sglang_venv_bytecode": False,
        "sglang_venv_no_index": False,
        "sglang_venv_index_url": "http://user:%s@127.0.0.1:9/simple" % token,
        "sglang_venv_extra_index_urls": ["http://%s@localhost:9/extra" % token],
        "sglang_venv_http_proxy": "http://pu:%s@127.0.0.1:9" % token,
        "sglang_venv_no_proxy": "localhost",
    }
    since = run("date +%s").strip()
    rc, out, _recap = playbook("-v", extra_vars=planted, play="tests/lab/plays/sglang_venv_alone.yml")
    try:
        assert rc == 0, out[-4000:]
        assert token not in out
        # pip read its index and its proxy from the environment file
        assert "Looking in indexes: http://user:****@127.0.0.1:9/simple, http://****@localhost:9/extra" in out, out[-4000:]
        assert re.search(r"broken by 'ProxyError\('[^']*', NewConnectionError\('<[^>]*>: [^']*'\)\)': http://127\.0\.0\.1:9/simple/tabulate/", out)
        assert re.search(r"broken by 'NewConnectionError\('<[^>]*>: [^']*'\)': /extra/tabulate/", out)  # no_proxy: direct
        m = meta(run, root + "/current")
        assert m["inputs"]["index_url"] == "http://127.0.0.1:9/simple" and m["inputs"]["extra_index_urls"] == ["http://localhost:9/extra"]
        # no file the role wrote holds the token, and pip's environment file is gone
        assert run("grep -rlF %s %s /etc /var/lib/blackwell-inference || true" % (token, root)).strip() == ""
        assert sorted(run("ls -A %s/venvs" % root).split()) == sorted([".%s.lock" % m["hash"], m["hash"]])
        assert token not in run("journalctl --since @%s --no-pager" % since)
    finally:
        run("rm -rf " + root)
