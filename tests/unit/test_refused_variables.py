"""Every role variable fed a wrong type or value (table-driven): refused before any change, with a message naming that
variable and no other. Judged by site.yml's own variables_check task (plugins/action/variables_check.py, run as is) on
the variables it would see for ct200 of the lab inventory: ansible-core loads site.yml, inventories/lab and the three
roles' defaults and vars (import_role) with DataLoader, InventoryManager and VariableManager, each wrong value goes on
top as `-e` puts it (extra vars win), and the action templates each role variable with a Templar over those variables.
The whole table runs in one child process (the collection loader it needs stays out of pytest's process). The lab
(tests/lab/faults/test_bad_variables.py) keeps one whole site.yml run per role."""

import functools
import json
import os
import re
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(ROOT, ".collections")  # tests/conftest.py links the checkout there
INVENTORY = os.path.join(ROOT, "inventories", "lab", "hosts.yml")
ROLES = ("cuda_toolkit", "sglang_venv", "sglang_service")

# A wrong value for each type; options whose type accepts anything get a value their preflight refuses.
WRONG_BY_TYPE = {"bool": "perhaps", "int": "many", "list": {"not": "a list"}, "dict": "not-a-dict"}
WRONG_VALUES = {
    "cuda_toolkit_versions": [["13.x"], ["12.3.4"]],
    "cuda_toolkit_default": ["13", "99.9"],
    "cuda_toolkit_root": ["usr/local"],
    "cuda_toolkit_repo_base_url": ["ftp://mirror.example/cuda"],
    "cuda_toolkit_repo_distro": ["debian 12"],
    "cuda_toolkit_repo_arch": ["arm64"],
    "cuda_toolkit_repo_key_url": ["not a url"],
    "cuda_toolkit_repo_key_fingerprint": ["not-a-fingerprint"],
    "cuda_toolkit_repo_keyring_sha256": ["not-a-sha256"],
    "cuda_toolkit_package_versions": [{"13.0.2": {"cuda-nvcc-13-0": ""}}],
    "cuda_toolkit_apt_retries": [-1],
    "cuda_toolkit_verify_archs": [["compute_120"]],
    "cuda_toolkit_http_proxy": ["proxy.example:3128"],  # no scheme
    "cuda_toolkit_https_proxy": ["socks5://u:pw@proxy.example:1080"],
    "cuda_toolkit_no_proxy": ["localhost mirror.lan"],
    # issue 47: one normalised absolute path, no system directory or parent of one, not in or above /etc
    "sglang_venv_root": ["opt/sglang", "/", "/opt", "/opt//sglang", "/etc/sglang"],
    "sglang_venv_python": [""],
    "sglang_venv_packages": [[], ["sglang>=0.5"]],
    "sglang_venv_packages_no_deps": [["sglang>=0.5"], ["flashinfer-python==0.7.4"]],  # unpinned; also in sglang_venv_packages
    "sglang_venv_keep": [1],  # a rollback needs the previous venv
    "sglang_venv_build_timeout": [0],
    "sglang_venv_lock_file": ["/nonexistent/lock.txt"],
    "sglang_venv_patches": [["/nonexistent/fix.patch"]],
    "sglang_venv_http_proxy": ["http://proxy.example:3128/path"],
    "sglang_venv_https_proxy": ["proxy.example"],
    "sglang_venv_no_proxy": ["a;b"],
    "sglang_service_name": ["sglang.service", "bad name"],
    "sglang_service_user": ["Root!"],
    "sglang_service_group": ["Sglang Group"],
    "sglang_service_venv": ["opt/sglang/current"],
    "sglang_service_arch_list": ["sm_120", "12"],
    # issue 47: a directory the service user may own (chowned 0750, ReadWritePaths=): not /opt, /etc, /usr/lib, not the
    # venv root or inside it, not two paths, written as one normalised path
    "sglang_service_cache_dir": ["/var/cache", "cache", "/opt", "/srv/c /etc", "/etc", "/usr/lib", "/opt/sglang", "/opt/sglang/cache", "/var//cache/sglang"],
    "sglang_service_cuda_home": ["/usr/local/cuda", "cuda-13.0", "/usr/local//cuda"],
    "sglang_service_jit_build_log": ["jit.jsonl"],
    "sglang_service_ld_library_path": [["lib64"]],
    "sglang_service_environment": [{"CUDA_HOME": "/usr/local/cuda"}, {"BAD-NAME": "1"}],
    "sglang_service_secret_environment": [{"HF TOKEN": "x"}],
    "sglang_service_port": [0, 70000],
    "sglang_service_health_path": ["health"],
    "sglang_service_health_timeout": [0],
    # greedy (what /health asks itself), or sampled without a top-p/top-k filter (SGLang samples that in plain torch):
    # proves nothing about FlashInfer's sampling
    "sglang_service_sample_request": [{"text": "x", "sampling_params": {"temperature": 0.0}}, {"text": "x", "sampling_params": {"temperature": 0.7}}],
    "sglang_service_sample_path": ["generate"],
    "sglang_service_sample_timeout": [0],
    "sglang_service_smoke_timeout": [-5],
    "sglang_service_marker": ["Bad-Name"],
    "sglang_service_textfile_dir": ["var/lib/node_exporter", "/etc"],  # issue 48's textfile, issue 47's rules
    "sglang_service_mode": ["sidecar"],
    "sglang_service_jit_warm": [["decode"]],
}
# Free-form strings and lists of strings with no wrong value (any text is a valid value).
FREE_FORM = {
    "cuda_toolkit_runfiles",  # dict: a wrong type is covered; its content is checked only with method=runfile
    "cuda_toolkit_nvidia_smi",
    "sglang_venv_index_url",
    "sglang_venv_extra_index_urls",
    "sglang_venv_find_links",
    "sglang_venv_check_imports",
    "sglang_service_extra_groups",
    "sglang_service_model_path",
    "sglang_service_host",
    "sglang_service_args",
    "sglang_service_command",
}


# A refusal names the wrong variable and no other, except where the rule is about the pair.
RELATED = {
    "cuda_toolkit_package_versions": {"cuda_toolkit_versions", "cuda_toolkit_repo_base_url"},  # apt could not plan them from that repo
    "cuda_toolkit_versions": {"cuda_toolkit_package_versions"},
    "cuda_toolkit_default": {"cuda_toolkit_versions"},
    "sglang_service_model_path": {"sglang_service_command"},
    "sglang_service_command": {"sglang_service_model_path"},
    "sglang_venv_packages_no_deps": {"sglang_venv_packages", "sglang_venv_lock_file"},
    "sglang_venv_packages": {"sglang_venv_packages_no_deps", "sglang_venv_lock_file"},  # the inventory's no-deps sglang pin is in the bad list too
    "sglang_venv_lock_file": {"sglang_venv_packages", "sglang_venv_packages_no_deps"},  # with an inventory that sets no-deps packages
    # the service's defaults are made from these roots (<root>/cuda-13.0, <root>/current), and its directories are
    # judged against the venv root: a wrong root makes them wrong too, each named with its own rule
    "cuda_toolkit_root": {"sglang_service_cuda_home"},
    "sglang_venv_root": {"sglang_service_venv", "sglang_service_cache_dir", "sglang_service_textfile_dir"},
}


# Not refused by the variables check: the releases and pins the toolkit's plan cannot make, and a default that is not
# one of the releases wanted, are refused by the role's preflight (toolkit_probe's plan) once the host's lock is taken,
# before any change all the same. The lab runs these (tests/lab/faults/test_bad_variables.py).
LATER = [
    ("cuda_toolkit_versions", ["13.x"]),
    ("cuda_toolkit_versions", ["12.3.4"]),
    ("cuda_toolkit_default", "13"),
    ("cuda_toolkit_default", "99.9"),
    ("cuda_toolkit_package_versions", {"13.0.2": {"cuda-nvcc-13-0": ""}}),
]


@functools.cache
def role_options(role):
    with open(os.path.join(ROOT, "roles", role, "meta", "argument_specs.yml"), encoding="utf-8") as fh:
        return yaml.safe_load(fh)["argument_specs"]["main"]["options"]


def role_variables():
    return {name for role in ROLES for name in role_options(role)}


def named(msg, names):
    return {n for n in names if re.search(r"(?<![A-Za-z0-9_])%s(?![A-Za-z0-9_])" % n, msg)}


def cases():
    out = []
    for role in ROLES:
        for name, spec in role_options(role).items():
            values = list(WRONG_VALUES.get(name, []))
            if spec.get("choices") and name not in WRONG_VALUES:
                values.append(["not-a-choice"] if spec.get("type") == "list" else "not-a-choice")
            if spec.get("type") in WRONG_BY_TYPE:
                values.append(WRONG_BY_TYPE[spec["type"]])
            assert values or name in FREE_FORM, "no wrong value for %s: add one to the table" % name
            out += [{"role": role, "var": name, "value": v} for v in values]
    return out


def judge(extra_vars_list):
    """In the child process: for each extra vars dict, what site.yml's variables_check task returns on ct200 of the lab
    inventory with them given as -e: {"failed", "msg", "refusals", "seen"} (seen: the role variables it had, by name)."""
    os.environ["ANSIBLE_CONFIG"] = os.path.join(ROOT, "ansible.cfg")  # before ansible reads its constants
    sys.path.insert(0, COLLECTIONS)
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader
    from ansible.playbook import Playbook
    from ansible.playbook.play_context import PlayContext
    from ansible.plugins.loader import action_loader, connection_loader, init_plugin_loader
    from ansible.template import Templar
    from ansible.vars.manager import VariableManager

    init_plugin_loader([COLLECTIONS])  # the collection's filters (rolling_vars_file, cuda_toolkit_home) and the action
    loader = DataLoader()
    loader.set_basedir(ROOT)
    inventory = InventoryManager(loader=loader, sources=[INVENTORY])
    manager = VariableManager(loader=loader, inventory=inventory)
    plays = Playbook.load(os.path.join(ROOT, "site.yml"), variable_manager=manager, loader=loader).get_plays()
    play = next(p for p in plays if not p.vars.get("__blackwell_inference_check_play"))  # the provisioning play

    def tasks(blocks):
        for b in blocks:
            yield from tasks(b.block) if hasattr(b, "block") else [b]

    # a run over one host skips the check play: this is its first check, the play's first task
    task = next(t for t in tasks(play.compile()) if t.action == "blackwell.inference.variables_check")
    host = inventory.get_host("ct200")
    names = role_variables()
    out = []
    for extra_vars in extra_vars_list:
        manager._extra_vars = loader.load(json.dumps(extra_vars))  # as `ansible-playbook -e '<json>'` loads them
        task_vars = manager.get_vars(play=play, host=host, task=task, _hosts=["ct200"], _hosts_all=["ct200"])
        action = action_loader.get(
            task.action,
            task=task,
            connection=connection_loader.get("ansible.builtin.local", PlayContext()),  # the action makes no call through it
            play_context=PlayContext(),
            loader=loader,
            templar=Templar(loader=loader, variables=task_vars),
            shared_loader_obj=None,
        )
        result = action.run(task_vars=task_vars)
        out.append({"refusals": result["refusals"], "msg": result.get("msg", ""), "failed": bool(result.get("failed")), "seen": sorted(names & set(task_vars))})
    return out


TABLE = cases()
CHECKED = [c for c in TABLE if (c["var"], c["value"]) not in LATER]
# The toolkit's refusals as the operator reads them, word for word (once rows of a whole site.yml run each in
# tests/lab/before/test_cuda_toolkit_refusals.py, which keeps those the host decides: a release without pins, a default
# toolkit that is not installed, an apt source already there)
WORDED = [
    ({"cuda_toolkit_method": "tarball"}, "value of cuda_toolkit_method must be one of: apt, runfile, got: tarball"),
    ({"cuda_toolkit_components": "everything"}, "value of cuda_toolkit_components must be one of: slim, full, got: everything"),
    ({"cuda_toolkit_hold": "maybe"}, "argument 'cuda_toolkit_hold' is of type str and we were unable to convert to bool"),
    ({"cuda_toolkit_method": "runfile"}, "cuda_toolkit_method=runfile needs cuda_toolkit_runfiles['13.0.2']"),
    (
        {"cuda_toolkit_method": "runfile", "cuda_toolkit_runfiles": {"13.0.2": {"src": "/srv/cuda_13.0.2.run", "checksum": "md5:" + "0" * 32}}},
        "and checksum sha256:<64 hex digits> (NVIDIA publishes md5 only",
    ),
    (
        {"cuda_toolkit_repo_base_url": "http://mirror.example/cuda/repos", "cuda_toolkit_repo_key_fingerprint": ""},
        "cuda_toolkit_repo_key_fingerprint must be set when the cuda-keyring package comes over plain http (http://mirror.example/cuda/repos)",
    ),
]


def case_id(case):
    return "%s=%s-%d" % (case["var"], json.dumps(case["value"], separators=(",", ":")), TABLE.index(case))


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    """{"lab": the lab inventory as it is, case id: with that case's wrong value}, from one child process."""
    assert os.path.isdir(os.path.join(COLLECTIONS, "ansible_collections", "blackwell", "inference"))
    extra_vars = [{}] + [{c["var"]: c["value"]} for c in TABLE] + [given for given, _words in WORDED]
    path = tmp_path_factory.mktemp("refused") / "verdicts.json"
    cmd = [sys.executable, os.path.abspath(__file__), str(path)]
    proc = subprocess.run(cmd, input=json.dumps(extra_vars), cwd=ROOT, capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    results = json.loads(path.read_text(encoding="utf-8"))
    assert len(results) == len(extra_vars)
    return dict(zip(["lab"] + [case_id(c) for c in TABLE] + ["worded-%d" % i for i in range(len(WORDED))], results, strict=True))


def test_the_table_covers_the_roles():
    assert len(CHECKED) >= 60 and len(CHECKED) + len(LATER) == len(TABLE)
    names = role_variables()
    assert set(WRONG_VALUES) | FREE_FORM | set(RELATED) <= names, "the table names a variable no role has"


def test_the_cases_left_to_the_lab_are_the_ones_the_variables_check_lets_through(verdicts):
    # refused there, they belong in the table above and not in a whole site.yml run each
    through = [c for c in TABLE if not verdicts[case_id(c)]["failed"]]
    assert [(c["var"], c["value"]) for c in through] == LATER


def test_the_lab_inventory_itself_is_not_refused(verdicts):
    lab = verdicts["lab"]
    # the action had every role variable (the roles' defaults under the inventory's host_vars)
    assert lab["seen"] == sorted(role_variables())
    assert (lab["failed"], lab["msg"], lab["refusals"]) == (False, "", []), lab


@pytest.mark.parametrize("case", CHECKED, ids=case_id)
def test_a_wrong_variable_is_refused_before_any_change_naming_it_and_no_other(case, verdicts):
    got = verdicts[case_id(case)]
    msg = got["msg"]
    assert got["failed"] and msg.startswith("Refused before any change. "), got
    names = named(msg, role_variables())
    assert case["var"] in names, "refused without naming the variable: %s" % msg
    # exactly that variable: a message listing every variable of its role would name the right one by chance
    assert not names - {case["var"]} - RELATED.get(case["var"], set()), "refused naming other variables too: %s" % msg


@pytest.mark.parametrize(("index", "words"), [(i, w) for i, (_given, w) in enumerate(WORDED)], ids=[w[:40] for _g, w in WORDED])
def test_the_toolkits_refusals_say_what_is_wrong_in_the_operators_words(index, words, verdicts):
    got = verdicts["worded-%d" % index]
    assert got["failed"] and got["msg"].startswith("Refused before any change. ") and words in " ".join(got["msg"].split()), got


if __name__ == "__main__":
    with open(sys.argv[1], "w", encoding="utf-8") as _fh:
        json.dump(judge(json.load(sys.stdin)), _fh)
