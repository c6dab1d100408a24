"""A wrong role variable in a whole site.yml run on ct200 alone (one host: no check play before the roll): refused
before the first role changes anything (issue 47), with a message naming that variable and no other; the host's
packages, alternatives, units, venvs, marker and the system directories an operator could name (/opt, /srv) are
compared before and after. The table of every role variable's wrong values is judged by the variables check itself in
tests/unit/test_refused_variables.py; here one case per role goes through the real play and host, side by side (the
variables check makes no call to the host), with the cases that check lets through (refused later by the toolkit's
preflight, on the host). Then a CUDA pin bump the toolkit would install, with a bad venv or service variable beside it:
refused first, the toolkit as it was."""

import concurrent.futures
import json
import re
import subprocess
import time

from ...unit.test_refused_variables import LATER, RELATED, cases, named, role_variables
from ..after.test_cuda_toolkit import aptrepo, bumped_pins, installed, shipped_pins
from ..conftest import ROOT, playbook, playbook_command

LAB_READ_ONLY = True  # every case is refused before any change, and the test asserts the host's state did not move

# one wrong variable per role, refused by site.yml's variables check (the unit table has them all)
CHECKED = [
    ("cuda_toolkit_repo_base_url", "ftp://mirror.example/cuda"),
    ("sglang_venv_keep", 1),
    ("sglang_service_cache_dir", "/opt"),
]


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


def test_a_wrong_variable_of_each_role_is_refused_before_any_change(run):
    assert sorted(c["role"] for c in cases() if (c["var"], c["value"]) in CHECKED) == ["cuda_toolkit", "sglang_service", "sglang_venv"]
    table = CHECKED + LATER
    before = run(STATE)
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda case: refusal({case[0]: case[1]}), table))
    wall = time.monotonic() - start
    names = role_variables()
    for (var, value), (rc, msg, recap, out, _took) in zip(table, results, strict=True):
        where = "%s=%r: %s" % (var, value, out[-3000:])
        assert "Traceback (most recent call last)" not in out, where
        assert rc != 0 and msg, where
        if (var, value) in CHECKED:
            assert msg.startswith("Refused before any change. "), where  # by the variables check
        assert recap.get("changed") == 0, where  # nothing changed in the run that refused it
        # that variable and no other: a message listing every variable of its role would name the right one by chance
        assert var in named(msg, names) and not named(msg, names) - {var} - RELATED.get(var, set()), where
    assert run(STATE) == before
    slow = max(r[4] for r in results)
    print("%d wrong values refused by whole site.yml runs, each naming its variable, nothing changed: %.0f s (slowest run %.1f s)" % (len(table), wall, slow))


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
