"""The sglang_service role's variables checked before any change (service_plan.variable_refusals): each wrong value is
refused by the variable's name, and only that one."""

import os
import re

import pytest
import yaml

from ansible_collections.blackwell.inference.plugins.module_utils.service import plan as sp

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", ".."))
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
    ("sglang_service_textfile_dir", "var/lib/node_exporter"),
    ("sglang_service_textfile_dir", "/var/lib/node_exporter\nExecStartPre=+/bin/id"),
    ("sglang_service_textfile_dir", "/var/lib/../../etc"),
    # issue 47: a directory the boot units may write is one normalised path, no system directory, not in /etc
    ("sglang_service_textfile_dir", "/etc"),
    ("sglang_service_textfile_dir", "/var/lib"),
    ("sglang_service_textfile_dir", "/etc/node_exporter"),
    ("sglang_service_textfile_dir", "/srv/t /etc"),
    ("sglang_service_textfile_dir", "/var/lib/node_exporter/"),
    # issue 45: a control character in anything the role writes into a unit, drop-in or environment file
    ("sglang_service_environment", {"NCCL_DEBUG": "x\rExecStartPre=+/bin/touch /var/tmp/p\r#"}),
    ("sglang_service_environment", {"A": "1\x00"}),
    ("sglang_service_secret_environment", {"HF_TOKEN": "t\nExecStartPre=+/bin/id"}),
    ("sglang_service_secret_environment", {"HF_TOKEN": "t\tab"}),  # to_json writes \t, which systemd keeps as written
    ("sglang_service_secret_environment", {"HF_TOKEN": "gr\u00fc\u00df"}),  # to_json writes \u00fc likewise
    ("sglang_service_command", ["/usr/bin/server", "--x", "y\rExecStartPre=+/bin/id"]),
    ("sglang_service_args", ["--tp", "8\n"]),
    ("sglang_service_model_path", "/models/m\rExecStartPre=+/bin/id"),
    ("sglang_service_host", "0.0.0.0\x1b"),
    ("sglang_service_cache_dir", "/var/cache/sglang\r"),
    ("sglang_service_cache_dir", "/var/cache/sglang/../../../etc"),
    ("sglang_service_venv", "/opt/sglang/current\x7f"),
    ("sglang_service_cuda_home", "/usr/local/cuda-13.0\n"),
    ("sglang_service_jit_build_log", "/var/cache/sglang/jit.jsonl\x0b"),
    ("sglang_service_ld_library_path", ["/usr/lib", "/opt/lib\r"]),
    # re's $ matches before a final newline: the names' own patterns take the whole value
    ("sglang_service_name", "sglang\n"),
    ("sglang_service_user", "sglang\n"),
    ("sglang_service_group", "sglang\n"),
    ("sglang_service_marker", "blackwell_inference\n"),
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
    # node_exporter's textfile directories as the lab and Debian's package name them
    for textfile in ("/var/lib/node_exporter/textfile_collector", "/var/lib/prometheus/node-exporter"):
        assert sp.variable_refusals(dict(GOOD, sglang_service_textfile_dir=textfile)) == []


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


@pytest.mark.parametrize(
    "name,value,msg",
    [
        (
            "sglang_service_environment",
            {"NCCL_DEBUG": "x\rExecStartPre=+/bin/touch /var/tmp/p\r#"},
            "sglang_service_environment: NCCL_DEBUG holds a control character (\\r at 1), which systemd would read as a new line; refused.",
        ),
        (
            "sglang_service_secret_environment",
            {"HF_TOKEN": "secret\rExecStartPre=+/bin/id"},
            "sglang_service_secret_environment: HF_TOKEN holds a control character (\\r at 6), which systemd would read as a new line; "
            "refused (value not shown).",
        ),
        (
            "sglang_service_command",
            ["/usr/bin/server", "a\x1bb"],
            "sglang_service_command: word 1 holds a control character (\\x1b at 1), which systemd would not read back as written; refused.",
        ),
        (
            "sglang_service_model_path",
            "/m\n",
            "sglang_service_model_path: '/m\\n' holds a control character (\\n at 2), which systemd would read as a new line; refused.",
        ),
    ],
)
def test_a_control_character_is_named_with_where_and_why(name, value, msg):
    assert sp.variable_refusals(dict(GOOD, **{name: value})) == [msg]


def test_a_secret_value_is_never_shown():
    (msg,) = sp.variable_refusals(dict(GOOD, sglang_service_secret_environment={"HF_TOKEN": "hunter2\r"}))
    assert "hunter2" not in msg


@pytest.mark.parametrize(
    "name,value",
    [
        # a tab stays inside the quotes of Environment= and ExecStart= words; the other nasty values are escaped
        ("sglang_service_environment", {"A": "a\tb", "B": "%h $HOME ${X} \"q\" 's' back\\slash\\ semi;colon \u00fc =x="}),
        ("sglang_service_command", ["/usr/bin/server", "--x", "a\tb", "$HOME", "%h"]),
        ("sglang_service_args", ["--tp", 8, "--x=a b"]),
        ("sglang_service_secret_environment", {"HF_TOKEN": 'a b $X `y` "q" back\\slash'}),
        ("sglang_service_model_path", "/models/Kimi K2 100%"),
        # a space in the cache directory is refused (issue 47: "/srv/c /etc" is not one path), not in the venv's path
        ("sglang_service_cache_dir", "/srv/cache-100%"),
        ("sglang_service_venv", "/srv/venv dir/100%"),
    ],
)
def test_values_systemd_reads_back_pass(name, value):
    assert sp.variable_refusals(dict(GOOD, **{name: value})) == []
