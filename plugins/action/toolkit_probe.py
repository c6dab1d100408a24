# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of blackwell.inference.toolkit_probe: the reading site.yml's lock made with the same options (given
as `reading`) is returned without a call to the host (its facts are already the lock task's); otherwise the module
reads. With `plan`, the role's plan worked out from that reading is returned beside it (module_utils/cuda/plan.py
role_plan)."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.blackwell.inference.plugins.module_utils.common import secrets
from ansible_collections.blackwell.inference.plugins.module_utils.cuda import plan as cuda_plan
from ansible_collections.blackwell.inference.plugins.plugin_utils import lock_reading

# the options host_lock's read.toolkit is given (the cuda_toolkit role's cuda_toolkit_read_options)
OPTIONS = ("nvidia_smi", "toolkit_root", "method", "packages", "apt_sources", "compile_record", "links", "apt_repo", "apt_access")


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        options = self._task.args.pop("plan", None)
        if options is not None:
            # the releases and pins the plan cannot make are refused before the host is read
            try:
                cuda_plan.released(options.get("versions"), options.get("components"), options.get("releases") or {}, options.get("package_versions"))
            except cuda_plan.PlanError as exc:
                return dict(result, failed=True, msg=str(exc))
        result.update(lock_reading.run(self, "blackwell.inference.toolkit_probe", lambda args: {k: args[k] for k in OPTIONS if k in args}, task_vars))
        if options is not None and not result.get("failed"):
            failed = self._auth_matches(result, options, task_vars)
            if failed:
                return dict(result, failed=True, msg=failed)
            result["plan"] = cuda_plan.role_plan(result, (task_vars or {}).get("ansible_facts") or {}, options)
        return result

    def _auth_matches(self, result, options, task_vars):
        """apt's logins file there while the role has logins to write: whether it holds them (secret_file's state
        checked, on the host: the reading carries no text nor digest of a secret), as apt_access.auth_matches. Returns
        why that could not be asked ('' when it was, or did not need to be)."""
        access = result.get("apt_access")
        urls = cuda_plan.apt_logins_urls(options)
        if not (access and (access.get("auth") or {}).get("exists") and secrets.apt_logins(urls)):
            return ""
        path = (self._task.args.get("apt_access") or {}).get("auth")
        got = self._execute_module(
            module_name="blackwell.inference.secret_file", module_args={"path": path, "logins": urls, "state": "checked"}, task_vars=task_vars
        )
        if got.get("failed"):
            return "cannot compare apt's logins file %s with the role's: %s" % (path, got.get("msg"))
        result["apt_access"] = dict(access, auth_matches=bool(got.get("matches")))
        return ""
