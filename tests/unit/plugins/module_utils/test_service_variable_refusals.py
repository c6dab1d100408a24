"""The sglang_service role's variables checked before any change (service_plan.variable_refusals): each wrong value is
refused by the variable's name, and only that one."""

import os
import re

import pytest
import yaml

from ansible_collections.blackwell.inference.plugins.module_utils import service_plan as sp

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
with open(os.path.join(ROOT, "roles", "sglang_service", "defaults", "main.yml")) as _fh:
    DEFAULTS = yaml.safe_load(_fh)

# the role's defaults, with what their templates give on the lab host
GOOD = dict(
    {k: v for k, v in DEFAULTS.items() if k.startswith("sglang_service_")},
    sglang_service_venv="/opt/sglang/current",
    sglang_service_cuda_home="/usr/local/cuda-13.0",
    extras_error=None,
)

BAD = [
    ("sglang_service_name", "sglang.service"),
    ("sglang_service_name", "sg lang"),
    ("sglang_service_user", "root"),  # the role owns the unit (mode unit)
    ("sglang_service_user", "Bad User"),
    ("sglang_service_group", "9group"),
    ("sglang_service_cuda_home", "/usr/local/cuda/"),
    ("sglang_service_cuda_home", "usr/local/cuda-13.0"),
    ("sglang_service_venv", "opt/sglang/current"),
    ("sglang_service_cache_dir", "/var/cache//"),
    ("sglang_service_cache_dir", "/tmp"),
    ("sglang_service_jit_build_log", "jit.jsonl"),
    ("sglang_service_arch_list", "sm_120a"),
    ("sglang_service_arch_list", "12.0a;;12.0f"),
    ("sglang_service_ld_library_path", ["/usr/lib", "lib64"]),
    ("sglang_service_environment", {"CUDA_HOME": "/usr/local/cuda-12.8"}),
    ("sglang_service_environment", ["HF_HOME=/srv/hf"]),
    ("sglang_service_secret_environment", {"HF-TOKEN": "x"}),
    ("sglang_service_port", 0),
    ("sglang_service_port", "65536"),
    ("sglang_service_port", "http"),
    ("sglang_service_health_path", "health"),
    ("sglang_service_health_timeout", 0),
    ("sglang_service_sample_request", {"text": "hi"}),
    ("sglang_service_sample_path", "generate"),
    ("sglang_service_sample_timeout", "-5"),
    ("sglang_service_smoke_timeout", "never"),
    ("sglang_service_marker", "Blackwell-Inference"),
]

NAMES = [k for k in GOOD if k.startswith("sglang_service_")]


def named(msg):
    return {n for n in NAMES if re.search(r"(?<![A-Za-z0-9_])%s(?![A-Za-z0-9_])" % n, msg)}


def test_the_defaults_pass():
    assert sp.variable_refusals(GOOD) == []
    # root may run a drop-in's unit (the unit is the operator's), and a command stands for the model path
    assert sp.variable_refusals(dict(GOOD, sglang_service_mode="dropin", sglang_service_user="root")) == []
    assert sp.variable_refusals(dict(GOOD, sglang_service_model_path="", sglang_service_command=["/usr/bin/server"])) == []
    assert sp.variable_refusals(dict(GOOD, sglang_service_port="8080", sglang_service_arch_list="12.0a 10.0f", sglang_service_sample_request={})) == []


@pytest.mark.parametrize("name, value", BAD)
def test_a_wrong_value_is_refused_by_its_name_only(name, value):
    (msg,) = sp.variable_refusals(dict(GOOD, **{name: value}))
    assert named(msg) == {name}, msg


def test_a_model_path_or_a_command_and_the_further_services():
    (msg,) = sp.variable_refusals(dict(GOOD, sglang_service_model_path="", sglang_service_command=[]))
    assert msg == "sglang_service_model_path or sglang_service_command: one of them must be set."
    assert sp.variable_refusals(dict(GOOD, extras_error="sglang_service_extra_services: ...")) == ["sglang_service_extra_services: ..."]
    # several wrong ones: each its own refusal, in the order of the checks
    got = sp.variable_refusals(dict(GOOD, sglang_service_port=0, sglang_service_name="a.service"))
    assert [next(iter(named(m))) for m in got] == ["sglang_service_name", "sglang_service_port"]
