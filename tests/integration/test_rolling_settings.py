"""The rolling settings take effect where the docs put them: site.yml's two plays (their own hosts, serial,
max_fail_percentage and vars_files, each task replaced by one that says its batch), run by ansible-playbook over three
local hosts, take blackwell_inference_serial and _hosts from rolling.yml beside hosts.yml; group_vars cannot set a play
keyword; -e sets it over the file. (The lab rolls three real hosts so: tests/lab/faults/test_fleet_roll.py.)"""

import os
import re
import subprocess
import sys

import pytest
import yaml

from .conftest import BIN, ROOT


def plays_of_the_site_playbook():
    """site.yml's two plays with their own keywords and vars_files, each task replaced by one that says its batch."""
    with open(os.path.join(ROOT, "playbooks", "site.yml")) as fh:
        plays = yaml.safe_load(fh)
    assert len(plays) == 2
    out = []
    for play in plays:
        assert play["vars_files"] == [["{{ ansible_inventory_sources | blackwell.inference.rolling_vars_file }}", "vars/rolling.yml"]]
        keep = {k: play[k] for k in ("name", "hosts", "serial", "max_fail_percentage", "vars_files") if k in play}
        keep["vars_files"] = [[play["vars_files"][0][0], os.path.join(ROOT, "playbooks", "vars", "rolling.yml")]]
        out.append(dict(keep, gather_facts=False, tasks=[{"name": "Batch", "ansible.builtin.debug": {"msg": "{{ ansible_play_batch | join(',') }}"}}]))
    return out


def batches(tmp_path, rolling_yml=None, group_vars=None, extra=()):
    inv = tmp_path / "inv"
    (inv / "group_vars" / "inference").mkdir(parents=True, exist_ok=True)
    (inv / "hosts.yml").write_text(yaml.safe_dump({"inference": {"hosts": dict.fromkeys(("ct200", "ct201", "ct202"))}}))
    (inv / "group_vars" / "inference" / "main.yml").write_text(yaml.safe_dump(group_vars or {"unrelated": 1}))
    if rolling_yml is not None:
        (inv / "rolling.yml").write_text(yaml.safe_dump(rolling_yml))
    (tmp_path / "site.yml").write_text(yaml.safe_dump(plays_of_the_site_playbook()))
    env = dict(
        os.environ,
        ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
        ANSIBLE_CONNECTION="local",
        ANSIBLE_PYTHON_INTERPRETER=sys.executable,
        ANSIBLE_FORCE_COLOR="0",
        NO_COLOR="1",
    )
    argv = [os.path.join(BIN, "ansible-playbook"), "-i", str(inv / "hosts.yml"), str(tmp_path / "site.yml"), *extra]
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    out = proc.stdout.split("PLAY [Provision Blackwell inference hosts]", 1)[1]
    return sorted(set(re.findall(r'"msg": "([^"]+)"', out)))


@pytest.mark.parametrize(
    "rolling_yml,group_vars,extra,expected",
    [
        (None, None, (), ["ct200", "ct201", "ct202"]),  # the default: one host per batch
        ({"blackwell_inference_serial": 3}, None, (), ["ct200,ct201,ct202"]),  # rolling.yml: one batch
        (None, {"blackwell_inference_serial": 3}, (), ["ct200", "ct201", "ct202"]),  # group_vars cannot set a play keyword
        ({"blackwell_inference_serial": 3}, None, ("-e", "blackwell_inference_serial=1"), ["ct200", "ct201", "ct202"]),  # -e over it
        ({"blackwell_inference_hosts": "ct201"}, None, (), ["ct201"]),
    ],
)
def test_the_plays_take_their_keywords_from_rolling_yml(tmp_path, rolling_yml, group_vars, extra, expected):
    assert batches(tmp_path, rolling_yml, group_vars, extra) == expected
