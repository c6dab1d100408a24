"""The progress callback in a real ansible-playbook run on this controller: a step that takes a while says up front
what it waits for and then prints a line per interval while it runs, per host; a quick step prints nothing; a JSON
stdout run stays JSON. (The roles' long steps carry their *_waits_for variables: the apt install, the pip builds,
the JIT smoke and re-warm, the health waits.)"""

import json
import os
import re
import subprocess
import sys

import yaml

from .conftest import BIN, ROOT

LOCAL = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
LONG_STEP = {"ct201": 'sleep 1.2; touch "$1"', "ct200": 'until [ -e "$1" ]; do sleep 0.1; done; sleep 5'}
PLAY = [
    {
        "name": "Steps",
        "hosts": "inference",
        "gather_facts": False,
        "tasks": [
            {"name": "A quick step", "ansible.builtin.command": {"argv": ["true"]}, "changed_when": False},
            {
                "name": "A long step",
                "vars": {"__lab_waits_for": "sleep: the test's stand-in for a build"},
                # ct201 sleeps 1.2 s; ct200 runs until ct201's sleep is over, then 3 s more: it outlasts ct201 however
                # slow the machine is to start either
                "ansible.builtin.command": {"argv": ["sh", "-c", "{{ long_step }}", "step", "{{ playbook_dir }}/ct201.done"]},
                "changed_when": False,
            },
        ],
    }
]


def run(tmp_path, **env):
    (tmp_path / "site.yml").write_text(yaml.safe_dump(PLAY))
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"inference": {"hosts": {h: dict(LOCAL, long_step=LONG_STEP[h]) for h in ("ct200", "ct201")}}}))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_FORCE_COLOR="0", NO_COLOR="1", **env)
    argv = [os.path.join(BIN, "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "site.yml")]
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    return proc.stdout


def test_a_long_step_says_what_it_waits_for_then_beats_per_host_while_it_runs(tmp_path):
    out = run(tmp_path, BLACKWELL_INFERENCE_HEARTBEAT="2")
    quick = out[out.index("TASK [A quick step]") : out.index("TASK [A long step]")]
    assert "still running" not in quick and "waits for" not in quick, quick
    long = out[out.index("TASK [A long step]") : out.index("PLAY RECAP")]
    assert "  A long step: waits for sleep: the test's stand-in for a build (a line every 2s while it runs)" in long, long
    beats = re.findall(r"^  still running on (ct20[01]): A long step \((\d+)s\) - sleep: the test's stand-in for a build$", long, re.M)
    # ct200 runs at least 5 s after ct201's step ended: a line about every 2 s while it runs, its seconds counting
    # up (on a loaded machine a tick comes late, never early); ct201: fewer lines, none once it answered
    ct200 = [int(s) for h, s in beats if h == "ct200"]
    assert len(ct200) >= 2 and ct200[0] >= 2 and ct200 == sorted(set(ct200)), long
    assert len([h for h, _s in beats if h == "ct201"]) < len(ct200), long
    assert long.index("ok: [ct201]") < long.index("ok: [ct200]")
    assert not re.search(r"still running on ct201.*\n(?:.*\n)*?.*ok: \[ct200\]", long.split("ok: [ct201]", 1)[1]), long


def test_off_at_zero_and_quiet_under_a_json_stdout_callback(tmp_path):
    out = run(tmp_path, BLACKWELL_INFERENCE_HEARTBEAT="0")
    assert "still running" not in out and "waits for" not in out, out
    out = run(tmp_path, BLACKWELL_INFERENCE_HEARTBEAT="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json")
    doc = json.loads(out)
    assert [t["task"]["name"] for t in doc["plays"][0]["tasks"]] == ["A quick step", "A long step"]


SHARED = [
    {"name": "{{ __step_name }}", "ansible.builtin.command": {"argv": ["sleep", "3"]}, "changed_when": False},
    {"name": "Keep its result", "vars": {"__lab_waits_for": ""}, "ansible.builtin.debug": {"msg": "kept"}},
]


def test_a_shared_task_file_takes_its_name_and_note_from_the_import(tmp_path):
    """The roles' smoke and health check are one task file each, imported with the name and the note of each use."""
    (tmp_path / "step.yml").write_text(yaml.safe_dump(SHARED))
    imported = {"name": "Import", "ansible.builtin.import_tasks": "step.yml"}
    imported["vars"] = {"__step_name": "The imported step", "__lab_waits_for": "sleep: what this use waits for"}
    PLAY[0]["tasks"].append(imported)
    try:
        out = run(tmp_path, BLACKWELL_INFERENCE_HEARTBEAT="1")
    finally:
        PLAY[0]["tasks"].pop()
    step = out[out.index("TASK [The imported step]") : out.index("TASK [Keep its result]")]
    assert "  The imported step: waits for sleep: what this use waits for (a line every 1s while it runs)" in step, step
    assert re.search(r"^  still running on ct20[01]: The imported step \(\d+s\) - sleep: what this use waits for$", step, re.M), step
    kept = out[out.index("TASK [Keep its result]") : out.index("PLAY RECAP")]
    assert "waits for" not in kept and "still running" not in kept, kept
