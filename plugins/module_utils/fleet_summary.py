# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The end-of-run table across hosts (the fleet_summary callback renders it; the decisions are here).

One row per host the play was aimed at, from what the run saw of it: the last `blackwell_cuda` facts
(cuda_facts), the service role's `sglang_service_summary`, its last failed task, or that it was unreachable
or never reached (the roll stopped before its batch).
"""

from __future__ import annotations

READY = "READY"
NOT_READY = "NOT READY"
UNREACHABLE = "UNREACHABLE"
NOT_RUN = "NOT RUN"

COLUMNS = (
    ("host", "host"),
    ("gpus", "GPUs"),
    ("toolkit", "toolkit"),
    ("flashinfer", "FlashInfer"),
    ("service", "service"),
    ("status", "status"),
    ("why", "why"),
)


def _one_line(text, limit=300):
    text = " ".join(str(text or "").split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def gpus(cuda):
    """`8x NVIDIA RTX PRO 6000 Blackwell Server Edition (CC 12.0)`; one part per compute capability."""
    if not cuda:
        return "-"
    found = cuda.get("gpus") or []
    if not found:
        return "none (%s)" % ((cuda.get("driver") or {}).get("error") or "no GPU")
    parts = []
    for cc in cuda.get("compute_capabilities") or sorted({g.get("compute_capability") for g in found}):
        same = [g for g in found if g.get("compute_capability") == cc]
        if same:
            parts.append("%dx %s (CC %s)" % (len(same), same[0].get("name", "?"), cc))
    return ", ".join(parts)


def toolkit(cuda):
    """The CUDA FlashInfer uses in the service's environment: `13.0 (/usr/local/cuda-13.0)`."""
    fi = (cuda or {}).get("flashinfer") or {}
    if not fi.get("cuda_version"):
        return "-"
    home = fi.get("cuda_home")
    return "%s (%s)" % (fi["cuda_version"], home) if home else str(fi["cuda_version"])


def flashinfer(cuda):
    fi = (cuda or {}).get("flashinfer") or {}
    if not fi or (fi.get("version") is None and str(fi.get("error") or "").startswith("no venv given")):
        return "-"  # measured without a venv (the toolkit role's facts): nothing to judge
    if fi.get("version") is None and fi.get("error_stage") == "version":
        return "not installed"
    version = fi.get("version") or "?"
    # inside SGLang's workers FlashInfer sees the arch list SGLang set: a refusal there is the service's too
    for worker in ((cuda or {}).get("sglang") or {}).get("workers") or []:
        if fi.get("accepted") and not worker.get("accepted", True):
            return "%s REFUSED in SGLang's workers (CC %s): %s" % (version, worker.get("compute_capability"), _one_line(worker.get("error") or "?"))
    if fi.get("accepted"):
        return "%s ACCEPTED (%s)" % (version, " ".join(fi.get("target_archs") or []) or "no archs")
    return "%s REFUSED: %s" % (version, _one_line(fi.get("error") or "?"))


def service(summary):
    if not summary:
        return "-"
    health, sample = summary.get("health"), summary.get("sample") or {}
    if sample and not sample.get("ok"):  # /health answered, the sampled request did not
        return "%s answering, sampled request failed (%s)" % (summary.get("unit", "?"), sample.get("status"))
    answering = str(health) == "200"
    return "%s %s" % (summary.get("unit", "?"), "answering" if answering else "not answering (%s)" % health)


def refused_services(cuda):
    """The host's other FlashInfer services (not the managed one) that FlashInfer would refuse in their own environment."""
    return [r.get("unit", "?") for r in (cuda or {}).get("services") or [] if not r.get("managed") and not r.get("accepted")]


def is_true(value):
    """A summary's `ready` as set_fact leaves it: a boolean, or its string form."""
    return value is True or str(value).lower() == "true"


def item_failure(result):
    """'<label>: <message>' of one failed loop item (the callback's item result)."""
    msg = result.get("msg") or result.get("stderr") or "failed"
    label = result.get("_ansible_item_label", result.get("item"))
    return "%s: %s" % (label, msg) if isinstance(label, str) and label else str(msg)


def quiet(playbook_file, stdout_callback):
    """Whether a run's stdout is machine-read, so the collection's callbacks print nothing there: an ad-hoc command,
    or a JSON stdout callback."""
    return playbook_file == "__adhoc_playbook__" or str(stdout_callback or "").endswith("json")


def failure_message(result, failed_item=None):
    """Why a task failed, from its result: its message, or for a loop, the first failed item's (Ansible's own message is
    only "One or more items failed"; callbacks get the items' results without their failed flag, so the callback
    passes the first item it saw fail, failed_item)."""
    if failed_item:
        return failed_item
    for item in result.get("results") or []:
        if isinstance(item, dict) and item.get("failed"):
            return item_failure(item)
    return result.get("msg") or result.get("stderr") or result.get("reason") or "failed"


def row(host, cuda=None, summary=None, failure=None, unreachable=None, reached=True, stopped=None):
    """One host's row.

    cuda: its last blackwell_cuda facts; summary: sglang_service_summary; failure: (task name, message) of the
    task that failed the host; unreachable: the connection error; reached: whether the roll got to it (a task ran
    on it outside site.yml's read-only check play);
    stopped: why hosts not reached were not (the roll stopped at a failed batch).
    """
    res = {"host": host, "gpus": gpus(cuda), "toolkit": toolkit(cuda), "flashinfer": flashinfer(cuda), "service": service(summary)}
    res["ready"], res["refused_services"] = False, refused_services(cuda)
    if res["refused_services"]:  # not this host's verdict (READY is the managed service's), but never silent
        res["service"] += "; REFUSED beside it: " + ", ".join(res["refused_services"])
    if unreachable is not None:
        res.update(status=UNREACHABLE, why=_one_line(unreachable) or "unreachable")
    elif failure is not None and (not summary or is_true(summary.get("ready"))):
        # failed before the service role's verdict (or after a ready one): the failed task says why
        res.update(status=NOT_READY, why="failed at %r: %s" % (failure[0], _one_line(failure[1])))
    elif not reached:
        res.update(status=NOT_RUN, why=stopped or "no task ran on it")
    elif summary:
        # the service role's own verdict; a host it found not ready fails the play's last task with that reason
        ready = is_true(summary.get("ready"))
        why = _one_line(summary.get("reason"))
        causes = [c.get("cause") for c in summary.get("causes") or [] if isinstance(c, dict) and c.get("cause")]
        if causes and not ready:  # what the service's journal says it died of
            why += "; journal: " + "; ".join(_one_line(c) for c in causes)
        res.update(status=READY if ready else NOT_READY, ready=ready, why=why)
    else:
        res.update(status=NOT_READY, why="no service summary (the tags chosen skip it, or check mode)")
    return res


def table(rows):
    """A plain-text table, one line per host, columns as wide as their longest cell."""
    cells = [[label for _key, label in COLUMNS]] + [[str(r.get(key, "")) for key, _label in COLUMNS] for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(COLUMNS) - 1)]
    lines = []
    for c in cells:
        lines.append("  ".join([c[i].ljust(widths[i]) for i in range(len(widths))] + [c[-1]]).rstrip())
    return lines


def document(rows, playbook=None, started=None, ended=None):
    """The JSON document written for dashboards and drain scripts."""
    counts = {}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    return {
        "playbook": playbook,
        "started": started,
        "ended": ended,
        "hosts": len(rows),
        "ready": sum(1 for r in rows if r["ready"]),
        "counts": counts,
        "rows": rows,
    }
