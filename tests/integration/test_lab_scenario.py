"""The ct200 lab scenario end to end (`molecule test`), then proof that destroy left nothing behind."""

import os
import re
import subprocess

from .conftest import BIN, CACHE, ROOT

LABCTL = os.path.join(ROOT, "tests", "fixtures", "lab", "labctl.sh")


def test_molecule_scenario_then_nothing_left_behind(tmp_path):
    env = dict(os.environ)
    env.setdefault("ANSIBLE_COLLECTIONS_PATH", os.path.join(ROOT, ".collections"))
    env.setdefault("LAB_DIR", os.path.join(CACHE, "lab"))
    env.pop("ANSIBLE_CONFIG", None)  # molecule writes its own
    log = tmp_path / "molecule.log"
    with open(log, "w") as fh:
        proc = subprocess.run([os.path.join(BIN, "molecule"), "test"], cwd=ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT, check=False)
    text = re.sub(r"\x1b\[[0-9;]*m", "", log.read_text())
    assert proc.returncode == 0, text[-6000:]
    for step in ("create", "prepare", "side_effect", "check", "converge", "idempotence", "verify", "destroy"):
        assert "default ➜ %s: Executed: Successful" % step in text, step
    leftovers = subprocess.run([LABCTL, "leftovers", "ct200", "0"], env=env, capture_output=True, text=True, check=True).stdout
    assert leftovers == "", "destroy left this behind:\n" + leftovers
    assert subprocess.run(["pgrep", "-f", "systemd-nspawn"], check=False).returncode == 1
