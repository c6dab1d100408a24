# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One reading of what the sglang_service role decides from (the service_probe module's, and host_lock's `read`
option's under the play's lock): the ready marker, the toolkit's nvcc, the JIT workspaces whose venv is gone, the
last good snapshot, the role's paths, and optionally the unit, FlashInfer's view in the service's environment, one
look at the running service and the summary's facts. A reading that cannot be made raises ReadError (the module
fails with it; the lock returns it as a failed reading and the role reads for itself)."""

from __future__ import annotations

import os
import pwd

from ansible_collections.blackwell.inference.plugins.module_utils.common import commands, files, secrets
from ansible_collections.blackwell.inference.plugins.module_utils.host import measure as cuda_measure
from ansible_collections.blackwell.inference.plugins.module_utils.service import health as health_logic
from ansible_collections.blackwell.inference.plugins.module_utils.service import http as service_http
from ansible_collections.blackwell.inference.plugins.module_utils.service import probe as service_probe
from ansible_collections.blackwell.inference.plugins.module_utils.service import settings as service_settings
from ansible_collections.blackwell.inference.plugins.module_utils.service import unit as unit_logic

UNIT_OPTIONS = ("unit", "venv", "exclude", "command", "host", "port", "keep", "show")
FACTS_OPTIONS = ("nvidia_smi", "environment", "venv", "venv_optional", "toolkit_root", "proc_devices")
# facts.service_environment: what the environment FlashInfer is measured in is worked out from (service_environment())
SERVICE_ENVIRONMENT_OPTIONS = ("environment", "cuda_home", "venv", "arch_list")
SUMMARY_FACTS_OPTIONS = ("nvidia_smi", "unit", "venv", "venv_optional", "flashinfer_version", "toolkit_root", "services")
HEALTH_OPTIONS = ("path", "sample_path", "listen", "sample_body", "unit", "venv", "request_timeout", "sample_timeout")
# the options of a reading; the first three are required, the others may be absent or null (not read)
PARAMS = ("marker", "cuda_home", "jit_dir", "snapshot_store", "unit", "facts", "summary_facts", "health", "observe", "keyed")
# keyed: {key (the host's digest key file), paths (secret files among observe), create (make the key when absent)}
KEYED_OPTIONS = ("key", "paths", "create")


class ReadError(cuda_measure.MeasureError):
    """What stops a reading: msg, and the failed command's rc/stdout/stderr when there was one (result)."""


def params(given):
    """The reading's options from a plain dict (host_lock's `read.service`): unknown ones and missing required ones
    are refused; absent optional ones are null ([] for observe)."""
    p = options("service", given or {}, PARAMS)
    missing = [k for k in PARAMS[:3] if not p.get(k)]
    if missing:
        raise ReadError("service: needs %s" % ", ".join(missing))
    out = {k: p.get(k) for k in PARAMS}
    out["observe"] = [str(x) for x in p.get("observe") or []]
    return out


def read(module, run, p):
    """The reading, as service_probe returns it (without `changed`). module: for its boolean() and run_command (the
    health look's unit state); run: a runner (commands.CachingRunner), whose calls are returned as commands_run."""
    # the facts of the service's environment need nothing else of this reading: gathered while the unit is read and
    # the service looked at (each waits on its commands or the service's answer)
    given = service_environment(p["facts"]) if p["facts"] is not None else None
    facts = commands.aside(gather_facts, commands.Quiet(module), run, given, FACTS_OPTIONS) if given is not None else None
    # the host's key first: the values of the unit's environment files are digested under it, never plainly
    key = host_key(p["keyed"], module.boolean)
    digest = unit_logic.keyed_digest(key) if p["keyed"] else unit_logic.plain_digest
    out = {"unit": read_unit(run, p["unit"], module.boolean, digest) if p["unit"] is not None else None}
    marker, marker_error = service_probe.read_marker(p["marker"])
    out["health"] = look(module, p["health"], (out["unit"] or {}).get("listen"), marker) if p["health"] is not None else None
    if facts is not None:
        out["blackwell_cuda"] = facts()
        out["ansible_facts"] = {"blackwell_cuda": out["blackwell_cuda"]}
    # only for a look that stands: otherwise service_health asks again and gathers them after this run's changes
    if p["summary_facts"] is not None and out["health"] and out["health"]["stands"]:
        try:
            out["ansible_facts"] = {"blackwell_cuda": gather_facts(module, run, p["summary_facts"], SUMMARY_FACTS_OPTIONS)}
        except ReadError as exc:  # e.g. something else answers on the port while the unit is not loaded
            out["health"].update(stands=False, summary_facts_error=exc.msg)
    nvcc = os.path.join(p["cuda_home"], "bin", "nvcc")
    snapshot = service_probe.snapshot_state(p["snapshot_store"]) if p["snapshot_store"] else {"exists": False, "error": None}
    return dict(
        marker=marker,
        marker_error=marker_error,
        nvcc={"path": nvcc, "exists": os.path.exists(nvcc)},
        gone_venv_links=service_probe.gone_venv_links(p["jit_dir"]),
        snapshot=snapshot,
        observed=observe(p["observe"], p["keyed"], key),
        commands_run=list(run.calls),
        **out,
    )


def service_environment(given):
    """The facts' options as cuda_facts takes them: `service_environment` ({environment, cuda_home, venv, arch_list}, the
    service role's variables) becomes `environment`, the one the preflight's probe measures FlashInfer in
    (settings.py probe_environment). The lock's reading and the probe are given the same options and work it out alike."""
    given = dict(given)
    inputs = given.pop("service_environment", None)
    if inputs is None:
        return given
    kw = options("facts: service_environment", inputs, SERVICE_ENVIRONMENT_OPTIONS)
    if given.get("environment") is not None:
        raise ReadError("facts: environment or service_environment, not both")
    if not kw.get("cuda_home") or not kw.get("venv"):
        raise ReadError("facts: service_environment needs cuda_home and venv")
    if not isinstance(kw.get("environment") or {}, dict):
        raise ReadError("facts: service_environment's environment must be a mapping")
    given["environment"] = service_settings.probe_environment(kw.get("environment"), kw["cuda_home"], kw["venv"], kw.get("arch_list") or "")
    return given


def host_key(keyed, boolean):
    """The host's digest key (bytes) that `keyed` names, made when absent with keyed.create; None without `keyed`, or
    while the host has none (a check-mode run before the first real one)."""
    if not keyed:
        return None
    kw = options("keyed", keyed, KEYED_OPTIONS)
    if not kw.get("key"):
        raise ReadError("keyed: needs key (the host's digest key file)")
    try:
        return secrets.digest_key(str(kw["key"]), boolean(kw.get("create", False)))
    except (OSError, ValueError) as exc:
        raise ReadError("keyed: %s" % exc) from exc


def observe(patterns, keyed, key):
    """files.observe_all of patterns; the secret files of `keyed` with their keyed digest under `key` (host_key) instead
    of their sha256."""
    observed = files.observe_all(patterns)
    if not keyed:
        return observed
    return secrets.keyed_observations(observed, [str(x) for x in keyed.get("paths") or []], key)


def options(name, given, known):
    return cuda_measure.suboptions(name, given, known, error=ReadError)


def read_unit(run, given, boolean, digest=unit_logic.plain_digest):
    """The unit (service/unit.py read) with its refusal; digest: how the values of its environment files that are not
    shown are digested (unit_logic.keyed_digest under the host's key in a reading)."""
    kw = options("unit", given, UNIT_OPTIONS)
    if not kw.get("unit") or not kw.get("venv"):
        raise ReadError("unit: needs unit (the unit's name) and venv")
    kw["port"] = int(kw.get("port", 30000))
    kw["keep"] = boolean(kw.get("keep", True))
    kw["exclude"] = list(kw.get("exclude") or [])
    kw["command"] = [str(x) for x in kw.get("command") or []]
    kw["show"] = [str(x) for x in kw.get("show") or []]
    try:
        got = unit_logic.read(run, digest=digest, **kw)
    except unit_logic.UnitReadError as exc:
        raise ReadError(exc.msg, exc.result) from exc
    # what systemd would refuse to start, whatever the run changes (a drop-in's missing unit, a required
    # EnvironmentFile= that is gone): the play refuses it under the lock, before the first role changes anything
    name = kw["unit"][: -len(".service")] if kw["unit"].endswith(".service") else kw["unit"]
    got["refusal"] = unit_logic.dropin_refusal(got, "dropin" if kw["keep"] else "unit", name)
    # served beyond loopback with no API key: refused there too with sglang_service_require_api_key (issue 58 item 6)
    why = unit_logic.exposure(got.get("argv"), got.get("listen"))
    got["exposure"] = "%s.service: %s" % (name, why) if why else ""
    return got


def gather_facts(module, run, given, known):
    try:
        p = cuda_measure.facts_options(given, known)
        return cuda_measure.in_unit(module, run, p, module.boolean, pwd.getpwuid(os.getuid()).pw_dir)[0]
    except (cuda_measure.MeasureError, commands.ModuleFailure) as exc:  # the latter: a fail_json under Quiet
        raise ReadError(exc.msg, exc.result) from exc


def look(module, given, listen, marker):
    """One look at the service (service_http.look): its health endpoint, then the sampled request. It listens where
    the unit read in this call says, else where the health options' listen says. No look at a state the marker does
    not vouch for (service_probe.look_refusal)."""
    kw = options("health", given, HEALTH_OPTIONS)
    venv_now = os.path.realpath(kw["venv"]) if kw.get("venv") and os.path.lexists(kw["venv"]) else None
    refusal = service_probe.look_refusal(marker, venv_now)
    if refusal:
        return {"stands": False, "not_looked": refusal, "answered": None, "status": None, "sample": None}
    listen = kw.get("listen") or listen
    if not kw.get("path") or not listen:
        raise ReadError("health: needs path (the health endpoint's), and listen ({host, port}) unless the unit is read in this call")
    if kw.get("sample_path"):
        refused = health_logic.sample_checked(kw.get("sample_body"))
        if refused:
            raise ReadError("health: sample_body: %s" % refused)
    base = service_http.base_url(listen)

    def unit_state():
        return service_http.unit_state(module, kw.get("unit"))

    try:
        timeouts = [int(default if kw.get(k) is None else kw[k]) for k, default in (("request_timeout", 5), ("sample_timeout", 30))]
    except (TypeError, ValueError) as exc:
        raise ReadError("health: request_timeout and sample_timeout must be integers") from exc
    sample_url = base + kw["sample_path"] if kw.get("sample_path") else None

    def owner(props):
        return service_http.answer_owner(base + kw["path"], props)

    got = service_http.look(base + kw["path"], sample_url, kw.get("sample_body"), timeouts[0], timeouts[1], unit_state, owner if kw.get("unit") else None)
    return dict(got, not_looked=None)
