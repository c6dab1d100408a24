# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: fleet_summary
type: aggregate
version_added: 0.3.0
short_description: One table across hosts at the end of a run, also written as JSON
description:
  - At the end of a playbook run, prints one line per host the plays were aimed at - GPUs, the CUDA FlashInfer
    uses in the service's environment, FlashInfer's verdict, the service, and READY / NOT READY / UNREACHABLE /
    NOT RUN with the reason.
  - A host's row comes from what the run saw of it - the last C(blackwell_cuda) facts, the service role's
    C(sglang_service_summary), the task that failed it, or the connection error. A host in a batch the roll never
    reached (a failed batch stops a serial play; a host refused by site.yml's check play stops the run before the
    first batch) is listed as NOT RUN, with the host that stopped it.
  - Prints nothing for a run that touched none of this collection's facts, unless a JSON path is given, and nothing
    for an ad-hoc C(ansible) command or under a JSON stdout callback (whose output must stay JSON); the JSON file is
    still written when a path is given.
  - Enable it in C(ansible.cfg) with C(callbacks_enabled = blackwell.inference.fleet_summary).
requirements:
  - enabled in C(callbacks_enabled)
extends_documentation_fragment:
  - blackwell.inference.stdout_callback
options:
  json_path:
    description:
      - Write the table as JSON to this path on the controller (a dashboard or a drain script reads it). The extra
        variable C(blackwell_inference_summary_json) (C(-e)) takes precedence.
    type: path
    env:
      - name: BLACKWELL_INFERENCE_SUMMARY_JSON
    ini:
      - section: blackwell_inference
        key: summary_json
"""

import datetime
import json
import os

from ansible.plugins.callback import CallbackBase

from ansible_collections.blackwell.inference.plugins.module_utils.common import files
from ansible_collections.blackwell.inference.plugins.module_utils.fleet import summary as fleet_summary


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "blackwell.inference.fleet_summary"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._hosts = []  # every host a play was aimed at, in the play's order
        self._cuda = {}
        self._summary = {}
        self._failures = {}
        self._unreachable = {}
        self._failed_items = {}  # host -> the first failed item of the loop it runs now
        self._reached = set()  # hosts with a result in a play that changes them (not site.yml's check play)
        self._checking = False
        self._extra_path = None
        self._playbook = None
        self._started = self._now()

    @staticmethod
    def _now():
        return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def v2_playbook_on_start(self, playbook):
        self._playbook = getattr(playbook, "_file_name", None)

    def _quiet(self):
        """An ad-hoc command, or a stdout callback whose output is machine-read: no table on stdout."""
        return fleet_summary.quiet(self._playbook, self.get_option("stdout_callback"))

    def v2_playbook_on_play_start(self, play):
        # site.yml's read-only check play reaches every host; a host counts as reached once the roll got to it
        self._checking = bool((getattr(play, "vars", None) or {}).get("__blackwell_inference_check_play"))
        manager = play.get_variable_manager()
        extra = manager.extra_vars or {}
        if extra.get("blackwell_inference_summary_json"):
            self._extra_path = str(extra["blackwell_inference_summary_json"])
        # every host of the play, not only this batch (ansible_play_hosts_all: a serial play runs one batch at a time)
        for name in manager.get_vars(play=play, include_hostvars=False).get("ansible_play_hosts_all") or []:
            if name not in self._hosts:
                self._hosts.append(name)

    def _seen(self, result):
        """The result's host, counted as reached; a host runs one task at a time, so its result ends the loop whose
        failed items were kept for it."""
        host = result.host.get_name()
        if not self._checking:
            self._reached.add(host)
        if host not in self._hosts:
            self._hosts.append(host)
        return host, self._failed_items.pop(host, None)

    def v2_runner_on_ok(self, result):
        host, _item = self._seen(result)
        facts = result.result.get("ansible_facts") or {}
        if isinstance(facts.get("blackwell_cuda"), dict):
            self._cuda[host] = facts["blackwell_cuda"]
        if isinstance(facts.get("sglang_service_summary"), dict):
            self._summary[host] = facts["sglang_service_summary"]

    def v2_runner_on_failed(self, result, ignore_errors=False):
        host, item = self._seen(result)
        if not ignore_errors:
            self._failures[host] = (result.task.get_name(), fleet_summary.failure_message(result.result, item))

    def v2_runner_item_on_failed(self, result):
        # the first failed item of a loop says why (the loop's own message is only "One or more items failed")
        self._failed_items.setdefault(result.host.get_name(), fleet_summary.item_failure(result.result))

    def v2_runner_on_skipped(self, result):
        self._seen(result)

    def v2_runner_on_unreachable(self, result):
        host, _item = self._seen(result)
        self._unreachable[host] = result.result.get("msg") or "unreachable"

    def v2_playbook_on_stats(self, stats):
        path = self._extra_path or self.get_option("json_path")
        if not (self._cuda or self._summary or path):
            return
        counts = {host: stats.summarize(host) for host in self._hosts}
        # a failure counts when it failed the host (not ignored, not rescued: the stats say so)
        failed = {h: self._failures.get(h, ("?", "failed")) for h in self._hosts if counts[h].get("failures")}
        unreachable = {h: self._unreachable.get(h, "unreachable") for h in self._hosts if counts[h].get("unreachable")}
        stopped = None
        if failed or unreachable:
            stopped = "the roll stopped before its batch (after %s)" % ", ".join(h for h in self._hosts if h in failed or h in unreachable)
        rows = [
            fleet_summary.row(
                host,
                cuda=self._cuda.get(host),
                summary=self._summary.get(host),
                failure=failed.get(host),
                unreachable=unreachable.get(host),
                reached=host in self._reached,
                stopped=stopped,
            )
            for host in self._hosts
        ]
        quiet = self._quiet()
        if not quiet:
            self._display.banner("BLACKWELL INFERENCE FLEET SUMMARY")
            for line in fleet_summary.table(rows):
                self._display.display(line)
            self._display.display("%d of %d hosts READY" % (sum(1 for r in rows if r["ready"]), len(rows)))
        if path:
            doc = fleet_summary.document(rows, playbook=self._playbook, started=self._started, ended=self._now())
            self._write(os.path.abspath(os.path.expanduser(path)), doc)
            if not quiet:
                self._display.display("fleet summary written to %s" % path)

    def _write(self, path, doc):
        files.write_atomic(path, (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode())
