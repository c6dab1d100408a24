"""Further SGLang services on one host (sglang_service_extra_services): each entry checked and resolved against the
first service's variables, and the host's READY over all of them. The first service is ct200's lab one (a drop-in for
sglang-k26 on 30000); the entries are the deployments the seeds name beside it (EAGLE-3, DFlash)."""

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.service import list as service_list

PRIMARY = {
    "name": "sglang-k26",
    "mode": "dropin",
    "venv": "/opt/sglang/current",
    "environment": {"HF_HOME": "/models/hf"},
    "model_path": "/models/Kimi-K2.6",
    "port": 30000,
    "args": [],
    "command": [],
    "marker": "blackwell_inference",
}


def resolve(*entries, **primary):
    return service_list.extra_services(list(entries), dict(PRIMARY, **primary))


def test_an_entry_takes_the_first_services_values_for_what_it_does_not_give():
    got = resolve({"name": "sglang-eagle3", "gpus": "4,5,6,7"})
    assert got["error"] is None
    assert got["services"] == [
        {
            "name": "sglang-eagle3",
            "mode": "dropin",
            "venv": "/opt/sglang/current",
            "environment": {"HF_HOME": "/models/hf", "CUDA_VISIBLE_DEVICES": "4,5,6,7"},
            "model_path": "/models/Kimi-K2.6",
            "port": 30000,  # the unit's own command keeps its own port (drop-in, no args): no clash to judge
            "args": [],
            "command": [],
            "marker": "blackwell_inference_sglang_eagle3",
        }
    ]


def test_an_entrys_own_values_win_and_its_environment_is_merged_over_the_first_ones():
    entry = {
        "name": "sglang-DFlash",
        "mode": "unit",
        "venv": "/opt/sglang-dflash/current",
        "gpus": " 6, 7",
        "environment": {"HF_HOME": "/srv/hf", "NCCL_P2P_DISABLE": "1"},
        "model_path": "/models/dflash",
        "port": "30002",
        "args": ["--tp", "2", "--speculative-algorithm", "DFLASH"],
        "marker": "dflash_ready",
    }
    (svc,) = resolve(entry)["services"]
    assert svc["environment"] == {"HF_HOME": "/srv/hf", "NCCL_P2P_DISABLE": "1", "CUDA_VISIBLE_DEVICES": "6,7"}
    assert (svc["mode"], svc["venv"], svc["port"], svc["marker"]) == ("unit", "/opt/sglang-dflash/current", 30002, "dflash_ready")
    assert svc["args"] == ["--tp", "2", "--speculative-algorithm", "DFLASH"]


def test_a_key_given_as_null_is_a_key_not_given():
    (svc,) = resolve({"name": "sglang-eagle3", "venv": None, "gpus": None, "port": None})["services"]
    assert svc["venv"] == "/opt/sglang/current" and "CUDA_VISIBLE_DEVICES" not in svc["environment"] and svc["port"] == 30000


def test_no_entries_no_services():
    assert resolve() == {"error": None, "services": []}
    assert service_list.extra_services(None, PRIMARY) == {"error": None, "services": []}


# (entries, first service's changes, what the refusal must name)
REFUSED = [
    ("not a list", {}, "sglang_service_extra_services: a list"),
    (["sglang-eagle3"], {}, "sglang_service_extra_services[0]: a mapping with a name"),
    ([{"gpus": "4"}], {}, "sglang_service_extra_services[0].name: a unit name"),
    ([{"name": "sglang-eagle3.service"}], {}, "sglang_service_extra_services[0].name: a unit name without .service"),
    ([{"name": "sglang-k26"}], {}, "[0].name: a unit other than sglang_service_name's sglang-k26"),
    ([{"name": "a"}, {"name": "a", "marker": "other"}], {}, "[1].name: each service once (a is also sglang_service_extra_services[0].name)"),
    ([{"name": "a", "port": 30001, "speculative": True}], {}, "[0]: unknown keys speculative (allowed: name, mode"),
    ([{"name": "a", "mode": "systemd"}], {}, "[0].mode: unit or dropin"),
    ([{"name": "a", "venv": "opt/venv"}], {}, "[0].venv: an absolute path"),
    ([{"name": "a", "gpus": "4;5"}], {}, "[0].gpus: CUDA_VISIBLE_DEVICES"),
    ([{"name": "a", "gpus": "4", "environment": {"CUDA_VISIBLE_DEVICES": "5"}}], {}, "[0].gpus: not with CUDA_VISIBLE_DEVICES in its environment"),
    ([{"name": "a", "environment": {"FLASHINFER_CUDA_ARCH_LIST": "12.0f"}}], {}, "[0].environment: none of CUDA_HOME"),
    ([{"name": "a", "environment": {"bad-name": "1"}}], {}, "[0].environment: a mapping of variable names"),
    ([{"name": "a", "port": 70000}], {}, "[0].port: 1-65535 (got 70000)"),
    ([{"name": "a", "port": True}], {}, "[0].port: 1-65535"),
    ([{"name": "a", "args": "--tp 4"}], {}, "[0].args: a list of strings"),
    ([{"name": "a", "command": [1, 2]}], {}, "[0].command: a list of strings"),
    ([{"name": "a", "marker": "Ready-A"}], {}, "[0].marker: a lower-case identifier"),
    ([{"name": "a", "marker": "blackwell_inference"}], {}, "[0].marker: a marker of its own (blackwell_inference is also sglang_service_marker)"),
    # the role writes the launcher (unit mode): the port must be the host's only one
    ([{"name": "a", "mode": "unit"}], {"mode": "unit"}, "[0].port: a port of its own (30000 is sglang-k26's)"),
    ([{"name": "a", "args": ["--tp", "4"], "port": 30001}, {"name": "b", "mode": "unit", "port": 30001}], {}, "[1].port: a port of its own (30001 is a's)"),
]


@pytest.mark.parametrize("entries, primary, named", REFUSED)
def test_a_bad_entry_is_refused_naming_the_entry_and_key(entries, primary, named):
    got = service_list.extra_services(entries, dict(PRIMARY, **primary))
    assert got["error"] and named in got["error"], got["error"]


def test_every_refusal_is_in_the_one_message():
    got = resolve({"name": "a", "mode": "x", "port": 0})
    assert "[0].mode:" in got["error"] and "[0].port:" in got["error"]


def test_ports_are_not_judged_where_the_units_own_command_says_them():
    # drop-in without args keeps each unit's own ExecStart (its own --port); a whole command is the caller's
    assert resolve({"name": "a"}, {"name": "b", "command": ["/opt/x/bin/python", "-m", "sglang.launch_server"]})["error"] is None
