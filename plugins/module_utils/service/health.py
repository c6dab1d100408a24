# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Waiting for a restarted service to answer, and knowing when to stop waiting: a unit that died (and will not be
restarted) or keeps crashing will never answer, so the wait ends there instead of at the timeout."""

from __future__ import annotations

import json

from ansible_collections.blackwell.inference.plugins.module_utils.common import systemd

PROPERTIES = ("ActiveState", "SubState", "Result", "ExecMainStatus", "NRestarts", "MainPID", "ControlGroup", "InvocationID", "ExecMainStartTimestamp")
# what a message shows of them (the start time is the judge's, ready.started_at)
DESCRIBED = PROPERTIES[:-1]


# SGLang's "whole vocabulary" top_k (sampling_params.TOP_K_ALL; -1 becomes it): no top-k filter
SGLANG_TOP_K_ALL = 1 << 30


def show_argv(unit):
    """systemctl's argument list for the properties the wait judges (times as unix seconds: @N)."""
    argv = ["systemctl", "show", unit, "--timestamp=unix"]
    for prop in PROPERTIES:
        argv += ["-p", prop]
    return argv


def parse_show(stdout):
    """`systemctl show -p ...` output (KEY=value lines) -> dict; NRestarts as an int (0 when absent)."""
    props = systemd.show_props(stdout)
    try:
        props["NRestarts"] = int(props.get("NRestarts") or 0)
    except ValueError:
        props["NRestarts"] = 0
    return props


def describe(props):
    """One line of the unit's state, in systemctl show's own words."""
    return " ".join("%s=%s" % (k, props[k]) for k in DESCRIBED if k in props) or "no state"


def gave_up(props, restarts_before, crash_limit):
    """Why waiting longer is pointless (str), or None while the service may still come up.

    - the unit is failed or dead and systemd is not about to restart it (SubState auto-restart means it will);
    - it crashed crash_limit times since the wait began (a crash loop under Restart=).
    """
    if not props:
        return None
    active, sub = props.get("ActiveState", ""), props.get("SubState", "")
    if active in ("failed", "inactive") and sub != "auto-restart":
        return "the unit is %s and will not be restarted" % active
    crashes = props.get("NRestarts", 0) - (restarts_before or 0)
    if crash_limit and crashes >= crash_limit:
        return "the unit crashed and was restarted %d times since it was started" % crashes
    return None


def failure(url, timeout, seconds, status, props, reason):
    """The message of a wait that ended without an answer."""
    if timeout <= 0:  # one look, no wait
        head = "does not answer %s%s" % (url, ": " + reason if reason else "")
    elif reason:
        head = "did not answer %s: %s after %.0f s" % (url, reason, seconds)
    else:
        head = "did not answer %s within %d s" % (url, timeout)
    return "%s (last status %s; systemd: %s)" % (head, status, describe(props))


def start_argv(unit):
    """systemctl's argument list for when the unit's main process last started (unix seconds: `@1764597600`), its
    current run (InvocationID), and its environment as systemd has it loaded (Environment, EnvironmentFiles:
    systemd_env.unit_environment reads them)."""
    return ["systemctl", "show", unit, "--timestamp=unix", "-p", "ExecMainStartTimestamp", "-p", "InvocationID", "-p", "Environment", "-p", "EnvironmentFiles"]


def parse_start(stdout):
    """`ExecMainStartTimestamp=@1764597600` -> microseconds since the epoch; None when it never started (empty value)."""
    value = systemd.show_props(stdout).get("ExecMainStartTimestamp", "").lstrip("@")
    return int(float(value) * 1000000) if value.replace(".", "", 1).isdigit() else None


def sample_checked(body):
    """Refusal (str) of a sampled request that would not take FlashInfer's sampling module, or None.

    SGLang samples only when temperature > 0 (and top_k is not 1); /health's own generate is greedy, so a request
    that does not sample proves nothing /health did not. And a request that samples without filtering (top_p 1, no
    top_k, no min_p) is sampled in plain torch (SGLang 0.5.23 srt/layers/sampler.py, its "simple sampling case"),
    never by FlashInfer: the request must filter by both top_p < 1 and top_k > 1, which SGLang's flashinfer backend
    hands to flashinfer.sampling. The request is SGLang's native /generate body.
    """
    if not isinstance(body, dict) or not isinstance(body.get("text", body.get("input_ids")), (str, list)):
        return 'it must be /generate\'s JSON body: {"text": "...", "sampling_params": {...}}'
    params = body.get("sampling_params")
    if not isinstance(params, dict):
        return "it has no sampling_params"
    try:
        temperature = float(params.get("temperature", 1.0))
        top_k = int(params.get("top_k", -1))
        top_p = float(params.get("top_p", 1.0))
    except (TypeError, ValueError):
        return "its temperature, top_k and top_p must be numbers"
    if temperature <= 0 or top_k == 1:
        return "it is greedy (temperature %s, top_k %s): SGLang samples only at temperature > 0 with top_k other than 1" % (temperature, top_k)
    if not (0 < top_p <= 1):
        return "its top_p %s is not in (0, 1]" % top_p
    if top_p == 1 or not (1 < top_k < SGLANG_TOP_K_ALL):
        return (
            "it does not filter (top_p %s, top_k %s): SGLang samples such a request in plain torch, never by FlashInfer's "
            "sampling module; give 0 < top_p < 1 and top_k > 1" % (top_p, top_k)
        )
    return None


def api_key(argv):
    """The key SGLang's --api-key gets in a command line (the running process's, as systemd expanded it), or None. The
    sampled request sends it (SGLang's /generate wants `Authorization: Bearer KEY`; /health is open to probes)."""
    words = [str(w) for w in argv or []]
    for i, word in enumerate(words):
        if word == "--api-key" and i + 1 < len(words):
            return words[i + 1] or None
        if word.startswith("--api-key="):
            return word.split("=", 1)[1] or None
    return None


def auth_headers(key):
    """The request headers that carry an API key ({} without one)."""
    return {"Authorization": "Bearer " + key} if key else {}


def sample_result(status, text):
    """Judge the answer to the sampled request: (ok, detail). SGLang answers 200 with {"text": ..., "meta_info": ...};
    an error answer carries {"error": {"message": ...}} (or a plain text body)."""
    try:
        doc = json.loads(text) if text else None
    except ValueError:
        doc = None
    if status == 200 and isinstance(doc, dict) and isinstance(doc.get("text"), str):
        return True, "answered %d characters" % len(doc["text"])
    if status == -1:
        return False, "no answer (%s)" % (text or "connection failed")
    if status == 200:
        return False, "answered 200 without a generated text: %s" % " ".join(str(text or "empty body").split())[:500]
    message = None
    if isinstance(doc, dict):
        err = doc.get("error")
        message = err.get("message") if isinstance(err, dict) else err or doc.get("detail") or doc.get("message")
    message = " ".join(str(message or text or "").split())[:500]
    return False, "answered HTTP %s: %s" % (status, message or "no body")


def sample_failure(url, sampled, props):
    """The message of a service that answered its health endpoint but failed the sampled request."""
    return "answered %s but its sampled request to %s failed after %.0f s: %s (systemd: %s)" % (
        url,
        sampled["url"],
        sampled["seconds"],
        sampled["detail"],
        describe(props),
    )
