# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""READY, in one place: what a ready service is, and every judgement and word of it.

- the smoke's verdict (verdict), whether a host needs a validation (needs_validation) and why this run validates
  again (revalidation), whether the preflight's look stands for the health check (health_stands);
- the ready marker's content: what a step of the play writes (next_marker, marker, overridden) and what the boot
  validator's ready unit makes of it (pending, after_answer); PHASES;
- the judge (judge): READY or not for every caller (the play's summary, --tags verify, the boot validator's answer
  check and the check timer) from one reading: the marker, whether it vouches for the inputs in force, the answer of
  the unit's own process and when that process started; a host's state and reason (STATES), the host's verdict over
  its services (host_verdict), and the words READY / NOT READY (word).

The role reaches it through its filters and plan, the fleet summary imports it, and the boot validator runs this same
file on the host (copied into its package tree): stdlib and module_utils/common only, no Ansible."""

from __future__ import annotations

import calendar
import json
import re
import time

from ansible_collections.blackwell.inference.plugins.module_utils.common import secrets
from ansible_collections.blackwell.inference.plugins.module_utils.common.values import is_true

READY = "READY"
NOT_READY = "NOT READY"

# a host's state (state, readiness); NOT_AS_VALIDATED: another file of the unit overrides what the role set
SERVING = "validated and serving"
NOT_SERVING = "validated but not serving"
NOT_VALIDATED = "not validated"
NOT_AS_VALIDATED = "not as validated"
STATES = (SERVING, NOT_SERVING, NOT_VALIDATED, NOT_AS_VALIDATED)

# the marker's phase: serving (the restarted service answered), validated (the smoke passed, the service has not
# answered yet), failed (the smoke or the health check; the rollback's marker), overridden (another file of the unit
# overrides what the role set). The play writes those; the boot validator's ready unit also writes `not serving`.
WRITTEN = ("serving", "validated", "failed", "overridden")
PHASES = (*WRITTEN, "not serving")
# the phases whose validation passed: the smoke vouches for the marker's inputs; whether the service serves them is
# the answer's to say (judge)
PASSED = ("serving", "validated", "not serving")
BOOT_SOURCE = "boot validation (%s)"
CHECK_SOURCE = "check timer (%s)"
ROLLBACK_SOURCE = "armed rollback (%s)"

_ERROR_LINE = re.compile(r"(fatal )?error: .*")


def word(ready):
    """READY or NOT READY."""
    return READY if is_true(ready) else NOT_READY


def short(msg):
    """First line of a failure, plus the compiler's first error line when the output has one."""
    lines = str(msg).strip().splitlines() or [""]
    first = lines[0][:300]
    err = next((m.group(0) for m in map(_ERROR_LINE.search, lines[1:]) if m), None)
    return "%s (%s)" % (first, err[:300]) if err else first


def _warm_note(steps):
    mods = (steps.get("warm") or {}).get("modules") or []
    return ", JIT cache warm (%s)" % " ".join(m["name"] for m in mods) if mods else ""


def verdict(failed, smoke, ready_without_launch):
    """(ready, reason) from a smoke result (the jit_smoke module's return or the boot validator's)."""
    steps = (smoke or {}).get("steps") or {}
    if failed:
        return False, "smoke failed: %s" % short((smoke or {}).get("msg") or "no result")
    launch = steps.get("launch") or {}
    if not launch.get("launched"):
        if not ready_without_launch:
            return False, "no kernel launched (%s) and sglang_service_ready_without_launch is false" % launch.get("reason", "no launch step")
        return True, "compiled%s; not launched (%s), allowed by policy" % (_warm_note(steps), launch.get("reason", "?"))
    return True, "kernel launched (%s)%s" % (launch.get("detail", "ok"), _warm_note(steps))


def smoke_verdict(smoke, ready_without_launch):
    """verdict() of a registered jit_smoke result, as {ready, reason}."""
    ready, reason = verdict(bool((smoke or {}).get("failed")), smoke, ready_without_launch)
    return {"ready": ready, "reason": reason}


def changed_inputs(old, new):
    """Which of the vouched inputs' keys differ (sorted), to say why a host revalidates."""
    old, new = old or {}, new or {}
    return sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))


def validation_passed(marker):
    """Whether the marker's last validation passed (PASSED phases); a marker from before phases says so by `ready`."""
    marker = marker or {}
    if marker.get("phase") is None:
        return bool(marker.get("ready"))
    return marker.get("phase") in PASSED


def inputs_current(marker, digest, vouched=None):
    """(bool, why): whether the marker vouches for the current inputs (its digest), and which vouched inputs differ."""
    if not marker:
        return False, "no ready marker"
    if marker.get("inputs") == digest:
        return True, ""
    what = changed_inputs(marker.get("vouched"), vouched) if marker.get("vouched") and vouched else []
    return False, "validated inputs differ from the current ones%s" % ((" (" + ", ".join(what) + ")") if what else "")


def needs_validation(marker, digest, vouched=None):
    """(bool, why) for an existing marker (None when absent) and the current inputs (digest, and the vouched inputs to
    name what changed). A validation that passed and was left unrestarted on purpose (sglang_service_restart false:
    phase validated, restart false) needs none: the service serves it once something restarts it."""
    if not marker:
        return True, "no ready marker"
    current, why = inputs_current(marker, digest, vouched)
    unrestarted = marker.get("phase") == "validated" and marker.get("restart") is False
    if not marker.get("ready") and not unrestarted:
        return True, "marked not ready: %s" % marker.get("reason", "?")
    if not current:
        return True, why
    return False, "ready for the current inputs" if marker.get("ready") else "validated for the current inputs, not restarted"


def resumable(marker, current, look):
    """Whether a run confirms a validation instead of validating again: it passed for the current inputs (current), the
    play never saw it serve (phase validated: a run killed in its health wait, a boot's validation; not serving: a slow
    boot), and the preflight's look (service_probe's `health`) finds the unit's own process answering, started after
    that validation (judge). The run then keeps this state as the last good one and marks it serving, and a restart of
    a healthy service is spared (issue 57 item 5)."""
    marker = marker or {}
    if marker.get("ready") or marker.get("phase") not in ("validated", "not serving") or not current or not look:
        return False
    if look.get("not_looked") or not look.get("stands"):
        return False
    return judge({"marker": marker, "current": True, "answer": look})["ready"]


def confirmed_reason(marker):
    """The reason a confirmed validation's marker gives: the validation's own, and that a run saw it answer."""
    return "%s; answered (confirmed by a run)" % _first((marker or {}).get("reason"))


def revalidation(need, toolkit_installed=False, venv_switched=False, units_changed=False, runtime_changed=False):
    """Why the service is validated again in this run ('' when it is not): the toolkit role installed in this run,
    the marker does not vouch for the current inputs (need: needs_validation's {needed, why}), the venv role switched
    `current`, the unit files were written, or the `blackwell_inference runtime changed` topic was notified while a
    run's tags skipped the role results that say which (the toolkit and venv roles' listeners set a literal)."""
    need = need or {}
    if toolkit_installed:
        return "the toolkit changed in this run"
    if need.get("needed"):
        return need.get("why") or "not ready for the current inputs"
    if venv_switched:
        return "the venv changed in this run"
    if units_changed:
        return "its units changed in this run"
    if runtime_changed:
        return "the toolkit or the venv changed in this run"
    return ""


def health_stands(look, revalidated, enable_changed, further_services):
    """Whether the preflight's look at the service (service_probe's `health`) stands for the health check.

    It does when the look found the service ready to serve (its health endpoint answered, and its sampled request
    when there is one) and nothing of the service changed since: no validation or rollout ran (revalidated), the
    enable task changed nothing (it may have started the service), and no further service of the host follows (the
    summary's facts are gathered after the last one). Anything else asks again (service_health waits and explains)."""
    return bool(look and look.get("stands")) and not (revalidated or enable_changed or further_services)


def marker(
    ready,
    reason,
    now,
    digest,
    venv_target,
    toolkit,
    archs,
    versions,
    smoke,
    previous=None,
    source="ansible",
    phase=None,
    vouched=None,
    promote=False,
    restart=True,
):
    """The facts.d JSON. `phase`: one of WRITTEN (validated when ready, failed when not, by default). last_good is the
    newest state that served; only a state that answered its health check (promote) replaces it, so it is kept across
    failures, boots and kills. restart: false when the validation was left unrestarted on purpose
    (sglang_service_restart)."""
    phase = phase or ("validated" if ready else "failed")
    if phase not in WRITTEN:
        raise ValueError("phase %r is not one of %s" % (phase, ", ".join(WRITTEN)))
    steps = (smoke or {}).get("steps") or {}
    out = {
        "ready": bool(ready),
        "phase": phase,
        "reason": reason,
        "time": now,
        "source": source,
        "inputs": digest,
        "vouched": vouched if vouched is not None else (previous or {}).get("vouched"),
        "toolkit": toolkit,
        "venv": venv_target,
        "versions": versions or {},
        "archs": archs,
        "launched": bool((steps.get("launch") or {}).get("launched")),
        "smoke": steps,
        "restart": bool(restart),
    }
    # when a validation last passed and when the service last answered (the textfile collector's timestamps)
    out["validated_at"] = now if phase == "validated" else (previous or {}).get("validated_at")
    out["answered_at"] = now if phase == "serving" else (previous or {}).get("answered_at")
    last_good = (previous or {}).get("last_good")
    if promote:
        if not ready or phase != "serving":
            raise ValueError("only a ready, serving state becomes last_good")
        last_good = {"venv": venv_target, "inputs": digest, "time": now}
    out["last_good"] = last_good
    return out


def overridden(marker, reason, now):
    """The marker of a host whose unit another file overrides (service_plan.foreign_refusal): not ready, phase
    overridden, with that reason; None when there is nothing to write (no marker, or one that says not ready already).
    The running service may still be the validated one, but a restart would run what the other file sets."""
    if not marker or not marker.get("ready"):
        return None
    out = dict(marker)
    out.update(ready=False, phase="overridden", reason=str(reason), time=now, source="ansible")
    return out


NOT_RESTARTED = "not restarted (sglang_service_restart is false): ready once the service, started after this, answers"

# the keys of next_marker's `state`: what the marker says the validation was of
STATE_KEYS = ("inputs", "venv", "toolkit", "archs", "versions", "vouched", "smoke", "restart")


def next_marker(previous, step, reason, now, state=None):
    """The marker a step of the play writes (None: the step leaves the marker as it is), from the marker as it was
    (previous), the step, its reason, the time and the state validated (STATE_KEYS: the digest as `inputs`, the venv's
    target, the toolkit, the archs, the versions, the vouched inputs, the smoke's result and sglang_service_restart):
    - validated: the smoke passed; never ready (the service has not answered on it: judge decides once it does);
    - serving: the restarted service answered: ready, and this state becomes last_good;
    - failed: the rollback's (last_good kept);
    - overridden: another file of the unit overrides what the role set (`reason` names it; only `now` is used)."""
    if step == "overridden":
        return overridden(previous, reason, now)
    s = dict(state or {})
    unknown = sorted(set(s) - set(STATE_KEYS))
    if unknown:
        raise ValueError("marker state: unknown keys %s (allowed: %s)" % (", ".join(unknown), ", ".join(STATE_KEYS)))
    restart = is_true(s.get("restart", True))
    ready, promote = {"validated": (False, False), "serving": (True, True), "failed": (False, False)}.get(step, (None, None))
    if ready is None:
        raise ValueError("step %r is not one of validated, serving, failed, overridden" % (step,))
    if step == "validated":
        reason = "%s; %s" % (reason, "waiting for the restarted service to answer" if restart else NOT_RESTARTED)
    fields = [s.get(k) for k in ("inputs", "venv", "toolkit", "archs", "versions", "smoke")]
    return marker(ready, reason, now, *fields, previous, phase=step, vouched=s.get("vouched"), promote=promote, restart=restart)


def pending(marker, inputs, service):
    """Why the boot validator's answer check leaves the marker alone (None: it waits for the answer and decides): only
    the marker this boot's validation wrote for these inputs (phase validated) is the check's to turn into serving or
    not serving."""
    marker = marker or {}
    if marker.get("source") != BOOT_SOURCE % service:
        return "the marker was written by %s, which judges the answer itself" % (marker.get("source") or "nobody")
    if marker.get("phase") != "validated":
        return "the boot validation did not pass (phase %s)" % marker.get("phase")
    if marker.get("inputs") != inputs:
        return "the marker is for other inputs than these settings'"
    return None


def after_answer(marker, answered, why, now, service):
    """The boot validator's marker once its answer check ended: serving and ready when the unit answered, else not
    serving with the cause. last_good stays as it is (the play's answer with its snapshot moves it)."""
    out = dict(marker)
    if answered:
        reason = "%s; answered after boot (%s)" % (_first(marker.get("reason")), why)
        out.update(ready=True, phase="serving", reason=reason, time=now, answered_at=now)
    else:
        out.update(ready=False, phase="not serving", reason="the service did not answer after boot: %s" % why, time=now)
    out["source"] = BOOT_SOURCE % service
    return out


def _first(reason):
    """The validation's own reason, without the note that it waits for the answer."""
    return str(reason or "validated").split("; waiting for", 1)[0].split("; " + NOT_RESTARTED, 1)[0]


def epoch(stamp):
    """Seconds since the epoch of a marker time (%Y-%m-%dT%H:%M:%SZ); None when there is none or it is not one."""
    try:
        return calendar.timegm(time.strptime(str(stamp), "%Y-%m-%dT%H:%M:%SZ")) if stamp else None
    except ValueError:
        return None


def started_at(unit_state):
    """Unix seconds of the unit's main process start (systemctl show --timestamp=unix: ExecMainStartTimestamp=@N), or
    None when it never started or the reading has no such property."""
    value = str((unit_state or {}).get("ExecMainStartTimestamp") or "").lstrip("@")
    try:
        return float(value) if value else None
    except ValueError:
        return None


def answer_of_unit(answer):
    """(ok, why not): whether a look or a wait (service_http.look, service_health) saw the unit's own process answer its
    health endpoint, and its sampled request when one was asked. An answer from another process holding the port
    (not_the_unit) is no answer: the unit may be stopped."""
    answer = answer or {}
    if answer.get("not_looked"):
        return False, "was not asked: %s" % answer["not_looked"]
    if answer.get("not_the_unit"):
        return False, "does not answer: the answer on its port is not its own (%s)" % answer["not_the_unit"]
    sample = answer.get("sample")
    if isinstance(sample, dict) and not sample.get("ok", True):
        return False, answer.get("msg") or "answered, but its sampled request failed: %s" % sample.get("detail", "?")
    answered = answer.get("answered")
    if answered is None:  # a result without the key (older registrations): its HTTP status says
        answered = str(answer.get("status")) == "200"
    if not answered:
        return False, answer.get("msg") or "does not answer"
    return True, ""


def parse_marker(text):
    """(marker, damage) of the marker file's text: (None, None) when there is none (None), ({...}, None) when it is a
    JSON object, else (None, what is wrong): a damaged marker vouches for nothing, and the caller says so instead of
    dying on it."""
    if text is None:
        return None, None
    try:
        doc = json.loads(text)
    except ValueError as exc:
        return None, "not JSON (%s)" % exc
    if not isinstance(doc, dict):
        return None, "a JSON %s, not an object" % type(doc).__name__
    return doc, None


def _r(ready, name, reason):
    return {"ready": ready, "state": name, "reason": reason}


def judge(reading):
    """{ready, state, reason}: READY or not, for every caller, from one reading of the host:

    - marker: the ready marker as read (None: none), marker_damage: what is wrong with a damaged one;
    - current, stale: whether the marker vouches for the inputs in force, and why not;
    - answer: a look or a wait at the service (answer_of_unit: the unit's own process must answer);
    - started: when the unit's running process started (started_at), against the marker's validated_at for a
      validation the service has not been seen serving yet (phase validated);
    - live: a live smoke's verdict (--tags verify), None when none ran;
    - foreign: another file of the unit overrides what the role set (what systemd runs is not what was validated).

    READY only when the last validation passed for the current inputs and the unit's own process answers now, started
    after that validation. The reason is the first that applies."""
    r = reading or {}
    if r.get("foreign"):
        return _r(False, NOT_AS_VALIDATED, str(r["foreign"]))
    if r.get("marker_damage"):
        return _r(False, NOT_VALIDATED, "the ready marker is damaged (%s); a converge revalidates" % r["marker_damage"])
    marker, live = r.get("marker") or {}, r.get("live")
    if live is not None and not live.get("ready"):
        return _r(False, NOT_VALIDATED, live.get("reason") or "the live smoke failed")
    if not validation_passed(marker):
        return _r(False, NOT_VALIDATED, marker.get("reason") or "no ready marker")
    if not r.get("current", False):
        return _r(False, NOT_VALIDATED, "%s; a converge revalidates" % (r.get("stale") or "not validated for the current inputs"))
    ok, why = answer_of_unit(r.get("answer"))
    if not ok:
        return _r(False, NOT_SERVING, "the service %s" % why)
    if marker.get("phase") == "validated":
        started = r["started"] if r.get("started") is not None else started_at((r.get("answer") or {}).get("unit_state"))
        validated = epoch(marker.get("validated_at"))
        if started is None or validated is None or started < validated:
            since = "started %s" % time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)) if started is not None else "start time unknown"
            return _r(
                False,
                NOT_SERVING,
                "validated at %s, but the process that answers runs from before it (%s): %s"
                % (marker.get("validated_at") or "?", since, "restart the service to serve it" if marker.get("restart") is False else "a converge restarts it"),
            )
    reason = live.get("reason") if live is not None else _first(marker.get("reason")) if marker.get("phase") == "validated" else marker.get("reason")
    return _r(True, SERVING, reason or "")


def readiness(marker, need, health, live=None, foreign=None, marker_damage=None):
    """judge() over the play's registrations: the marker as it is, the fingerprint's need ({needed, why, current,
    stale}: needs_validation and inputs_current), the health that counts now (service_health's result or the
    preflight's look: its unit_state says when the unit started), a live smoke's verdict and foreign."""
    need, health = need or {}, health or {}
    current = need.get("current")
    if current is None:  # a need without the inputs' own verdict: needed for any reason is not current
        current = not need.get("needed")
    return judge(
        {
            "marker": marker,
            "marker_damage": marker_damage,
            "current": current,
            "stale": need.get("stale") or need.get("why"),
            "answer": health,
            "live": live,
            "foreign": foreign,
        }
    )


def file_drift(files, sha256_of, key=None):
    """The first of the vouched files ({path: sha256, keyed digest or None for absent}: the marker's vouched `files`)
    that no longer holds what was validated, as a sentence; None when each still does. sha256_of(path) -> hex or None
    (absent); key: the host's digest key (bytes) for keyed entries, which are skipped without it."""
    for path, want in sorted((files or {}).items()):
        got = sha256_of(path)
        if want is None:
            if got is not None:
                return "%s appeared since the validation" % path
            continue
        if got is None:
            return "%s is gone since the validation" % path
        if str(want).startswith(secrets.KEYED_PREFIX):
            if key is None:
                continue
            got = secrets.keyed(key, got)
        if got != want:
            return "%s changed since the validation" % path
    return None


def after_check(marker, verdict, now, service):
    """The marker the check timer writes (None: it leaves the marker as it is), from the marker as read and the
    judge's verdict over the timer's own reading:
    - a validation that passed for the current inputs, now answered by the unit's own process started after it, on a
      marker that does not say so yet (after a slow boot, or a restart by hand after sglang_service_restart false):
      serving, ready;
    - a ready marker whose service no longer answers (a crash after READY): not serving; whose vouched files changed:
      overridden; not ready either way, with the cause;
    - anything else (no marker, a failed validation, other inputs: the play's to revalidate) as it is."""
    if not marker:
        return None
    out = dict(marker, time=now, source=CHECK_SOURCE % service)
    if verdict.get("ready"):
        if marker.get("ready") is True and marker.get("phase") == "serving":
            return None
        out.update(ready=True, phase="serving", reason="%s; answered (check timer)" % _first(marker.get("reason")), answered_at=now)
        return out
    if marker.get("ready") is True and verdict.get("state") in (NOT_SERVING, NOT_AS_VALIDATED):
        out.update(ready=False, phase="not serving" if verdict["state"] == NOT_SERVING else "overridden", reason=verdict.get("reason") or "")
        return out
    return None


def confirmed(marker, armed_at):
    """Whether the play confirmed the restart its rollback was armed for: the marker says serving, written by the play
    (or the host's own checks) since it armed (armed_at: unix seconds). Then the armed rollback has nothing to do."""
    marker = marker or {}
    written = epoch(marker.get("time"))
    return marker.get("ready") is True and marker.get("phase") == "serving" and written is not None and written >= int(armed_at)


def rolled_back(marker, reason, now, service):
    """The marker the host's armed rollback writes: not ready (phase failed), with what it did; last_good and what was
    validated are kept (the next run validates again)."""
    out = dict(marker or {})
    out.update(ready=False, phase="failed", reason=str(reason), time=now, source=ROLLBACK_SOURCE % service)
    return out


def host_verdict(host, summaries):
    """The host's READY over every service's summary (the first service first): ready only when each one is.
    {"ready", "msg"}: one service keeps the one-service wording; more name each one that is not ready."""
    summaries = [s for s in summaries or [] if isinstance(s, dict)]
    if not summaries:
        return {"ready": False, "msg": "%s is %s: no service summary" % (host, NOT_READY)}
    if len(summaries) == 1:
        s = summaries[0]
        ready = is_true(s.get("ready"))
        return {"ready": ready, "msg": "%s is %s (%s): %s" % (host, "ready" if ready else NOT_READY, s.get("state"), s.get("reason"))}
    bad = [s for s in summaries if not is_true(s.get("ready"))]
    if not bad:
        return {"ready": True, "msg": "%s is ready: %s" % (host, "; ".join("%s (%s)" % (s.get("unit"), s.get("state")) for s in summaries))}
    return {
        "ready": False,
        "msg": "%s is %s (%d of %d services): %s"
        % (host, NOT_READY, len(bad), len(summaries), "; ".join("%s (%s): %s" % (s.get("unit"), s.get("state"), s.get("reason")) for s in bad)),
    }
