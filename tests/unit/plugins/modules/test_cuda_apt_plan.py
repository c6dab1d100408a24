"""cuda_apt_plan: apt's dry run of the pins from an argument list, judged by cuda/plan.py dry_run; the refusal fails the
module with the message the role's assert gave, apt's rc, stdout and stderr attached. Real outputs of `apt-get
--simulate` on this Debian 12 machine (module_utils/data)."""

import errno
import pathlib

from ansible_collections.blackwell.inference.plugins.modules import cuda_apt_plan as mod

from .fakemodule import run_main

DATA = pathlib.Path(__file__).parent.parent / "module_utils" / "data"
PINS = ["cuda-nvcc-13-0=13.0.88-1", "libcurand-13-0=10.4.0.35-1"]
ARGV = ["apt-get", "--simulate", "--no-install-recommends", "--allow-change-held-packages", "install", *PINS]


def test_an_accepted_plan_says_what_apt_would_install(monkeypatch):
    stdout = (DATA / "apt-simulate-hello.txt").read_text()
    got, calls = run_main(monkeypatch, mod, {"packages": PINS}, {"apt-get": (0, stdout, "")}, check_mode=True)
    assert calls == [(ARGV, None)]  # in check mode too: apt only simulates
    assert got["ok"] and not got["failed"] and not got["changed"]
    assert got["msg"] == "apt would install 1 package(s): hello" and got["installs"] == ["hello"]
    assert (got["cmd"], got["rc"], got["stdout"], got["stderr"]) == (ARGV, 0, stdout.rstrip("\n"), "")


def test_a_plan_apt_cannot_make_fails_with_the_assert_message_and_apt_output(monkeypatch):
    out, err = (DATA / "apt-simulate-unknown.out").read_text(), (DATA / "apt-simulate-unknown.err").read_text()
    got, _calls = run_main(monkeypatch, mod, {"packages": PINS, "repo_base_url": "file:/srv/cuda-mirror"}, {"apt-get": (100, out, err)})
    assert got["failed"] and not got["ok"]
    assert got["msg"] == (
        "apt cannot plan the pinned packages (E: Unable to locate package nosuchpkg-xyz): check cuda_toolkit_versions,"
        " cuda_toolkit_package_versions and the repository (cuda_toolkit_repo_base_url=file:/srv/cuda-mirror)"
    )
    assert (got["rc"], got["stdout"], got["stderr"]) == (100, out.rstrip("\n"), err.rstrip("\n"))


def test_a_plan_that_removes_a_package_is_refused(monkeypatch):
    stdout = (DATA / "apt-simulate-sysvinit-removes.txt").read_text()
    got, _calls = run_main(monkeypatch, mod, {"packages": PINS}, {"apt-get": (0, stdout, "")})
    assert got["failed"] and got["msg"].startswith("the plan would remove at-spi2-core, ") and got["rc"] == 0


def test_no_apt_get_is_a_plan_apt_cannot_make(monkeypatch):
    # the command task it replaces (failed_when: false) gave rc 2 and no output for a missing apt-get
    missing = FileNotFoundError(errno.ENOENT, "No such file or directory", "apt-get")
    got, _calls = run_main(monkeypatch, mod, {"packages": PINS, "repo_base_url": "https://m.example/r"}, {"apt-get": missing})
    assert got["failed"] and got["rc"] == 2 and got["msg"].startswith("apt cannot plan the pinned packages (rc 2): ")
