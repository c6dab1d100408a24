# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""blackwell.inference.service_ready, on the controller: the sglang_service role's judgements of what its tasks found,
one step per call (module_utils/service/ready.py, plan.py and settings.py decide; this file only passes them on).
Only the fingerprint step may ask the host: it reads the fingerprinted files (service_snapshot, state=inspect) when
neither this run's unit files call nor the preflight's reading says what they hold."""

from __future__ import annotations

import datetime
import json

from ansible.plugins.action import ActionBase

from ansible_collections.blackwell.inference.plugins.module_utils.common import paths
from ansible_collections.blackwell.inference.plugins.module_utils.service import plan, ready, settings
from ansible_collections.blackwell.inference.plugins.modules.service_ready import ARGUMENT_SPEC

# what this run changed that makes the service be validated again (ready.py revalidation)
REVALIDATION = ("toolkit_installed", "venv_switched", "units_changed", "runtime_changed")


def settings_entry(path, document):
    """The boot validator's settings file as the paths module writes it: root's alone (its units run as root), the JSON
    as ansible.builtin.to_nice_json renders it."""
    content = json.dumps(document, indent=4, sort_keys=True, separators=(",", ": ")) + "\n"
    return {"path": path, "state": "file", "content": content, "owner": "root", "group": "root", "mode": "0600"}


def now():
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        # the module's documented options, checked and given their defaults (a wrong one fails the task, naming it)
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        step = args.pop("step")
        try:
            result.update(getattr(self, "_" + step)(args, task_vars or {}))
        except ValueError as exc:
            return dict(result, failed=True, msg=str(exc))
        result.setdefault("changed", False)
        return result

    def _fingerprint(self, a, task_vars):
        """What a validation vouches for, its digest, whether this host needs one and why this run validates, and the
        boot validator's settings that carry them (and whether writing them would change the file the preflight saw)."""
        files = list(a.get("files") or [])
        checksums = plan.fingerprint_checksums(files, a.get("written"), a.get("observed"), bool(a.get("reread")))
        read = checksums is None
        if read:
            got = self._execute_module(
                module_name="blackwell.inference.service_snapshot",
                module_args={"store": a.get("store"), "keyed": a.get("keyed"), "files": files, "state": "inspect"},
                task_vars=task_vars,
            )
            if got.get("failed"):
                return dict(got, msg="reading the service's files for the fingerprint: %s" % got.get("msg", "failed"))
            checksums = got.get("checksums")
        out = plan.fingerprint(
            a.get("marker"), a.get("facts"), a.get("cuda_home"), a.get("env"), a.get("venv_target"), a.get("archs"), checksums, a.get("policy"), a.get("look")
        )
        out["read"] = read
        # why this run validates again ('' for no reason); never while another file of the unit overrides what the role
        # set (`foreign`: the summary names that file)
        out["why"] = ready.revalidation(out["need"], **{k: bool(a.get(k)) for k in REVALIDATION})
        out["revalidate"] = out["why"] != "" and a.get("foreign") is None
        # confirmed instead (tasks/confirm.yml): nothing of this run asks for a validation, and nothing overrides the role
        out["resume"] = bool(out["need"].get("resume")) and out["why"] == "" and a.get("foreign") is None
        document = a.get("settings")
        if document is not None:
            entry = settings_entry(a.get("settings_path"), dict(document, inputs=out["digest"], vouched=out["inputs"]))
            out["settings_paths"] = [entry]
            out["settings_pending"] = len(paths.pending([entry], dict(a.get("observed") or {}))) > 0
        return out

    def _verdict(self, a, task_vars):
        """The smoke's verdict: {ready, reason}."""
        return ready.smoke_verdict(a.get("smoke"), a.get("ready_without_launch"))

    def _marker(self, a, task_vars):
        """The ready marker the phase writes (module_utils/service/ready.py next_marker), None when it leaves it as it is."""
        phase = a.get("phase")
        state = None if phase == "overridden" else a.get("state")
        return {"marker": ready.next_marker(a.get("previous"), phase, a.get("reason"), now(), state)}

    def _last_good(self, a, task_vars):
        """The JIT modules and user of the last good state a rollback puts back (settings.py last_good_policy)."""
        return settings.last_good_policy(a.get("settings"), a.get("marker"), a.get("warm"), a.get("user"))

    def _rollback(self, a, task_vars):
        """What the rollback says when it is over: {note, errors, reason, msg} (settings.py rollback_outcome)."""
        keys = ("cause", "host", "marker_path", "unit", "restart", "restarted", "venv", "venv_back", "reload", "start", "stop", "rewarm", "health_back")
        return settings.rollback_outcome(a.get("restore"), **{k: a.get(k) for k in keys})

    def _files(self, a, task_vars):
        """Which of the role's paths this run writes, and whether its account and units phase has work (plan.py files)."""
        if a.get("paths") is None or a.get("mode") is None:
            raise ValueError("step files needs paths and mode")
        return plan.files(a.get("plan") or {}, a.get("probe"), a.get("paths"), a.get("mode"), a.get("has_secrets"), a.get("boot_validation"), a.get("check"))
