# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The answer check after a boot validation: the ready marker says `ready: true` only once the unit's own process
answered (what the marker then holds: ready.py, pending and after_answer).

The boot validator (<service>-validate.service) writes `phase: validated, ready: false`: its smoke passed, nobody has
seen the service answer yet. <service>-ready.service, pulled in by the service (Wants=) and ordered after it, then waits
for the unit's own answer (its health endpoint and the sampled request, from a process of the unit's cgroup) and writes
`phase: serving, ready: true`, or `phase: not serving, ready: false` with the cause. It never stops or fails the service
(in drop-in mode the unit is the operator's): a unit of its own, not an ExecStartPost= whose failure would stop it.

The check timer (<service>-check.timer) looks once per period (look) and the judge decides (ready.judge, after_check).

Installed beside boot_validate.py (stdlib only, no Ansible): socket_owner, service_health and ready are next to it too."""

from __future__ import annotations

import http.client
import json
import time
import urllib.parse

from ansible_collections.blackwell.inference.plugins.module_utils.service import health as service_health
from ansible_collections.blackwell.inference.plugins.module_utils.service import socket_owner


def ask(url, timeout, body=None, api_key=None):
    """(status, text) of a GET (or a JSON POST with body, and `Authorization: Bearer` when api_key) to an http URL; -1
    and the error when nothing answered."""
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
            conn.request("POST", path, json.dumps(body), dict(service_health.auth_headers(api_key), **{"Content-Type": "application/json"}))
        resp = conn.getresponse()
        return resp.status, resp.read().decode("utf-8", "replace")
    except (OSError, http.client.HTTPException, ValueError) as exc:
        return -1, str(exc)
    finally:
        conn.close()


def _key(props):
    """{api_key: the key the unit's own process was given (its --api-key)}, or {} without one."""
    key = socket_owner.api_key_of(props)
    return {"api_key": key} if key else {}


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
            status, text = asker(cfg["sample_url"], int(cfg.get("sample_timeout") or 300), cfg.get("sample_body") or {}, **_key(props))
            ok, detail = service_health.sample_result(status, text)
            return ok, ("sampled request %s" % detail) if ok else ("its sampled request failed: %s" % detail)
        last = "%s: %s" % (cfg["health_url"], "HTTP %s" % status if status != -1 else "no answer")
        if clock() - start >= cfg["health_timeout"]:
            return False, "%s after %d s" % (last, cfg["health_timeout"])
        sleep(2)


def look(cfg, props, asker=ask, owners=socket_owner.owners, sample=False):
    """One look for the check timer, no wait: {answered, status, msg, not_the_unit, sample} as ready.answer_of_unit
    reads it. An answer counts from a process in the unit's cgroup listening where the check asks. The sampled request
    only with `sample` (a look that may mark the service ready: READY needs it, as after a start); a look at a service
    already ready asks /health alone (SGLang's /health generates a token itself)."""
    if props.get("ActiveState") != "active":
        return {
            "answered": False,
            "status": -1,
            "msg": "is %s (%s)" % (props.get("ActiveState") or "unknown", props.get("Result") or "?"),
            "not_the_unit": None,
        }
    status, _text = asker(cfg["health_url"], int(cfg.get("check_timeout") or 10))
    if status != 200:
        return {
            "answered": False,
            "status": status,
            "msg": "does not answer %s (%s)" % (cfg["health_url"], "HTTP %s" % status if status != -1 else "no answer"),
            "not_the_unit": None,
        }
    ok, other = socket_owner.answer_verdict(cfg["health_url"], props, owners_of=owners)
    got = {"answered": ok, "status": status, "msg": "" if ok else other, "not_the_unit": None if ok else other, "sample": None}
    if ok and sample and cfg.get("sample_url"):
        status, text = asker(cfg["sample_url"], int(cfg.get("sample_timeout") or 300), cfg.get("sample_body") or {}, **_key(props))
        fine, detail = service_health.sample_result(status, text)
        got["sample"] = {"ok": fine, "detail": detail}
        if not fine:
            got["msg"] = "answered %s, but its sampled request failed: %s" % (cfg["health_url"], detail)
    return got
