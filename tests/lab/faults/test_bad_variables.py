"""Every role variable fed a wrong type or value (table-driven): refused before any change, with a message naming that
variable and no other. Each case is a whole site.yml run on ct200 alone (one host: no check play before the roll), so
the refusal must come before the first role changes anything (issue 47); the host's packages, alternatives, units,
venvs, marker and the system directories an operator could name (/opt, /srv) are compared before and after. A case
refused by the variables check makes no call to the host: the runs go side by side. Then a CUDA pin bump the toolkit
would install, with a bad venv or service variable beside it: refused first, the toolkit as it was."""

import concurrent.futures
import json
import os
import re
import subprocess
import time

import yaml

from ..after.test_cuda_toolkit import aptrepo, bumped_pins, installed, shipped_pins
from ..conftest import ROOT, playbook, playbook_command

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


# what must not move: packages, alternatives, the venvs and current, the units' drop-in and the marker, the service's
# process, and the system directories a wrong path would hand to the service user (their mode and owner, what is in them)
STATE = (
    "dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev}\\n'; update-alternatives --query cuda; ls -l /opt/sglang /opt/sglang/venvs; "
    "md5sum /etc/systemd/system/sglang-k26.service.d/*.conf /etc/ansible/facts.d/*.fact; systemctl show -p MainPID --value sglang-k26; "
    "stat -c '%n %a %U:%G' / /opt /srv /etc /usr/lib /var/cache /var/cache/sglang; "
    "find /opt /srv /etc/systemd/system -maxdepth 2 | sort"
)


def refusal(extra_vars):
    """A whole site.yml run on ct200 with extra_vars: (rc, the first failed task's message, the recap, output, seconds)."""
    cmd, env = playbook_command(extra_vars=extra_vars)
    env.update(ANSIBLE_CALLBACK_RESULT_FORMAT="json", ANSIBLE_CALLBACK_FORMAT_PRETTY="false")
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    took = time.monotonic() - start
    out = proc.stdout + proc.stderr
    failed = [json.loads(line.split(" => ", 1)[1]) for line in proc.stdout.splitlines() if line.startswith("fatal: [ct200]: FAILED! => ")]
    m = re.search(r"^ct200\s+:\s+(.*)$", out, re.M)
    recap = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(1))} if m else {}
    msg = str(failed[0].get("msg") or "") if failed else ""
    return proc.returncode, msg, recap, out, took


def test_every_wrong_variable_is_refused_before_any_change(run):
    table = cases()
    assert len(table) >= 60
    before = run(STATE)
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda c: refusal({c["var"]: c["value"]}), table))
    wall = time.monotonic() - start
    assert not [(c, r[3][-2000:]) for c, r in zip(table, results, strict=True) if "Traceback (most recent call last)" in r[3]]
    accepted = [(c, r[2], r[3][-1500:]) for c, r in zip(table, results, strict=True) if r[0] == 0 or not r[1]]
    assert not accepted, "accepted: %s" % accepted
    # refused before any change: nothing changed in the run that refused it
    changed = [(c, r[2]) for c, r in zip(table, results, strict=True) if r[2].get("changed", 0) != 0]
    assert not changed, "changed before the refusal: %s" % changed
    names = role_variables()
    unnamed = [(c, r[1][:300]) for c, r in zip(table, results, strict=True) if c["var"] not in named(r[1], names)]
    assert not unnamed, "refused without naming the variable: %s" % unnamed
    # exactly that variable: a message listing every variable of its role would name the right one by chance
    others = [(c, sorted(named(r[1], names) - {c["var"]} - RELATED.get(c["var"], set())), r[1][:300]) for c, r in zip(table, results, strict=True)]
    others = [o for o in others if o[1]]
    assert not others, "refused naming other variables too: %s" % others
    assert run(STATE) == before
    slow = max(results, key=lambda r: r[4])
    print(
        "%d wrong values refused by whole site.yml runs, each naming its variable, nothing changed: %.0f s (slowest run %.1f s)" % (len(table), wall, slow[4])
    )


def test_a_bad_venv_or_service_variable_is_refused_before_a_pin_bump_changes_the_toolkit(run):
    old, new = shipped_pins(), bumped_pins()
    before = installed(run)
    bumped = sorted(n for n in new if new[n] != old[n] and n in before)
    # the toolkit would change: its held packages are at the shipped release, the bump names newer ones on the mirror
    assert {"cuda-nvcc-13-0", "libcurand-dev-13-0"} <= set(bumped) and all(before[n] == (old[n], "hi") for n in bumped)
    pins = {"cuda_toolkit_versions": [aptrepo.PATCH_RELEASE], "cuda_toolkit_package_versions": {aptrepo.PATCH_RELEASE: new}}
    rc, out, recap = playbook("--check", "--tags", "cuda_toolkit_preflight,cuda_toolkit_install", extra_vars=pins)
    assert rc == 0 and recap.get("changed", 0) > 0 and "cuda-nvcc-13-0" in out, out[-3000:]  # what the bump would install
    state = run(STATE)
    for bad, words in (
        ({"sglang_venv_keep": 1}, "sglang_venv_keep: >= 2"),
        ({"sglang_service_cache_dir": "/opt"}, "sglang_service_cache_dir: a directory the service user may own: not a system directory"),
    ):
        rc, msg, recap, out, took = refusal(dict(pins, **bad))
        assert rc != 0 and msg.startswith("Refused before any change. ") and words in msg, out[-3000:]
        assert recap.get("changed", 0) == 0, out[-3000:]
        assert installed(run) == before  # cuda-nvcc-13-0 and the rest still at the shipped release, held
        assert run(STATE) == state
        print("%s with the pin bump: refused in %.1f s, the toolkit as it was" % (sorted(bad)[0], took))
