"""The rules for the paths an operator gives (common/owned_paths.py, issue 47): every rule, each by the words of its
refusal, and the roles' variables refused by name with it."""

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.common import owned_paths as op
from ansible_collections.blackwell.inference.plugins.module_utils.cuda import plan as cuda_plan
from ansible_collections.blackwell.inference.plugins.module_utils.service import plan as service_plan
from ansible_collections.blackwell.inference.plugins.module_utils.venv import info as venv_info

from ..cuda.test_variable_refusals import TOOLKIT, VENV
from ..service.test_variable_refusals import GOOD as SERVICE

VENV_ROOT = "/opt/sglang"


@pytest.mark.parametrize(
    "path, rule",
    [
        # one normalised absolute path
        ("/srv/c /etc", "one path, with no whitespace"),
        ("/srv/c\t/etc", "one path, with no whitespace"),
        ("/srv/c\n", "one path, with no whitespace"),
        ("relative", "an absolute path"),
        ("cache/sglang", "an absolute path"),
        ("", "one absolute path is needed"),
        (None, "one absolute path is needed"),
        (["/srv/c"], "one absolute path is needed"),
        ("/var//cache", "a normalised path: write /var/cache"),
        ("//var/cache/sglang", "a normalised path: write /var/cache/sglang"),
        ("/var/cache/sglang/", "a normalised path: write /var/cache/sglang"),
        ("/var/cache/./sglang", "a normalised path: write /var/cache/sglang"),
        ("/var/cache/x/../../../etc", "a normalised path: write /etc"),
        # system directories and their parents
        ("/", "not a system directory"),
        ("/opt", "not a system directory"),
        ("/etc", "not a system directory"),
        ("/usr/lib", "not a system directory"),
        ("/usr/local", "not a system directory"),
        ("/var", "not a system directory"),
        ("/var/cache", "not a system directory"),
        ("/var/lib", "not a system directory"),
        ("/tmp", "not a system directory"),
        ("/home", "not a system directory"),
        # inside or above the marker's directory, or /etc
        ("/etc/ansible", "not inside or above the ready marker's directory /etc/ansible/facts.d"),
        ("/etc/ansible/facts.d", "not inside or above the ready marker's directory"),
        ("/etc/ansible/facts.d/cache", "not inside or above the ready marker's directory"),
        ("/etc/sglang", "not inside or above /etc /etc"),
        ("/etc/systemd/system", "not inside or above /etc /etc"),
        # inside or above the venv root (the service's only)
        ("/opt/sglang", "not inside or above the venv root /opt/sglang"),
        ("/opt/sglang/cache", "not inside or above the venv root /opt/sglang"),
        ("/opt/sglang/venvs/x", "not inside or above the venv root /opt/sglang"),
    ],
)
def test_a_service_directory_is_refused_with_the_rule_it_broke(path, rule):
    assert rule in op.service_dir_refusal(path, VENV_ROOT)


def test_the_parent_of_a_system_directory_is_named(monkeypatch):
    assert op.system_refusal("/usr/local/lib/python3") == ""
    assert op.service_dir_refusal("/srv", VENV_ROOT) == "not a system directory (got /srv)"
    assert op.venv_root_refusal("/usr/local/lib") == "not a system directory (got /usr/local/lib)"
    assert op.system_refusal("/srv/c") == ""
    # a parent that is not itself on the list is named by the system directory below it
    monkeypatch.setattr(op, "SYSTEM_DIRS", (*op.SYSTEM_DIRS, "/srv/data/shared"))
    assert op.system_refusal("/srv/data") == "not a parent of the system directory /srv/data/shared (got /srv/data)"


def test_above_the_venv_root_is_refused():
    assert op.service_dir_refusal("/srv/inference", "/srv/inference/sglang") == "not inside or above the venv root /srv/inference/sglang (got /srv/inference)"
    # a venv root given with // or a trailing / is the same place
    assert "the venv root /srv/inference/sglang" in op.service_dir_refusal("/srv/inference/sglang/c", "/srv/inference//sglang/")


@pytest.mark.parametrize("path", ["/var/cache/sglang", "/srv/cache/sglang", "/var/lib/sglang", "/data/sglang-cache", "/opt/sglang-cache", "/srv/cache-100%"])
def test_a_directory_of_its_own_passes(path):
    assert op.service_dir_refusal(path, VENV_ROOT) == ""


@pytest.mark.parametrize("path", ["/opt/sglang", "/srv/sglang", "/data/venvs"])
def test_a_venv_root_of_its_own_passes(path):
    assert op.venv_root_refusal(path) == ""


@pytest.mark.parametrize("path", ["/opt", "/usr", "/etc/sglang", "/etc/ansible", "/opt//sglang", "opt/sglang", "/opt/sglang/", "/srv/a b"])
def test_a_venv_root_breaking_a_rule_is_refused(path):
    assert op.venv_root_refusal(path) != ""


@pytest.mark.parametrize(
    "value, rule",
    [
        ("/opt", "not a system directory"),
        ("/etc", "not a system directory"),
        ("/usr/lib", "not a system directory"),
        ("/opt/sglang", "not inside or above the venv root /opt/sglang"),
        ("/srv/c /etc", "one path, with no whitespace"),
        ("/var//cache", "a normalised path: write /var/cache"),
        ("relative", "an absolute path"),
        ("/etc/ansible/facts.d", "the ready marker's directory"),
        ("/etc/sglang", "not inside or above /etc"),
    ],
)
def test_the_cache_dir_is_refused_by_name_with_the_rule(value, rule):
    (msg,) = service_plan.variable_refusals(dict(SERVICE, sglang_service_cache_dir=value, sglang_venv_root=VENV_ROOT))
    assert msg.startswith("sglang_service_cache_dir: a directory the service user may own: ")
    assert rule in msg


def test_the_cache_dir_is_checked_against_the_venv_root_only_when_it_is_known():
    assert service_plan.variable_refusals(dict(SERVICE, sglang_service_cache_dir="/opt/sglang/cache")) == []
    assert service_plan.variable_refusals(dict(SERVICE, sglang_service_cache_dir="/srv/v/cache", sglang_venv_root="/srv/v")) != []


@pytest.mark.parametrize("value, rule", [("/opt", "not a system directory"), ("/etc/sglang", "/etc"), ("/opt//sglang", "normalised"), ("/srv/a b", "one path")])
def test_the_venv_root_is_refused_by_name_with_the_rule(value, rule):
    (msg,) = venv_info.variable_refusals(dict(VENV, sglang_venv_root=value))
    assert msg.startswith("sglang_venv_root: a directory of its own: ")
    assert rule in msg


@pytest.mark.parametrize(
    "value, rule", [("usr/local", "an absolute path"), ("/usr/local/", "write /usr/local"), ("/usr//local", "write /usr/local"), ("/usr/a b", "one path")]
)
def test_the_toolkit_root_is_one_normalised_absolute_path(value, rule):
    (msg,) = cuda_plan.variable_refusals(dict(TOOLKIT, cuda_toolkit_root=value))
    assert msg.startswith("cuda_toolkit_root must be ")
    assert rule in msg
    assert cuda_plan.variable_refusals(dict(TOOLKIT, cuda_toolkit_root="/usr/local")) == []  # root's, never chowned


@pytest.mark.parametrize("value", ["/usr/local/cuda", "/usr/local//cuda", "/usr/local/cuda/", "//usr/local/cuda", "/usr/local/./cuda"])
def test_usr_local_cuda_is_refused_however_written(value):
    (msg,) = service_plan.variable_refusals(dict(SERVICE, sglang_service_cuda_home=value))
    assert msg.startswith("sglang_service_cuda_home: an absolute path other than /usr/local/cuda")
