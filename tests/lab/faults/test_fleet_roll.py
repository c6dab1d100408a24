"""A fleet of three lab hosts, each its own machine booted from the converged image (tests/lab/fleet.py), rolled
by site.yml one host at a time as `ops` with sudo, with a change every host would take (a service variable):

- a wrong variable on the last host is refused by the check play before the first batch: no host is changed;
- the middle host's CUDA 13.0 lost its curand headers (FlashInfer's sampling JIT needs them): the first host is
  converged and serving the change, the broken one fails with its reason and keeps serving its old state, the third
  is never reached and keeps serving its old state; the end-of-run summary says so line by line, and its JSON too."""

import json
import os
import re
import subprocess
import sys
import urllib.request

import pytest
import testinfra

from .. import fleet as lab_fleet
from .. import images
from ..conftest import LAB_DIR, LAB_INDEX, LAB_SUITE, ROOT, lab_env, wait_for_health, wait_for_the_ready_unit

DROPIN = "/etc/systemd/system/sglang-k26.service.d/50-blackwell-inference.conf"
CURAND = "/usr/local/cuda-13.0/targets/x86_64-linux/include"
STATE = "md5sum %s /etc/ansible/facts.d/*.fact; systemctl show -p MainPID -p ActiveState sglang-k26; readlink /opt/sglang/current" % DROPIN
CHANGE = {"sglang_service_environment": {"FLEET_ROLL": "1"}}


def health(idx):
    with urllib.request.urlopen("http://10.251.%d.2:30000/health" % idx, timeout=10) as resp:  # noqa: S310 - the lab's own veth
        return resp.status


@pytest.fixture(scope="module")
def fleet():
    """ct200 (this session's lab host) and ct201, ct202 from the same converged image; removed again afterwards."""
    hosts = lab_fleet.members(3, LAB_INDEX)
    lab_fleet.up(hosts, images.name("converged"), LAB_SUITE, env=lab_env())
    try:
        for name, idx in hosts:
            wait_for_health(idx)
            wait_for_the_ready_unit(host=name, ssh_config=os.path.join(LAB_DIR, "ssh_config." + name))  # the marker settled
        yield hosts
    finally:
        assert lab_fleet.down(hosts, env=lab_env()) == "", "a fleet host left something behind"


def on(name):
    host = testinfra.get_host("ssh://" + name, ssh_config=os.path.join(LAB_DIR, "ssh_config." + name))

    def _run(cmd):
        res = host.run(cmd)
        assert res.rc == 0, "%s: %s -> rc=%s\n%s\n%s" % (name, cmd, res.rc, res.stdout, res.stderr)
        return res.stdout

    return _run


def roll(tmp_path, hosts, host_vars=None):
    inv = lab_fleet.inventory(str(tmp_path / "fleet" / "hosts.yml"), hosts, LAB_DIR, user="ops", host_vars=host_vars)
    summary = tmp_path / "fleet.json"
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", inv, "site.yml", "-e", json.dumps(CHANGE)]
    cmd += ["-e", "blackwell_inference_summary_json=%s" % summary]
    proc = subprocess.run(cmd, cwd=ROOT, env=lab_env(), capture_output=True, text=True, check=False)
    out = proc.stdout + proc.stderr
    table = out[out.index("BLACKWELL INFERENCE FLEET SUMMARY") :].splitlines() if "BLACKWELL INFERENCE FLEET SUMMARY" in out else []
    lines = {line.split()[0]: line for line in table if re.match(r"ct20\d ", line)}
    return proc.returncode, out, lines, json.loads(summary.read_text())


def test_a_wrong_variable_on_one_host_stops_the_run_before_any_host_changes(fleet, tmp_path):
    before = {name: on(name)(STATE) for name, _idx in fleet}
    rc, out, lines, doc = roll(tmp_path, fleet, host_vars={"ct202": {"sglang_service_port": 0}})
    assert rc == 2, out[-4000:]
    assert "PLAY [Check every host before the first batch]" in out and "PLAY [Provision Blackwell inference hosts]" not in out, out[-4000:]
    assert re.search(r"fatal: \[ct202\]: FAILED!.*sglang_service_port: 1-65535 \(got 0\)", out), out[-4000:]
    assert not re.search(r"fatal: \[ct20[01]\]", out), out[-4000:]
    assert set(lines) == {"ct200", "ct201", "ct202"}, out[-3000:]
    assert re.search(r"  NOT READY +failed at '[^']*Check the variables [^']*': Refused before any change\. sglang_service_port: 1-65535", lines["ct202"])
    for name in ("ct200", "ct201"):
        assert re.search(r"  NOT RUN +the roll stopped before its batch \(after ct202\)$", lines[name]), lines[name]
    assert {h["host"]: h["status"] for h in doc["rows"]} == {"ct200": "NOT RUN", "ct201": "NOT RUN", "ct202": "NOT READY"}
    assert {name: on(name)(STATE) for name, _idx in fleet} == before
    print("refused in the check play; no host changed:\n" + "\n".join(lines.values()))


def test_the_roll_converges_the_first_host_stops_at_the_broken_one_and_never_reaches_the_third(fleet, tmp_path):
    before = {name: on(name)(STATE) for name, _idx in fleet}
    ct201 = on("ct201")
    ct201("mkdir -p /root/curand.moved && mv %s/curand*.h /root/curand.moved/" % CURAND)
    assert ct201("ls /usr/local/cuda-13.0/include/ | grep -c '^curand' || true").strip() == "0"  # the fault hit
    assert "release 13.0" in ct201("/usr/local/cuda-13.0/bin/nvcc --version")  # nvcc itself still answers

    rc, out, lines, doc = roll(tmp_path, fleet)
    assert rc == 2, out[-4000:]
    assert set(lines) == {"ct200", "ct201", "ct202"}, out[-3000:]
    # ct200: converged with the change, restarted, answering
    assert re.search(r"  READY +", lines["ct200"]), lines["ct200"]
    assert "FLEET_ROLL=1" in on("ct200")("cat %s" % DROPIN)
    assert on("ct200")(STATE) != before["ct200"] and health(fleet[0][1]) == 200
    # ct201: failed with its reason; the service still serves its old state (never restarted, drop-in unchanged)
    assert re.search(r"  NOT READY +failed at \"[^\"]*Each toolkit wanted is there[^\"]*\": .*curand headers: False", lines["ct201"]), lines["ct201"]
    assert ct201(STATE) == before["ct201"] and health(fleet[1][1]) == 200
    # ct202: the roll stopped before its batch; untouched and serving
    assert re.search(r"  NOT RUN +the roll stopped before its batch \(after ct201\)$", lines["ct202"]), lines["ct202"]
    assert on("ct202")(STATE) == before["ct202"] and health(fleet[2][1]) == 200
    assert not re.search(r"(ok|changed|skipping|fatal): \[ct202\]", out.split("PLAY [Provision Blackwell inference hosts]", 1)[1]), out[-4000:]
    assert [(h["host"], h["status"], h["ready"]) for h in doc["rows"]] == [
        ("ct200", "READY", True),
        ("ct201", "NOT READY", False),
        ("ct202", "NOT RUN", False),
    ]
    print("\n".join(lines[h] for h in ("ct200", "ct201", "ct202")))
