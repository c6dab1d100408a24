# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The end-of-run table across hosts (the fleet_summary callback renders it; the decisions are here).

One row per host the play was aimed at, from what the run saw of it: the last `blackwell_cuda` facts
(cuda_facts), the service role's `sglang_service_summary`, its last failed task, or that it was unreachable
or never reached (the roll stopped before its batch).
"""

from __future__ import annotations

from ansible_collections.blackwell.inference.plugins.module_utils.common import values
from ansible_collections.blackwell.inference.plugins.module_utils.common.values import is_true
from ansible_collections.blackwell.inference.plugins.module_utils.service import ready as service_ready

# a host's status: READY / NOT READY are the service's words (module_utils/service/ready.py), the others the run's
READY = service_ready.READY
NOT_READY = service_ready.NOT_READY
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


# the why column's whole cell: the reason, the failed task's message or the journal's causes, each a line of at most
# 300 characters, together at most WHY_LIMIT (a failure's full text is in its task's output and the log it names)
WHY_LIMIT = 400


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
        res.update(status=service_ready.word(ready), ready=ready, why=why)
    else:
        res.update(status=NOT_READY, why="no service summary (the tags chosen skip it, or check mode)")
    res["why"] = _one_line(res.get("why"), WHY_LIMIT)
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


def _or(value, fallback):
    """Jinja's default(fallback, true): the fallback for a missing or empty value."""
    return value if value else fallback


def _join(items, sep=" "):
    return sep.join(str(v) for v in items or [])


_COMMAND_SOURCES = {"unit": "the unit's own, interpreter moved to the managed venv", "variables": "from the variables"}


def _smoke(st):
    if not st:
        return "none"
    compile_, launch, warm = st.get("compile") or {}, st.get("launch") or {}, st.get("warm") or {}
    modules = warm.get("modules") or []
    line = "compile %s %s s (%s); launch %s; warm %s %s s" % (
        "ok" if compile_.get("ok", False) else "FAILED",
        compile_.get("seconds", "?"),
        _join(compile_.get("archs") or []),
        ("ok " + str(launch.get("detail", ""))) if launch.get("launched", False) else "skipped: " + str(launch.get("reason", "?")),
        _or(_join(m.get("name") for m in modules), "-"),
        warm.get("seconds", "?"),
    )
    return line + (" (compiled into the cache)" if any(m.get("compiled") for m in modules) else "")


def _service_lines(s):
    sm = s.get("sample")
    if sm and not sm.get("ok"):
        health = "health answering, sampled request FAILED"
    else:
        health = "health " + ("answering" if values.to_int(s.get("health")) == 200 else "not answering (%s)" % s.get("health"))
        health += ", sampled request ok" if sm else ""
    if sm:
        health += " (%s: %s, %s s)" % (sm.get("url"), sm.get("detail"), sm.get("seconds"))
    lines = [
        "service: %s (%s), %s" % (s.get("unit"), s.get("mode"), health),
        "service environment: " + _join("%s=%s" % kv for kv in sorted((s.get("environment") or {}).items()) if kv[0] != "PATH"),
    ]
    command = s.get("command")
    if command is not None:
        lines.append("service command (%s): %s" % (_COMMAND_SOURCES.get(command.get("source"), command.get("source")), _join(command.get("argv"))))
        if "old" in command:
            lines.append("  it replaced the unit's own: " + _join(command["old"]))
    lines.append("smoke (%s): %s" % (s.get("smoke_source"), _smoke(s.get("smoke"))))
    last_good = s.get("last_good")
    lines.append(
        "state: %s%s"
        % (s.get("state"), " (last good state: %s of %s)" % (last_good.get("venv"), last_good.get("time")) if last_good else " (no last good state)")
    )
    lines.append("%s: %s" % (service_ready.word(s.get("ready")), s.get("reason")))
    for cause in s.get("causes") or []:
        lines.append(
            "why the service fails (%s): %s (journal: %s); fix: %s"
            % (
                "the run systemd restarted it from" if cause.get("run", "") == "previous" else "its journal since its last start",
                cause.get("cause"),
                cause.get("line"),
                cause.get("fix"),
            )
        )
    return lines


def host_lines(host, cuda, summaries):
    """The per-host summary site.yml prints, line by line: the GPUs, driver, toolkits, /usr/local/cuda, the venv,
    FlashInfer's view and verdict (cuda: blackwell_cuda of the service's environment, with every FlashInfer service on
    the host), then each managed service (summaries: sglang_service_summaries)."""
    c = cuda or {}
    fi, driver, gpus_ = c.get("flashinfer") or {}, c.get("driver") or {}, c.get("gpus") or []
    lines = ["host: %s" % host]
    if gpus_:
        for cc in c.get("compute_capabilities") or []:
            same = [g for g in gpus_ if g.get("compute_capability") == cc]
            lines.append("gpus: %dx %s (CC %s)" % (len(same), same[0].get("name") if same else "?", cc))
    else:
        lines.append("gpus: none (%s)" % _or(driver.get("error"), "no GPU"))
    lines.append(
        "driver: %s (CUDA <= %s, open kernel module: %s)"
        % (_or(driver.get("version"), "-"), _or(driver.get("cuda_version"), "?"), _or(driver.get("open_kernel_module"), "unknown"))
    )
    toolkits = [
        "%s (%s%s)"
        % (
            t.get("path"),
            _or(t.get("version"), "nvcc: %s" % t.get("nvcc_error")),
            "" if t.get("has_curand_headers") and t.get("has_driver_stubs") else ", not JIT-ready",
        )
        for t in c.get("toolkits") or []
    ]
    lines.append("toolkits: " + (", ".join(toolkits) or "none"))
    default = c.get("default_toolkit")
    lines.append("/usr/local/cuda: %s" % (default.get("path") if default else "absent"))
    venv = c.get("venv")
    lines.append("venv: " + ("%s %s" % (venv.get("path"), _join("%s=%s" % kv for kv in sorted((venv.get("packages") or {}).items()))) if venv else "not given"))
    lines.append(
        "flashinfer %s: CUDA %s from %s (home %s via %s), archs %s"
        % (
            _or(fi.get("version"), "-"),
            _or(fi.get("cuda_version"), "?"),
            _or(fi.get("cuda_version_source"), "?"),
            _or(fi.get("cuda_home"), "?"),
            _or(fi.get("cuda_home_source"), "?"),
            _or(_join(fi.get("target_archs")), "none"),
        )
    )
    lines.append("verdict: " + ("ACCEPTED" if fi.get("accepted") else "REFUSED: %s" % fi.get("error")))
    if fi.get("symptom"):
        lines.append("the service would fail with: %s" % fi["symptom"])
    for u in c.get("services") or []:
        workers = " (SGLang's workers: %s)" % _join(u.get("worker_archs")) if u.get("sglang") and u.get("worker_archs") else ""
        lines.append(
            "flashinfer service %s (%s%s): %s, flashinfer %s%s, CUDA %s (home %s), archs %s%s: %s%s%s"
            % (
                u.get("unit"),
                u.get("active"),
                ", this role's" if u.get("managed") else "",
                u.get("venv"),
                u.get("flashinfer"),
                " sglang %s" % u["sglang"] if u.get("sglang") else "",
                _or(u.get("cuda_version"), "?"),
                _or(u.get("cuda_home"), "?"),
                _or(_join(u.get("target_archs")), "none"),
                workers,
                "ACCEPTED" if u.get("accepted") else "REFUSED: %s" % u.get("error"),
                "; but %s" % u["cold_jit"] if u.get("cold_jit") else "",
                "; it would fail with: %s" % u["symptom"] if u.get("symptom") and not u.get("accepted") else "",
            )
        )
    for s in summaries or []:
        lines.extend(_service_lines(s))
    return [line for line in lines if line]
