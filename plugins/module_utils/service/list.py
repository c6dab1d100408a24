# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Further SGLang services on one host (sglang_service_extra_services): each entry checked and resolved against the
role's own variables (the first service), so the role runs once per service with one set of variables each.

Per service: its unit name, mode, venv, GPUs (CUDA_VISIBLE_DEVICES), environment, model, port, flags (or a whole
command) and ready marker. Everything else (the toolkit, the account, the cache, the health and smoke settings) is
shared. Pure: no host access."""

from __future__ import annotations

import re

from ansible_collections.blackwell.inference.plugins.module_utils.service import settings as sglang_service

KEYS = ("name", "mode", "venv", "gpus", "environment", "model_path", "port", "args", "command", "marker")
_UNIT = re.compile(r"^[A-Za-z0-9@_.-]+$")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MARKER = re.compile(r"^[a-z][a-z0-9_]*$")
# CUDA_VISIBLE_DEVICES as CUDA reads it: indices, or GPU/MIG UUIDs, comma-separated
_GPU = re.compile(r"^(\d+|GPU-[0-9A-Fa-f-]+|MIG-[0-9A-Za-z/-]+)$")
VAR = "sglang_service_extra_services"


def marker_name(primary_marker, name):
    """The default ready marker of an extra service: the first service's marker, _, then the unit's name in [a-z0-9_]."""
    return "%s_%s" % (primary_marker, re.sub(r"[^a-z0-9_]", "_", name.lower()))


def _strings(value):
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


def _port(value):
    if isinstance(value, bool):
        return None
    try:
        port = int(value)
    except (TypeError, ValueError):
        return None
    return port if 1 <= port <= 65535 else None


def writes_launcher(service):
    """Whether the role writes SGLang's launcher (and so the port) into this service's unit."""
    return not service["command"] and (service["mode"] == "unit" or bool(service["args"]))


def _entry(i, entry, primary):
    """(resolved service, [refusals]) for one entry."""
    where = "%s[%d]" % (VAR, i)
    if not isinstance(entry, dict):
        return None, ["%s: a mapping with a name (got %r)." % (where, entry)]
    entry = {k: v for k, v in entry.items() if v is not None}  # a key given as null is a key not given
    bad = []
    unknown = sorted(set(entry) - set(KEYS))
    if unknown:
        bad.append("%s: unknown keys %s (allowed: %s)." % (where, ", ".join(unknown), ", ".join(KEYS)))
    name = entry.get("name")
    if not isinstance(name, str) or not _UNIT.match(name) or name.endswith(".service"):
        bad.append("%s.name: a unit name without .service (got %r)." % (where, name))
    elif name == primary["name"]:
        bad.append("%s.name: a unit other than sglang_service_name's %s." % (where, name))
    mode = entry.get("mode", primary["mode"])
    if mode not in ("unit", "dropin"):
        bad.append("%s.mode: unit or dropin (got %r)." % (where, mode))
    venv = entry.get("venv", primary["venv"])
    if not isinstance(venv, str) or not venv.startswith("/"):
        bad.append("%s.venv: an absolute path (got %r)." % (where, venv))
    env = entry.get("environment", {})
    if not isinstance(env, dict) or any(not isinstance(k, str) or not ENV_NAME.match(k) for k in env):
        bad.append("%s.environment: a mapping of variable names (got %r)." % (where, env))
        env = {}
    clash = sorted(set(env) & set(sglang_service.MANAGED_KEYS))
    if clash:
        bad.append("%s.environment: none of %s (derived from the facts; got %s)." % (where, ", ".join(sglang_service.MANAGED_KEYS), ", ".join(clash)))
    gpus = entry.get("gpus", "")
    if isinstance(gpus, int) and not isinstance(gpus, bool):
        gpus = str(gpus)
    if not isinstance(gpus, str) or (gpus and not all(_GPU.match(g.strip()) for g in gpus.split(","))):
        bad.append("%s.gpus: CUDA_VISIBLE_DEVICES, GPU indices or UUIDs separated by commas like '4,5,6,7' (got %r)." % (where, gpus))
        gpus = ""
    elif gpus and "CUDA_VISIBLE_DEVICES" in env:
        bad.append("%s.gpus: not with CUDA_VISIBLE_DEVICES in its environment too (one of them)." % where)
    port = _port(entry.get("port", primary["port"]))
    if port is None:
        bad.append("%s.port: 1-65535 (got %r)." % (where, entry.get("port")))
    args = entry.get("args", [])
    if not _strings(args):
        bad.append("%s.args: a list of strings (got %r)." % (where, args))
        args = []
    command = entry.get("command", [])
    if not _strings(command):
        bad.append("%s.command: a list of strings (got %r)." % (where, command))
        command = []
    model_path = entry.get("model_path", primary["model_path"])
    if not isinstance(model_path, str) or not model_path:
        bad.append("%s.model_path: a path (got %r)." % (where, model_path))
    marker = entry.get("marker", marker_name(primary["marker"], name) if isinstance(name, str) else "")
    if not isinstance(marker, str) or not _MARKER.match(marker):
        bad.append("%s.marker: a lower-case identifier (got %r)." % (where, marker))
    merged = dict(primary.get("environment") or {})
    merged.update(env)
    if gpus:
        merged["CUDA_VISIBLE_DEVICES"] = ",".join(g.strip() for g in gpus.split(","))
    service = {
        "name": name,
        "mode": mode,
        "venv": venv,
        "environment": merged,
        "model_path": model_path,
        "port": port,
        "args": args,
        "command": command,
        "marker": marker,
    }
    return service, bad


def extra_services(entries, primary):
    """sglang_service_extra_services resolved against the first service's variables (primary: name, mode, venv,
    environment, model_path, port, args, command, marker). {"error": the refusals in one message or None,
    "services": one dict per entry with every key of KEYS but gpus (in its environment as CUDA_VISIBLE_DEVICES)}."""
    if entries is None:
        entries = []
    if not isinstance(entries, list):
        return {"error": "%s: a list of services (got %r)." % (VAR, entries), "services": []}
    services, bad = [], []
    for i, entry in enumerate(entries):
        service, refusals = _entry(i, entry, primary)
        bad.extend(refusals)
        if service:
            services.append(service)
    first = dict(primary, port=_port(primary["port"]))
    names, markers, ports = {primary["name"]: "sglang_service_name"}, {primary["marker"]: "sglang_service_marker"}, {}
    if writes_launcher(first) and first["port"]:
        ports[first["port"]] = primary["name"]
    for i, service in enumerate(services):
        where = "%s[%d]" % (VAR, i)
        if service["name"] in names and service["name"] != primary["name"]:
            bad.append("%s.name: each service once (%s is also %s)." % (where, service["name"], names[service["name"]]))
        names.setdefault(service["name"], "%s[%d].name" % (VAR, i))
        if service["marker"] in markers:
            bad.append("%s.marker: a marker of its own (%s is also %s)." % (where, service["marker"], markers[service["marker"]]))
        markers.setdefault(service["marker"], "%s[%d].marker" % (VAR, i))
        if writes_launcher(service) and service["port"]:
            if service["port"] in ports:
                bad.append("%s.port: a port of its own (%d is %s's)." % (where, service["port"], ports[service["port"]]))
            ports.setdefault(service["port"], service["name"])
    return {"error": " ".join(bad) or None, "services": services}
