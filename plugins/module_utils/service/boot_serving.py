# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ready marker after a boot validation: `ready: true` only once the unit's own process answered.

The boot validator (<service>-validate.service) writes `phase: validated, ready: false`: its smoke passed, nobody has
seen the service answer yet. <service>-ready.service, pulled in by the service (Wants=) and ordered after it, then waits
for the unit's own answer (its health endpoint and the sampled request, from a process of the unit's cgroup) and writes
`phase: serving, ready: true`, or `phase: not serving, ready: false` with the cause. It never stops or fails the service
(in drop-in mode the unit is the operator's): a unit of its own, not an ExecStartPost= whose failure would stop it.

Installed beside boot_validate.py (stdlib only, no Ansible): socket_owner and service_health are next to it too."""

from __future__ import annotations

import http.client
import json
import time
import urllib.parse

from ansible_collections.blackwell.inference.plugins.module_utils.service import health as service_health
from ansible_collections.blackwell.inference.plugins.module_utils.service import socket_owner

BOOT_SOURCE = "boot validation (%s)"


def pending(marker, inputs, service):
    """Why the answer check leaves the marker alone (None: it waits for the answer and decides): only the marker this
    boot's validation wrote for these inputs (phase validated) is the check's to turn into serving or not serving."""
    marker = marker or {}
    if marker.get("source") != BOOT_SOURCE % service:
        return "the marker was written by %s, which judges the answer itself" % (marker.get("source") or "nobody")
    if marker.get("phase") != "validated":
        return "the boot validation did not pass (phase %s)" % marker.get("phase")
    if marker.get("inputs") != inputs:
        return "the marker is for other inputs than these settings'"
    return None


def after_answer(marker, answered, why, now, service):
    """The marker once the check ended: serving and ready when the unit answered, else not serving with the cause.
    last_good stays as it is (the play's answer with its snapshot moves it)."""
    out = dict(marker)
    if answered:
        out.update(ready=True, phase="serving", reason="%s; answered after boot (%s)" % (_first(marker.get("reason")), why), time=now)
    else:
        out.update(ready=False, phase="not serving", reason="the service did not answer after boot: %s" % why, time=now)
    out["source"] = BOOT_SOURCE % service
    return out


def _first(reason):
    """The validation's own reason, without the note that it waits for the answer."""
    return str(reason or "validated").split("; waiting for", 1)[0]


def ask(url, timeout, body=None):
    """(status, text) of a GET (or a JSON POST with body) to an http URL; -1 and the error when nothing answered."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "http" or not parts.hostname:
        return -1, "not an http URL: %s" % url
    conn = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=timeout)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    try:
        if body is None:
            conn.request("GET", path)
        else:
            conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, resp.read().decode("utf-8", "replace")
    except (OSError, http.client.HTTPException, ValueError) as exc:
        return -1, str(exc)
    finally:
        conn.close()


def wait(cfg, unit_props, clock=time.monotonic, sleep=time.sleep, asker=ask, owners=socket_owner.owners):
    """(answered, why): ask the health endpoint every 2 s up to cfg['health_timeout'] seconds; an answer counts from a
    process in the unit's cgroup (unit_props() -> ControlGroup, MainPID, ActiveState), then the sampled request must
    succeed. A unit that is failed or inactive ends the wait at once."""
    start = clock()
    last = "no answer yet"
    while True:
        props = unit_props()
        if props.get("ActiveState") in ("failed", "inactive"):
            return False, "the unit is %s (%s)" % (props.get("ActiveState"), props.get("Result") or "?")
        status, _text = asker(cfg["health_url"], 5)
        if status == 200:
            ok, other = socket_owner.answer_verdict(cfg["health_url"], props, owners_of=owners)
            if not ok:
                return False, other
            if not cfg.get("sample_url"):
                return True, "%s answered" % cfg["health_url"]
            status, text = asker(cfg["sample_url"], int(cfg.get("sample_timeout") or 300), cfg.get("sample_body") or {})
            ok, detail = service_health.sample_result(status, text)
            return ok, ("sampled request %s" % detail) if ok else ("its sampled request failed: %s" % detail)
        last = "%s: %s" % (cfg["health_url"], "HTTP %s" % status if status != -1 else "no answer")
        if clock() - start >= cfg["health_timeout"]:
            return False, "%s after %d s" % (last, cfg["health_timeout"])
        sleep(2)
