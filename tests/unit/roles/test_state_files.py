"""The sglang_service role's last good state covers the unit's path in both modes (issue 47): a failed switch from dropin
to unit mode takes the role's new unit away again (or puts the site's own unit back) when the rollback restores the
snapshot saved in dropin mode. The role's paths are rendered from vars/main.yml, the files each mode keeps picked by
module_utils/service/plan.py state_files (the probe's plan), the restore planned by module_utils/service/snapshot.py."""

import os

import pytest
import yaml
from jinja2.nativetypes import NativeEnvironment

from ansible_collections.blackwell.inference.plugins.module_utils.service import plan
from ansible_collections.blackwell.inference.plugins.module_utils.service import snapshot as snap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
with open(os.path.join(ROOT, "roles", "sglang_service", "vars", "main.yml"), encoding="utf-8") as _fh:
    VARS = yaml.safe_load(_fh)
NEEDED = (
    "__sglang_service_unit_path",
    "__sglang_service_dropin_path",
    "__sglang_service_secrets_path",
    "__sglang_service_ready_unit_path",
    "__sglang_service_validate_config",
    "__sglang_service_validate_unit_path",
    "__sglang_service_role_files",
)


def role_vars(mode, name="sglang-k26"):
    env = NativeEnvironment()
    got = {"sglang_service_mode": mode, "sglang_service_name": name}
    for key in NEEDED[:-1]:  # each refers only to those before it
        got[key] = env.from_string(VARS[key]).render(**got)
    got["__sglang_service_role_files"] = {k: env.from_string(v).render(**got) for k, v in VARS["__sglang_service_role_files"].items()}
    files = plan.state_files(got["__sglang_service_role_files"], mode)  # the probe's plan
    got["__sglang_service_fingerprinted_files"], got["__sglang_service_state_files"] = files["fingerprinted"], files["state"]
    return got


@pytest.mark.parametrize("mode", ["dropin", "unit"])
def test_the_state_files_hold_the_unit_path_in_both_modes(mode):
    v = role_vars(mode)
    assert v["__sglang_service_unit_path"] == "/etc/systemd/system/sglang-k26.service"
    assert v["__sglang_service_state_files"].count(v["__sglang_service_unit_path"]) == 1
    assert (v["__sglang_service_unit_path"] in v["__sglang_service_fingerprinted_files"]) == (mode == "unit")  # unchanged


@pytest.mark.parametrize("site_unit", [False, True])
def test_a_failed_switch_from_dropin_to_unit_mode_does_not_keep_the_new_unit(site_unit):
    dropin, unit = role_vars("dropin"), role_vars("unit")
    path = unit["__sglang_service_unit_path"]
    # the host in dropin mode: the site's own unit under /etc (or none there: it lives in /lib)
    before = {p: snap.entry(True, "a" * 64, 0o644, 0, 0) for p in unit["__sglang_service_state_files"] + dropin["__sglang_service_state_files"]}
    before[path] = snap.entry(True, "5" * 64, 0o644, 0, 0) if site_unit else snap.entry(False)
    # the last good state, saved in dropin mode with that mode's state files
    good = {"files": {p: before[p] for p in dropin["__sglang_service_state_files"]}, "link": None}
    # the switch wrote the role's own unit there, then failed: the rollback reads the unit mode's state files
    after = dict(before, **{path: snap.entry(True, "b" * 64, 0o644, 0, 0)})
    now = {"files": {p: after[p] for p in unit["__sglang_service_state_files"]}, "link": None}
    expected = [("write", path, before[path])] if site_unit else [("remove", path, None)]
    assert snap.restore_plan(now, good) == expected
