# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Asking a service over HTTP on its host: its health endpoint and one sampled request (service_health's wait and
service_probe's one look share them)."""

from __future__ import annotations

import json
import time
import urllib.error

from ansible_collections.blackwell.inference.plugins.module_utils.service import health, socket_owner


def base_url(listen):
    """http://HOST:PORT of a service listening on listen ({host, port}, as unit_command reads them from its command);
    a wildcard address is asked on the loopback."""
    host = (listen or {}).get("host") or ""
    if host in ("0.0.0.0", "::", ""):  # noqa: S104 - a wildcard it listens on, not one this binds
        host = "127.0.0.1"
    elif ":" in host and not host.startswith("["):
        host = "[%s]" % host  # an IPv6 address
    return "http://%s:%s" % (host, (listen or {}).get("port", 30000))


def unit_state(module, unit):
    """The unit's state as systemd shows it (service_health.parse_show); {} without a unit. Fails the module with
    rc/stdout/stderr when systemctl does."""
    if not unit:
        return {}
    rc, out, err = module.run_command(health.show_argv(unit))
    if rc != 0:
        module.fail_json(msg="systemctl show %s failed" % unit, rc=rc, stdout=out, stderr=err)
    return health.parse_show(out)


def answer_owner(url, props, invocation_before=None, owners=None):
    """(ok, why): whether an answer on url's port is the unit's own (socket_owner.answer_verdict)."""
    return socket_owner.answer_verdict(url, props, invocation_before, owners)


def open_url(*args, **kwargs):
    """ansible's open_url, imported on first use: it pulls in ssl, http.client and cryptography (about 0.1 s), which
    a controller-side caller of base_url (the service's plan, worked out in a task's process) never needs."""
    from ansible.module_utils.urls import open_url as _open_url  # noqa: PLC0415

    return _open_url(*args, **kwargs)


def ask(url, timeout):
    """The HTTP status of a GET; -1 when nothing answered."""
    try:
        with open_url(url, timeout=timeout, use_proxy=False) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except (OSError, ValueError):
        return -1


def post(url, body, timeout, api_key=None):
    """(status, text) of a JSON POST (with `Authorization: Bearer` when api_key); -1 and the error when nothing
    answered."""
    data = json.dumps(body)
    headers = dict(health.auth_headers(api_key), **{"Content-Type": "application/json"})
    try:
        with open_url(url, data=data, method="POST", headers=headers, timeout=timeout, use_proxy=False) as resp:
            return resp.status, resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace")
    except (OSError, ValueError) as exc:
        return -1, str(exc)


def sample(url, body, timeout, api_key=None):
    """One sampled request and its verdict (service_health.sample_result)."""
    start = time.monotonic()
    status, text = post(url, body, timeout, api_key)
    ok, detail = health.sample_result(status, text)
    res = {"url": url, "status": status, "ok": ok, "detail": detail, "seconds": round(time.monotonic() - start, 1)}
    if ok:
        res["meta_info"] = json.loads(text).get("meta_info")
    return res


def look(url, sample_url=None, sample_body=None, request_timeout=5, sample_timeout=300, unit_state=dict, owner=None):
    """One look, no wait: the health endpoint, then (when it answered) the sampled request.

    `stands` is true when both answered as a ready service must; the result then has the shape of service_health's
    (answered, status, seconds, unit_state, gave_up, sample), so it can stand in for a wait that would end at once.
    owner(props) -> (ok, why) (answer_owner): an answer from a process that is not the unit's does not count; the
    result then says why in `not_the_unit`."""
    start = time.monotonic()
    status = ask(url, request_timeout)
    key = None
    if status == 200 and owner is not None:
        props = unit_state()
        ok, why = owner(props)
        if not ok:
            return {
                "stands": False,
                "answered": False,
                "status": status,
                "seconds": round(time.monotonic() - start, 1),
                "unit_state": props,
                "gave_up": None,
                "sample": None,
                "not_the_unit": why,
            }
        key = socket_owner.api_key_of(props)  # the answer is the unit's own: the sampled request may carry its key
    sampled = sample(sample_url, sample_body, sample_timeout, key) if status == 200 and sample_url else None
    return {
        "stands": status == 200 and (sampled is None or sampled["ok"]),
        "answered": status == 200,
        "status": sampled["status"] if sampled else status,
        "seconds": round(time.monotonic() - start, 1),
        "unit_state": unit_state(),
        "gave_up": None,
        "sample": sampled,
    }
