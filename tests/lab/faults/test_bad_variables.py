"""Every role variable fed a wrong type or value (table-driven): refused before any change, with a message
naming that variable and no other. All cases run in one play on ct200 (a block and rescue per case); the host's
packages, alternatives, units, venvs and marker are compared before and after."""

import json
import os
import re
import subprocess
import sys

import yaml

from ..conftest import INVENTORY, ROOT, lab_env

LAB_READ_ONLY = True  # every case is refused before any change, and the test asserts the host's state did not move

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
    "cuda_toolkit_package_versions": [{"13.0.2": {"cuda-nvcc-13-0": ""}}],
    "cuda_toolkit_apt_retries": [-1],
    "cuda_toolkit_verify_archs": [["compute_120"]],
    "sglang_venv_root": ["opt/sglang", "/"],
    "sglang_venv_python": [""],
    "sglang_venv_packages": [[], ["sglang>=0.5"]],
    "sglang_venv_packages_no_deps": [["sglang>=0.5"], ["flashinfer-python==0.7.4"]],  # unpinned; also in sglang_venv_packages
    "sglang_venv_keep": [1],  # a rollback needs the previous venv
    "sglang_venv_build_timeout": [0],
    "sglang_venv_lock_file": ["/nonexistent/lock.txt"],
    "sglang_venv_patches": [["/nonexistent/fix.patch"]],
    "sglang_service_name": ["sglang.service", "bad name"],
    "sglang_service_user": ["Root!"],
    "sglang_service_group": ["Sglang Group"],
    "sglang_service_venv": ["opt/sglang/current"],
    "sglang_service_cuda_home": ["/usr/local/cuda", "cuda-13.0"],
    "sglang_service_arch_list": ["sm_120", "12"],
    "sglang_service_cache_dir": ["/var/cache", "cache"],
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
}


def role_variables():
    names = set()
    for role in ("cuda_toolkit", "sglang_venv", "sglang_service"):
        with open(os.path.join(ROOT, "roles", role, "meta", "argument_specs.yml")) as fh:
            names |= set(yaml.safe_load(fh)["argument_specs"]["main"]["options"])
    return names


def named(msg, names):
    return {n for n in names if re.search(r"(?<![A-Za-z0-9_])%s(?![A-Za-z0-9_])" % n, msg)}


def cases():
    out = []
    for role in ("cuda_toolkit", "sglang_venv", "sglang_service"):
        with open(os.path.join(ROOT, "roles", role, "meta", "argument_specs.yml")) as fh:
            options = yaml.safe_load(fh)["argument_specs"]["main"]["options"]
        for name, spec in options.items():
            values = list(WRONG_VALUES.get(name, []))
            if spec.get("choices") and name not in WRONG_VALUES:
                values.append(["not-a-choice"] if spec.get("type") == "list" else "not-a-choice")
            if spec.get("type") in WRONG_BY_TYPE:
                values.append(WRONG_BY_TYPE[spec["type"]])
            assert values or name in FREE_FORM, "no wrong value for %s: add one to the table" % name
            out += [{"role": role, "var": name, "value": v} for v in values]
    return out


def test_every_wrong_variable_is_refused_before_any_change(run, tmp_path):
    table = cases()
    assert len(table) >= 60
    state = "dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev}\\n'; update-alternatives --query cuda; ls -l /opt/sglang /opt/sglang/venvs; "
    state += "md5sum /etc/systemd/system/sglang-k26.service.d/*.conf /etc/ansible/facts.d/*.fact; systemctl show -p MainPID --value sglang-k26"
    before = run(state)
    results = tmp_path / "results.json"
    tasks = []
    for i, case in enumerate(table):
        tasks.append(
            {
                "name": "case %d: %s=%s" % (i, case["var"], json.dumps(case["value"])),
                "block": [{"ansible.builtin.include_role": {"name": "blackwell.inference." + case["role"]}, "vars": {case["var"]: case["value"]}}],
                "rescue": [
                    {
                        "ansible.builtin.set_fact": {
                            "refusals": "{{ refusals | default({}) | combine({'%d': ansible_failed_result.msg | default('') | string}) }}" % i
                        }
                    }
                ],
            }
        )
    tasks.append(
        {
            "ansible.builtin.copy": {"content": "{{ refusals | default({}) | to_json }}", "dest": str(results), "mode": "0644"},
            "delegate_to": "localhost",
        }
    )
    play = tmp_path / "bad_variables.yml"
    play.write_text(yaml.safe_dump([{"name": "Wrong variables", "hosts": "ct200", "gather_facts": True, "gather_subset": ["min"], "tasks": tasks}]))
    env = lab_env()
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", INVENTORY, str(play)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert "Traceback (most recent call last)" not in proc.stdout + proc.stderr
    refusals = json.loads(results.read_text())
    accepted = [c for i, c in enumerate(table) if str(i) not in refusals]
    assert not accepted, "accepted: %s" % accepted
    names = role_variables()
    unnamed = [(c, refusals[str(i)][:300]) for i, c in enumerate(table) if c["var"] not in named(refusals[str(i)], names)]
    assert not unnamed, "refused without naming the variable: %s" % unnamed
    # exactly that variable: a message listing every variable of its role would name the right one by chance
    others = [(c, sorted(named(refusals[str(i)], names) - {c["var"]} - RELATED.get(c["var"], set())), refusals[str(i)][:300]) for i, c in enumerate(table)]
    others = [o for o in others if o[1]]
    assert not others, "refused naming other variables too: %s" % others
    assert run(state) == before
    print("%d wrong values refused, each naming its variable, nothing changed" % len(table))
