"""The ct200 lab scenario end to end (`molecule test`), then proof that destroy left nothing behind.

On its way the scenario saves the lab's images (the before-state after prepare, the converged state in
verify) that the testinfra suites under tests/lab boot from. Each molecule step's time goes to the
stage timings of `make test`."""

import os
import re
import subprocess
import time

from ..conftest import record_timing
from ..lab import images
from .conftest import BIN, CACHE, ROOT

LABCTL = os.path.join(ROOT, "tests", "fixtures", "lab", "labctl.sh")
STEP = re.compile(r"default ➜ (\w+): (Executing|Executed: \w+)")


def test_molecule_scenario_then_nothing_left_behind(tmp_path):
    env = dict(os.environ)
    env.setdefault("ANSIBLE_COLLECTIONS_PATH", os.path.join(ROOT, ".collections"))
    env.setdefault("LAB_DIR", os.path.join(CACHE, "lab"))
    env.pop("ANSIBLE_CONFIG", None)  # molecule writes its own
    lines, started = [], {}
    # the lab suites (tests/lab, on other pytest-xdist workers) wait for the images this run saves
    with (
        images.lock(),
        subprocess.Popen([os.path.join(BIN, "molecule"), "test"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc,
    ):
        for raw in proc.stdout:
            line = re.sub(r"\x1b\[[0-9;]*m", "", raw)
            lines.append(line)
            m = STEP.search(line)
            if m and m.group(2) == "Executing":
                started[m.group(1)] = time.monotonic()
            elif m and m.group(1) in started:
                record_timing("molecule " + m.group(1), time.monotonic() - started.pop(m.group(1)), 0 if m.group(2).endswith("Successful") else 1)
    text = "".join(lines)
    (tmp_path / "molecule.log").write_text(text)
    assert proc.returncode == 0, text[-6000:]
    for step in ("create", "prepare", "side_effect", "check", "converge", "idempotence", "verify", "destroy"):
        assert "default ➜ %s: Executed: Successful" % step in text, step
    leftovers = subprocess.run([LABCTL, "leftovers", "ct200", "0"], env=env, capture_output=True, text=True, check=True).stdout
    assert leftovers == "", "destroy left this behind:\n" + leftovers
