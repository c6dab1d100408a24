"""One call for the play (issue 15): a site.yml run on one host gathers no facts of its own; the lock's call gathers
them beside its readings, and they are the facts ansible.builtin.setup gathers with gather_subset=min (compared here
on the converged ct200, all but the clock)."""

import json
import os
import subprocess
import sys

from ..conftest import INVENTORY, ROOT, lab_env, playbook

LAB_READ_ONLY = True  # asserts that its runs changed nothing

COMPARE = """---
- name: The lock's facts and setup's, side by side
  hosts: ct200
  gather_facts: false
  tasks:
    - name: Take the lock with the facts
      blackwell.inference.host_lock:
        facts: true
      register: lock
    - name: Give it back
      blackwell.inference.host_lock:
        state: released
    - name: Gather the minimal facts as the check play does
      ansible.builtin.setup:
        gather_subset: [min]
      register: setup
    - name: Write both
      ansible.builtin.copy:
        content: "{{ {'lock': lock.ansible_facts, 'setup': setup.ansible_facts} | to_json }}"
        dest: "{{ out }}"
        mode: "0600"
      delegate_to: localhost
"""


def test_the_locks_facts_are_setups_minimal_facts(tmp_path):
    play, out = tmp_path / "compare.yml", tmp_path / "facts.json"
    play.write_text(COMPARE)
    argv = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", INVENTORY, str(play), "-e", "out=%s" % out]
    proc = subprocess.run(argv, cwd=ROOT, env=lab_env(), capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:]
    got = json.loads(out.read_text())
    lock, setup = got["lock"], got["setup"]
    assert sorted(lock) == sorted(setup) and lock["ansible_distribution"] == "Debian" and lock["ansible_service_mgr"] == "systemd"
    assert "blackwell_inference" in lock["ansible_local"]  # the service role's local fact, from /etc/ansible/facts.d
    differ = sorted(k for k in lock if lock[k] != setup[k])
    assert differ == ["ansible_date_time"], differ


def test_a_run_on_one_host_makes_no_fact_gathering_call_of_its_own():
    rc, out, recap = playbook()
    assert rc == 0 and recap["changed"] == 0, out[-3000:]
    assert "TASK [Gathering Facts]" not in out and "ansible.builtin.setup" not in out, out[-3000:]
    assert "1 of 1 hosts READY" in out
