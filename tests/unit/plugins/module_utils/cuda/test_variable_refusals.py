"""The cuda_toolkit and sglang_venv roles' variables checked before any change (cuda_plan.variable_refusals,
venv_info.variable_refusals): each wrong value is refused by the variable's name, and only that one."""

import os
import re

import pytest
import yaml

from ansible_collections.blackwell.inference.plugins.module_utils.cuda import plan as cuda_plan
from ansible_collections.blackwell.inference.plugins.module_utils.venv import info as venv_info

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", ".."))


def defaults(role, prefix):
    with open(os.path.join(ROOT, "roles", role, "defaults", "main.yml")) as fh:
        return {k: v for k, v in yaml.safe_load(fh).items() if k.startswith(prefix)}


TOOLKIT = defaults("cuda_toolkit", "cuda_toolkit_")
VENV = defaults("sglang_venv", "sglang_venv_")


def named(msg, names):
    return {n for n in names if re.search(r"(?<![A-Za-z0-9_])%s(?![A-Za-z0-9_])" % n, msg)}


TOOLKIT_BAD = [
    ({"cuda_toolkit_versions": []}, "cuda_toolkit_versions"),
    ({"cuda_toolkit_root": "usr/local"}, "cuda_toolkit_root"),
    ({"cuda_toolkit_verify_archs": ["sm_120a", "sm_5", "120a"]}, "cuda_toolkit_verify_archs"),
    ({"cuda_toolkit_repo_base_url": "ftp://mirror/cuda"}, "cuda_toolkit_repo_base_url"),
    ({"cuda_toolkit_repo_distro": "Debian 12"}, "cuda_toolkit_repo_distro"),
    ({"cuda_toolkit_repo_arch": "aarch64"}, "cuda_toolkit_repo_arch"),
    ({"cuda_toolkit_repo_key_url": "keys.example/3bf863cc.pub"}, "cuda_toolkit_repo_key_url"),
    ({"cuda_toolkit_repo_key_fingerprint": "EB69 3B30"}, "cuda_toolkit_repo_key_fingerprint"),
    # no fingerprint for a key that comes over plain http
    ({"cuda_toolkit_repo_key_fingerprint": "", "cuda_toolkit_repo_key_url": "http://mirror/3bf863cc.pub"}, "cuda_toolkit_repo_key_fingerprint"),
    ({"cuda_toolkit_repo_keyring_sha256": "sha256:" + "a" * 64}, "cuda_toolkit_repo_keyring_sha256"),
    ({"cuda_toolkit_repo_keyring_sha256": "a" * 40}, "cuda_toolkit_repo_keyring_sha256"),
    ({"cuda_toolkit_apt_retries": -1}, "cuda_toolkit_apt_retries"),
    ({"cuda_toolkit_apt_retry_delay": "-10"}, "cuda_toolkit_apt_retry_delay"),
    ({"cuda_toolkit_apt_lock_timeout": -300}, "cuda_toolkit_apt_lock_timeout"),
    ({"cuda_toolkit_http_proxy": "proxy.example:3128"}, "cuda_toolkit_http_proxy"),
    ({"cuda_toolkit_https_proxy": "socks5://proxy.example:1080"}, "cuda_toolkit_https_proxy"),
    ({"cuda_toolkit_no_proxy": "localhost mirror.lan"}, "cuda_toolkit_no_proxy"),
]


def test_the_toolkit_defaults_pass_and_so_do_good_overrides():
    assert cuda_plan.variable_refusals(TOOLKIT) == []
    good = dict(TOOLKIT, cuda_toolkit_repo_distro="ubuntu2404", cuda_toolkit_repo_arch="sbsa", cuda_toolkit_verify_archs=["sm_120f", "sm_89"])
    good.update(cuda_toolkit_repo_keyring_sha256="0123456789abcdefABCDEF0123456789abcdef0123456789abcdef0123456789")
    assert cuda_plan.variable_refusals(good) == []
    # plain http without a fingerprint is fine with no source of the role's own
    no_source = dict(TOOLKIT, cuda_toolkit_repo_key_fingerprint="", cuda_toolkit_repo_source="none", cuda_toolkit_repo_base_url="http://m/r")
    assert cuda_plan.variable_refusals(no_source) == []


@pytest.mark.parametrize("change, name", TOOLKIT_BAD)
def test_a_wrong_toolkit_value_is_refused_by_its_name_only(change, name):
    (msg,) = cuda_plan.variable_refusals(dict(TOOLKIT, **change))
    assert named(msg, TOOLKIT) == {name}, msg


def test_the_verify_archs_refusal_names_the_wrong_entries():
    (msg,) = cuda_plan.variable_refusals(dict(TOOLKIT, cuda_toolkit_verify_archs=["sm_120a", "sm_5"]))
    assert msg == "cuda_toolkit_verify_archs entries must be nvcc archs like sm_120a, sm_120f or sm_89 (got sm_5 in ['sm_120a', 'sm_5'])."
    # the keyring package over plain http is named as such
    (keyring,) = cuda_plan.variable_refusals(
        dict(TOOLKIT, cuda_toolkit_repo_source="keyring", cuda_toolkit_repo_key_fingerprint="", cuda_toolkit_repo_base_url="http://m/r")
    )
    assert "the cuda-keyring package comes over plain http (http://m/r)" in keyring


def test_the_runfile_method_needs_a_file_and_a_sha256_per_release():
    runfile = dict(TOOLKIT, cuda_toolkit_method="runfile", cuda_toolkit_versions=["12.9.1", "13.0.2"])
    good = {"src": "/srv/cuda_13.0.2.run", "checksum": "sha256:" + "0" * 64}
    got = cuda_plan.variable_refusals(dict(runfile, cuda_toolkit_runfiles={"13.0.2": good, "12.9.1": dict(good, checksum="md5:" + "0" * 32)}))
    assert got == [
        "cuda_toolkit_method=runfile needs cuda_toolkit_runfiles['12.9.1'] with src (path or URL) and checksum sha256:<64 hex digits> "
        "(NVIDIA publishes md5 only, which does not resist a forged file: take the sha256 of the runfile you checked)"
    ]
    assert len(cuda_plan.variable_refusals(runfile)) == 2  # none given: one refusal per release
    assert cuda_plan.variable_refusals(dict(runfile, cuda_toolkit_runfiles={"13.0.2": good, "12.9.1": good})) == []
    assert cuda_plan.variable_refusals(dict(runfile, cuda_toolkit_runfiles={"13.0.2": dict(good, src=""), "12.9.1": good}))
    assert cuda_plan.variable_refusals(TOOLKIT) == []  # apt: the runfiles are not looked at


VENV_BAD = [
    ({"sglang_venv_root": "/opt/"}, "sglang_venv_root"),
    ({"sglang_venv_root": "opt/sglang"}, "sglang_venv_root"),
    ({"sglang_venv_keep": 1}, "sglang_venv_keep"),
    ({"sglang_venv_build_timeout": 0}, "sglang_venv_build_timeout"),
    ({"sglang_venv_packages": ["sglang>=0.5"]}, "sglang_venv_packages"),
    ({"sglang_venv_packages": []}, "sglang_venv_packages"),
    ({"sglang_venv_lock_file": "/nowhere/requirements.lock"}, "sglang_venv_lock_file"),
    ({"sglang_venv_patches": ["/nowhere/fix.patch"]}, "sglang_venv_patches"),
    ({"sglang_venv_http_proxy": "proxy.example:3128"}, "sglang_venv_http_proxy"),
    ({"sglang_venv_https_proxy": "http://proxy.example:3128/x"}, "sglang_venv_https_proxy"),
    ({"sglang_venv_no_proxy": "a;b"}, "sglang_venv_no_proxy"),
]


def test_the_venv_defaults_pass_and_a_lock_file_stands_for_the_pins(tmp_path):
    assert venv_info.variable_refusals(VENV) == []
    lock = tmp_path / "requirements.lock"
    lock.write_text("sglang==0.5.23\n")
    assert venv_info.variable_refusals(dict(VENV, sglang_venv_packages=[], sglang_venv_lock_file=str(lock))) == []


@pytest.mark.parametrize("change, name", VENV_BAD)
def test_a_wrong_venv_value_is_refused_by_its_name_only(change, name):
    (msg,) = venv_info.variable_refusals(dict(VENV, **change))
    assert named(msg, VENV) == {name}, msg


def test_packages_without_their_dependencies_are_refused_with_both_names():
    pinned = VENV["sglang_venv_packages"][0]
    (msg,) = venv_info.variable_refusals(dict(VENV, sglang_venv_packages_no_deps=[pinned]))
    assert msg.startswith("sglang_venv_packages_no_deps: pinned requirements name==version, none of them also in sglang_venv_packages")


def test_proxies_and_urls_with_credentials_pass_and_a_refusal_shows_no_credentials():
    good = {"http_proxy": "http://u:pw@proxy.example:3128", "https_proxy": "http://proxy.example:3128", "no_proxy": "localhost,.lan"}
    assert cuda_plan.variable_refusals(dict(TOOLKIT, **{"cuda_toolkit_" + k: v for k, v in good.items()})) == []
    assert venv_info.variable_refusals(dict(VENV, **{"sglang_venv_" + k: v for k, v in good.items()})) == []
    base = dict(TOOLKIT, cuda_toolkit_repo_base_url="ftp://user:hunter2@mirror/cuda", cuda_toolkit_repo_key_url="k:hunter2@x")
    msgs = " ".join(cuda_plan.variable_refusals(base))
    assert "cuda_toolkit_repo_base_url" in msgs and "cuda_toolkit_repo_key_url" in msgs and "hunter2" not in msgs
