"""The fleet_summary callback in a real ansible-playbook run on this controller, three hosts rolled one at a time: the
first measured by cuda_facts (the nvidia-smi double) and served, the second unreachable (a closed port), so the
roll stops and the third is never reached. The table says so per host, and the JSON file too.
(On the lab host: tests/lab/faults/test_fleet_roll.py (the README's fleet steps), tests/lab/faults/test_ready_rollback.py.)"""

import json
import os
import re
import subprocess
import sys

import yaml

from .conftest import BIN, NVIDIA_SMI_DOUBLE, ROOT

PLAY = [
    {
        "name": "Roll",
        "hosts": "inference",
        "serial": 1,
        "gather_facts": False,
        "tasks": [
            {
                "name": "Gather blackwell_cuda facts",
                "blackwell.inference.cuda_facts": {
                    "nvidia_smi": NVIDIA_SMI_DOUBLE,
                    "flashinfer_version": "0.7.4",
                    "environment": {"CUDA_HOME": "/usr/local/cuda-13.0"},
                },
            },
            {
                "name": "Summarize the service",  # the shape the service role's verify sets
                "ansible.builtin.set_fact": {
                    "sglang_service_summary": {
                        "unit": "sglang.service",
                        "ready": True,
                        "state": "validated and serving",
                        "reason": "compiled, JIT cache warm (sampling)",
                        "health": 200,
                    }
                },
            },
        ],
    }
]


def roll(tmp_path, hosts, *args, **env):
    """PLAY over `hosts` (the inventory group inference) with the checkout's ansible.cfg; the finished process."""
    (tmp_path / "site.yml").write_text(yaml.safe_dump(PLAY))
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"inference": {"hosts": hosts}}))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_FORCE_COLOR="0", NO_COLOR="1", **env)
    argv = [os.path.join(BIN, "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "site.yml"), *args]
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)


LOCAL = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}


def test_the_table_and_the_json_name_every_host_of_a_stopped_roll(tmp_path):
    gone = {"ansible_host": "127.0.0.1", "ansible_port": 1, "ansible_connection": "ssh", "ansible_user": "nobody"}
    summary = tmp_path / "out" / "fleet.json"
    proc = roll(tmp_path, {"ct200": LOCAL, "ct201": gone, "ct202": LOCAL}, "-e", "blackwell_inference_summary_json=%s" % summary)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4, out[-3000:]  # unreachable: the roll stopped at ct201's batch
    table = out[out.index("BLACKWELL INFERENCE FLEET SUMMARY") :].splitlines()
    lines = {line.split()[0]: line for line in table if line.startswith("ct20")}
    assert set(lines) == {"ct200", "ct201", "ct202"}, table
    assert "8x NVIDIA RTX PRO 6000 Blackwell Server Edition (CC 12.0)" in lines["ct200"] and re.search(
        r"  READY +compiled, JIT cache warm \(sampling\)$", lines["ct200"]
    )
    assert "UNREACHABLE" in lines["ct201"] and "port 1" in lines["ct201"]
    assert "NOT RUN" in lines["ct202"] and "the roll stopped before its batch (after ct201)" in lines["ct202"]
    assert "1 of 3 hosts READY" in out and "fleet summary written to %s" % summary in out
    doc = json.loads(summary.read_text())
    assert doc["hosts"] == 3 and doc["ready"] == 1 and doc["counts"] == {"READY": 1, "UNREACHABLE": 1, "NOT RUN": 1}
    rows = {r["host"]: r for r in doc["rows"]}
    assert rows["ct200"]["ready"] is True and rows["ct200"]["flashinfer"].startswith("0.7.4 ACCEPTED")
    assert rows["ct202"]["status"] == "NOT RUN" and doc["playbook"].endswith("site.yml")


def test_under_a_json_stdout_callback_the_output_stays_json_and_the_file_is_still_written(tmp_path):
    summary = tmp_path / "fleet.json"
    proc = roll(tmp_path, {"ct200": LOCAL}, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json", BLACKWELL_INFERENCE_SUMMARY_JSON=str(summary))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert json.loads(proc.stdout)["stats"]["ct200"]["failures"] == 0  # nothing but the JSON on stdout
    doc = json.loads(summary.read_text())
    assert doc["ready"] == 1 and doc["rows"][0]["status"] == "READY"
