# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of blackwell.inference.service_probe: the reading site.yml's lock made with the same options (given
as `reading`) is returned, facts included, without a call to the host, unless `changed_since_reading` says a step since
changed the host (or does not know); otherwise the module reads. Given `validator`,
it also returns the boot validator's files (`validator_paths`): this collection's module_utils the validator imports,
read from the collection itself, as entries of the paths module. Given `plan`, it returns the preflight's plan worked out
from that reading (module_utils/service/plan.py probe_plan) beside it."""

from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.blackwell.inference.plugins.module_utils.service import plan as service_plan
from ansible_collections.blackwell.inference.plugins.plugin_utils import lock_reading

# the options host_lock's read.service is given (module_utils/host/service_read.py PARAMS)
OPTIONS = ("marker", "cuda_home", "jit_dir", "snapshot_store", "unit", "facts", "summary_facts", "health", "observe", "keyed")
# this collection's plugins/ directory; a validator file named ansible_collections/blackwell/inference/plugins/X is X here
PLUGINS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TREE = "ansible_collections/blackwell/inference/plugins/"


def validator_paths(spec):
    """Entries of the paths module for the validator's package tree under spec['root']: spec['dirs'] with
    spec['dir_entry'], spec['files'] with spec['file_entry'] and the text of this collection's file of that name (every __init__.py
    empty), spec['gone'] absent."""
    root = spec["root"].rstrip("/")
    entries = [dict(spec["dir_entry"], path="%s/%s" % (root, d)) for d in spec["dirs"]]
    for name in spec["files"]:
        if os.path.basename(name) == "__init__.py":  # a package's own: empty (ansible-test sanity's empty-init)
            content = ""
        elif name.startswith(TREE):
            with open(os.path.join(PLUGINS, name[len(TREE) :]), encoding="utf-8") as fh:
                content = fh.read()
        else:
            raise AnsibleActionFail("validator: %s is not a file of this collection's plugins" % name)
        entries.append(dict(spec["file_entry"], path="%s/%s" % (root, name), content=content))
    return entries + [{"path": "%s/%s" % (root, name), "state": "absent"} for name in spec.get("gone", ())]


def preflight_plan(reading, options):
    """The service role's preflight plan from the probe's reading (its facts and unit) and the role's variables
    (options: module_utils/service/plan.py probe_plan's, by name). Raises ValueError for a plan they cannot make."""
    return service_plan.probe_plan(reading.get("blackwell_cuda") or {}, unit=reading.get("unit"), **options)


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        validator = self._task.args.pop("validator", None)
        planning = self._task.args.pop("plan", None)
        if not lock_reading.unchanged_since(self._task.args.pop("changed_since_reading", None)):
            self._task.args.pop("reading", None)  # the host changed since the lock read it: the module reads
        result.update(lock_reading.run(self, "blackwell.inference.service_probe", lambda args: {k: args.get(k) for k in OPTIONS}, task_vars))
        if validator:
            result["validator_paths"] = validator_paths(validator)
        if planning is not None and not result.get("failed"):
            try:
                result["plan"] = preflight_plan(result, planning)
            except ValueError as exc:  # e.g. sglang_service_environment sets a key the plan derives
                return dict(result, failed=True, msg=str(exc))
            # an open port with no key (issue 58 item 6): a warning on every run, unless the role refuses it (facts.yml)
            if result["plan"]["exposure"] and not result["plan"]["exposure_refusal"]:
                name = (task_vars or {}).get("inventory_hostname", "?")
                result.setdefault("warnings", []).append("%s: %s.service: %s" % (name, planning.get("name"), result["plan"]["exposure"]))
        return result
