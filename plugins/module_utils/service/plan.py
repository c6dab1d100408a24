# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The service role's plan from one cuda_facts answer: FlashInfer's verdict on the toolkit, the arch list SGLang's
workers will agree with, and the environment the unit gets. The first refusal wins, in that order."""

from __future__ import annotations

import re

from ansible_collections.blackwell.inference.plugins.module_utils.common import owned_paths, paths, values
from ansible_collections.blackwell.inference.plugins.module_utils.cuda import devices
from ansible_collections.blackwell.inference.plugins.module_utils.service import health as service_health
from ansible_collections.blackwell.inference.plugins.module_utils.service import http as service_http
from ansible_collections.blackwell.inference.plugins.module_utils.service import list as service_list
from ansible_collections.blackwell.inference.plugins.module_utils.service import ready
from ansible_collections.blackwell.inference.plugins.module_utils.service import settings as sglang_service
from ansible_collections.blackwell.inference.plugins.module_utils.service import unit as unit_command
from ansible_collections.blackwell.inference.plugins.module_utils.sglang import rules as sglang_rules


def arch_choice(target_archs, sglang=None, override=""):
    """FLASHINFER_CUDA_ARCH_LIST for the unit: SGLang's value with SGLang in the venv, FlashInfer's own without it,
    `override` (sglang_service_arch_list) when it agrees. {archs, error, source}."""
    own = sglang_service.arch_list(target_archs) if target_archs else ""
    archs, error = sglang_rules.service_arch_list(own, sglang, override or "")
    source = "sglang_service_arch_list" if override else ("sglang" if (sglang or {}).get("arch_list") else "flashinfer")
    return {"archs": archs or "", "error": error, "source": source}


def flashinfer_refusal(facts, cuda_home, venv, arch_list="", check_mode=False):
    """Why FlashInfer in the service's venv would not accept this toolkit and arch list, '' when it would (or when a
    check run has no venv yet to ask)."""
    fi = facts.get("flashinfer") or {}
    if (facts.get("venv") is None and check_mode) or (fi.get("accepted") and fi.get("target_archs")):
        return ""
    return "FlashInfer %s in %s would not accept sglang_service_cuda_home=%s (CUDA %s from %s) with sglang_service_arch_list='%s' for GPUs %s: %s%s" % (
        fi.get("version") or "?",
        venv,
        cuda_home,
        fi.get("cuda_version") or "?",
        fi.get("cuda_version_source") or "?",
        arch_list or "",
        ", ".join(facts.get("compute_capabilities") or []) or "none",
        fi.get("error") or "no target archs",
        ("; the service would fail with: %s" % fi["symptom"]) if fi.get("symptom") else "",
    )


def environment_refusal(environment):
    """'' when sglang_service_environment is a mapping of variable names, none of them one the role derives from the
    facts (sglang_service.MANAGED_KEYS, their one home); else the refusal, naming the variable and the keys."""
    if not isinstance(environment, dict):
        return "sglang_service_environment: a mapping of variable names (got %r)." % (environment,)
    names = [str(k) for k in environment]
    if set(names) & set(sglang_service.MANAGED_KEYS) or not all(service_list.ENV_NAME.match(k) for k in names):
        return "sglang_service_environment: variable names, none of %s (got %s)." % (", ".join(sglang_service.MANAGED_KEYS), names)
    return ""


def _match(pattern, value):
    """Whether `value` matches; a pattern anchored with $ must cover the whole value (re's $ also matches before a
    final newline: "sglang\\n" is no account name)."""
    value = "" if value is None else str(value)
    m = re.match(pattern, value)
    return m is not None and (not pattern.endswith("$") or m.end() == len(value))


_UNIT_NAME = r"^[A-Za-z0-9@_.-]+$"
_ACCOUNT = r"^[a-z_][a-z0-9_-]*$"
_ARCH_LIST = r"^([0-9]+\.[0-9]+[af]?)([ ,;][0-9]+\.[0-9]+[af]?)*$"


def variable_refusals(v):
    """The sglang_service role's variables checked before any change: [] when they are all good, else one refusal per
    variable that is wrong, each naming it and what it takes. v: the role's variables by name (sglang_service_*), and
    `extras_error` (sglang_service_extra_services' error, checked with the first service only: None otherwise), and
    `sglang_venv_root` where the venv role's root is known (the cache directory stays out of it)."""
    name, mode = str(v["sglang_service_name"]), v["sglang_service_mode"]
    cuda_home = str(v["sglang_service_cuda_home"])
    secret = v["sglang_service_secret_environment"] or {}
    sample = v["sglang_service_sample_request"]
    sample_refusal = "" if not sample else service_health.sample_checked(dict(sample)) or ""
    env_refusal = environment_refusal(v["sglang_service_environment"])
    # the service user owns it (chown, mode 0750) and its units write there (ReadWritePaths=)
    cache_refusal = owned_paths.service_dir_refusal(v["sglang_service_cache_dir"], v.get("sglang_venv_root"))
    # the boot units write the textfile there (ReadWritePaths=): the same rules as the cache
    textfile = v.get("sglang_service_textfile_dir") or ""
    textfile_refusal = owned_paths.service_dir_refusal(textfile, v.get("sglang_venv_root")) if textfile else ""
    checks = [
        (_match(_UNIT_NAME, name) and not name.endswith(".service"), "sglang_service_name: a unit name without .service (got %s)." % name),
        (
            _match(_ACCOUNT, v["sglang_service_user"]) and (mode == "dropin" or v["sglang_service_user"] != "root"),
            "sglang_service_user: an account name, not root when the role owns the unit (got %s)." % v["sglang_service_user"],
        ),
        (_match(_ACCOUNT, v["sglang_service_group"]), "sglang_service_group: a group name (got %s)." % v["sglang_service_group"]),
        (
            _match("^/", cuda_home) and not owned_paths.same_path(cuda_home, "/usr/local/cuda"),
            "sglang_service_cuda_home: an absolute path other than /usr/local/cuda, which stays with CUDA 12.8's users (got %s)." % cuda_home,
        ),
        (_match("^/", v["sglang_service_venv"]), "sglang_service_venv: an absolute path (got %s)." % v["sglang_service_venv"]),
        (cache_refusal == "", "sglang_service_cache_dir: a directory the service user may own: %s." % cache_refusal),
        (
            v["sglang_service_jit_build_log"] == "" or _match("^/", v["sglang_service_jit_build_log"]),
            "sglang_service_jit_build_log: empty or an absolute path (got %s)." % v["sglang_service_jit_build_log"],
        ),
        (
            v["sglang_service_arch_list"] == "" or _match(_ARCH_LIST, v["sglang_service_arch_list"]),
            "sglang_service_arch_list: empty or MAJOR.MINOR[a|f] entries like 12.0a (got '%s')." % v["sglang_service_arch_list"],
        ),
        (
            all(_match("^/", p) for p in v["sglang_service_ld_library_path"]),
            "sglang_service_ld_library_path: absolute paths (got %s)." % (v["sglang_service_ld_library_path"],),
        ),
        (env_refusal == "", env_refusal),
        (
            all(_match(r"^[A-Za-z_][A-Za-z0-9_]*$", k) for k in secret),
            "sglang_service_secret_environment: variable names (values not shown).",
        ),
        (1 <= values.to_int(v["sglang_service_port"]) <= 65535, "sglang_service_port: 1-65535 (got %s)." % v["sglang_service_port"]),
        (_match("^/", v["sglang_service_health_path"]), "sglang_service_health_path: starts with / (got %s)." % v["sglang_service_health_path"]),
        (values.to_int(v["sglang_service_health_timeout"]) > 0, "sglang_service_health_timeout: seconds > 0 (got %s)." % v["sglang_service_health_timeout"]),
        (
            sample_refusal == "",
            "sglang_service_sample_request: SGLang's /generate body that samples, or {} for none (%s)." % sample_refusal,
        ),
        (_match("^/", v["sglang_service_sample_path"]), "sglang_service_sample_path: starts with / (got %s)." % v["sglang_service_sample_path"]),
        (values.to_int(v["sglang_service_sample_timeout"]) > 0, "sglang_service_sample_timeout: seconds > 0 (got %s)." % v["sglang_service_sample_timeout"]),
        (values.to_int(v["sglang_service_smoke_timeout"]) > 0, "sglang_service_smoke_timeout: seconds > 0 (got %s)." % v["sglang_service_smoke_timeout"]),
        (
            len(v["sglang_service_command"] or []) > 0 or len(v["sglang_service_model_path"] or "") > 0,
            "sglang_service_model_path or sglang_service_command: one of them must be set.",
        ),
        (_match("^[a-z][a-z0-9_]*$", v["sglang_service_marker"]), "sglang_service_marker: a lower-case identifier (got %s)." % v["sglang_service_marker"]),
        (
            textfile_refusal == "",
            "sglang_service_textfile_dir: empty (off) or the textfile collector's directory, in the boot units' ReadWritePaths=: %s." % textfile_refusal,
        ),
        (v.get("extras_error") is None, v.get("extras_error")),
    ]
    refused = [msg for ok, msg in checks if not ok]
    named = {msg.split(":")[0] for msg in refused}
    return refused + [msg for msg in unit_value_refusals(v) if msg.split(":")[0] not in named]  # one refusal per variable


# The variables whose values the role writes into its unit, drop-in or secrets file, by kind: words of Environment= or
# ExecStart= keep a tab inside their quotes; the rest take none. sglang_service_name, _user and _group are names their
# own patterns above refuse control characters in.
_UNIT_WORDS = ("sglang_service_command", "sglang_service_args")
_UNIT_PATHS = ("sglang_service_cuda_home", "sglang_service_venv", "sglang_service_cache_dir", "sglang_service_jit_build_log", "sglang_service_textfile_dir")
_UNIT_TEXTS = ("sglang_service_model_path", "sglang_service_host")


def _first_control(items, tab):
    """(label, why) of the first of [(label, value)] holding a control character, else None."""
    return next(((label, why) for label, why in ((label, sglang_service.control_character(value, tab)) for label, value in items) if why), None)


def unit_value_refusals(v):
    """One refusal per variable whose value would reach a unit, drop-in or environment file with a control character
    (sglang_service.control_character: \\r, \\n or \\0 would start a new line of the unit, as in issue 45's
    NCCL_DEBUG="x\\rExecStartPre=+..."), or a path systemd would refuse (a .. component), each naming the variable, the
    key or word, and what is wrong. A secret's value is never shown."""
    out = []
    env = v.get("sglang_service_environment")
    if isinstance(env, dict):
        hit = _first_control(((str(k), val) for k, val in env.items()), tab=True)
        if hit:
            out.append("sglang_service_environment: %s %s; refused." % hit)
    secret = v.get("sglang_service_secret_environment")
    if isinstance(secret, dict):
        # written by to_json into an EnvironmentFile: JSON's escapes (\\t, \\u00fc) are not systemd's, which keeps them
        # as written; a tab or a character beyond ASCII would not be read back
        hit = _first_control(((str(k), val) for k, val in secret.items()), tab=False)
        wide = next((str(k) for k, val in secret.items() if not str(val).isascii()), None)
        if hit:
            out.append("sglang_service_secret_environment: %s %s; refused (value not shown)." % hit)
        elif wide:
            out.append(
                "sglang_service_secret_environment: %s holds a character beyond ASCII, which the secrets file would carry "
                "as a JSON escape that systemd keeps as written; refused (value not shown)." % wide
            )
    for name in _UNIT_WORDS:
        words = v.get(name) or []
        hit = _first_control((("word %d" % i, w) for i, w in enumerate(words)), tab=True) if isinstance(words, list) else None
        if hit:
            out.append("%s: %s %s; refused." % (name, *hit))
    for name in _UNIT_PATHS + _UNIT_TEXTS:
        value = v.get(name)
        why = sglang_service.control_character(value) if value is not None else ""
        if why:
            out.append("%s: %r %s; refused." % (name, str(value), why))
        elif name in _UNIT_PATHS and ".." in str(value or "").split("/"):
            out.append("%s: a path without .. components, which systemd refuses (got %s)." % (name, value))
    hit = _first_control((("entry %d" % i, p) for i, p in enumerate(v.get("sglang_service_ld_library_path") or [])), tab=False)
    if hit:
        out.append("sglang_service_ld_library_path: %s %s; refused." % hit)
    return out


def _skipped(result):
    return result is None or bool((result or {}).get("skipped"))


def summary(marker, facts):
    """One service's summary at the end of its run (sglang_service_summary, a line of the per-host summary and the
    fleet table), from the marker as it was before the run and what the run found. facts: unit, mode, environment,
    need (needs_validation), probe_health (the preflight's look), health_now (the health check's result; skipped
    when the look stood), live_smoke (--tags verify's jit_smoke result; None or skipped when it did not run),
    ready_without_launch, verdict and smoke (this run's validation; None when none ran), unit_show (the unit as read),
    command (the service's argv) and foreign (the plan's: another file of the unit overrides what the role set, so
    the host is not ready). The readiness is ready.readiness over the health that counts now."""
    marker = marker or {}
    health_now = facts.get("health_now")
    health = (facts.get("probe_health") if _skipped(health_now) else health_now) or {}
    live_smoke = facts.get("live_smoke")
    live = not _skipped(live_smoke)
    live_verdict = ready.smoke_verdict(live_smoke, facts.get("ready_without_launch")) if live else None
    # another file of the unit overrides what the role set (foreign): not ready, whatever the marker and the health say
    readiness = ready.readiness(marker, facts.get("need"), health, live_verdict, facts.get("foreign"), marker_damage=facts.get("marker_damage"))
    if live:
        steps = live_smoke.get("steps", {})
        source = "live (--tags verify)"
    else:
        smoke = facts.get("smoke") or {}
        steps = smoke["steps"] if "steps" in smoke else marker.get("smoke", {})
        source = "this run" if facts.get("verdict") is not None else "ready marker of %s" % marker.get("time", "never")
    unit_show = facts.get("unit_show") or {}
    command = {"source": unit_show.get("source"), "argv": facts.get("command")}
    if unit_show.get("replaced"):
        command["old"] = unit_show.get("old")
    return {
        "unit": facts.get("unit"),
        "mode": facts.get("mode"),
        "environment": facts.get("environment"),
        "ready": readiness["ready"],
        "state": readiness["state"],
        "reason": readiness["reason"],
        "smoke": steps,
        "smoke_source": source,
        "health": health.get("status", -1),
        "sample": health.get("sample"),
        "causes": health.get("causes", []),
        "command": command,
        "last_good": marker.get("last_good"),
    }


def plan(facts, cuda_home, venv, cache_dir, arch_list="", build_log="", ld_library_path=(), extra=None, check_mode=False, unit=None, mode=None):
    """{error} for the first refusal, else {error: None, archs, arch_source, env, venv_target, versions, toolkit}.
    A sglang_service_environment that sets a derived key raises ValueError (named by sglang_service.environment).
    unit: the unit as unit_command.read() read it; another file of it that changes the environment or the command the
    role sets (an operator's later drop-in) is named in `foreign` (foreign_refusal; None when none): the role changes
    nothing of the service then, and the summary says NOT READY with it."""
    refusal = flashinfer_refusal(facts, cuda_home, venv, arch_list, check_mode)
    if refusal:
        return {"error": refusal}
    fi = facts.get("flashinfer") or {}
    choice = arch_choice(fi.get("target_archs") or [], facts.get("sglang"), arch_list)
    if choice["error"]:
        return {"error": choice["error"]}
    found = facts.get("venv") or {}
    target = found.get("target") or venv  # the venv the link points at: FlashInfer's workspace is that venv's own
    env = sglang_service.environment(cuda_home, venv, cache_dir, choice["archs"], build_log, ld_library_path, extra, target)
    return {
        "error": None,
        "foreign": foreign_refusal(unit, env, mode),
        # what the service runs with: env, and what the unit's other files add to it (the fingerprint's environment)
        "effective_env": unit_command.effective_environment((unit or {}).get("environment_steps") or [], env, (unit or {}).get("environment_files")),
        "archs": choice["archs"],
        "arch_source": choice["source"],
        "env": env,
        "venv_target": target,
        "versions": found.get("packages") or {},
        "toolkit": {"cuda_home": cuda_home, "cuda_version": fi.get("cuda_version")},
    }


def foreign_refusal(unit, env, mode=None):
    """Why the unit would not run what the role validates (None: it would): the files of the unit other than the role's
    own that override the environment or the command the role sets, each named with what it sets. The role never edits
    or removes such a file; the host is not ready until the operator does."""
    unit = unit or {}
    own_exec = {"dropin": "dropin", "unit": "unit"}.get(mode) if unit.get("source") != "none" else None
    found = unit_command.environment_conflicts(unit.get("environment_steps") or [], env, unit.get("environment_files"), own_exec)
    if not found:
        return None
    return (
        "The service would not run as the role sets it up and validates it: %s. The role does not change or remove "
        "another file of the unit: remove or fix it (then systemctl daemon-reload), or set the value through the role's "
        "variables." % "; ".join(found)
    )


def fingerprint_checksums(files, written, observed, reread=False):
    """The fingerprinted files' checksums without reading them again, or None when they must be read.

    written: this run's unit files call's checksums when it made its files so (None when it was skipped or only
    checked); observed: the preflight's observation of the paths (files.observe); reread: a file of `files` was written
    since by another task (the secrets file). A file the call did not cover is taken from the observation."""
    if reread:
        return None
    written = written or {}
    rest = [path for path in files if path not in written]
    seen = paths.observed_checksums(rest, observed or {})
    if seen is None:
        return None
    return {path: written[path] if path in written else seen[path] for path in files}


def fingerprint(marker, facts, cuda_home, env, venv_target, archs, files=None, policy=None, look=None):
    """What a validation vouches for and whether this host needs one, worked out once: {inputs (sglang_service.inputs),
    digest (their fingerprint), need ({needed, why}: ready.needs_validation against the ready marker; current, stale:
    ready.inputs_current, whether the marker vouches for these inputs, which the judge reads; resume and reason: the
    look given finds a validation the play never saw serve answered by the unit's own process: ready.resumable)}."""
    vouched = sglang_service.inputs(facts, cuda_home, env, venv_target, archs, files, policy)
    digest = sglang_service.inputs_digest(vouched)
    needed, why = ready.needs_validation(marker, digest, vouched)
    current, stale = ready.inputs_current(marker, digest, vouched)
    need = {"needed": needed, "why": why, "current": current, "stale": stale}
    # a validation that passed, which the preflight's look finds served by the unit's own process: confirmed, not redone
    if look is not None and ready.resumable(marker, current, look):
        need.update(needed=False, why="validated for the current inputs and answering", resume=True, reason=ready.confirmed_reason(marker))
    return {"inputs": vouched, "digest": digest, "need": need}


def unit_plan(unit, checked=None, mode=None, name=None, user=None, health_path="/health", sample_path="", sample_request=None):
    """What follows from the unit as read: the reading that counts (the preflight probe's, else the one site.yml's check
    play made), the drop-in refusal, the account the service runs as (sglang_service_user when the role owns the unit,
    the unit's own in dropin mode), and the URLs the health check asks (the sampled request's '' when
    sglang_service_sample_request is {}), and the units' DeviceAllow= rules (devices.allow_entries)."""
    unit = unit if unit is not None else (checked or {})
    base = service_http.base_url(unit.get("listen"))
    return {
        "unit": unit,
        "dropin_refusal": unit_command.dropin_refusal(unit, mode, name),
        "run_user": user if mode == "unit" else unit.get("user"),
        "health_url": base + str(health_path),
        "sample_url": base + str(sample_path) if sample_request else "",
        "device_allow": devices.allow_entries("rw"),
    }


def preflight(facts, cuda_home, venv, cache_dir, arch_list="", build_log="", ld_library_path=(), extra=None, check_mode=False, **kw):
    """The preflight's one plan: unit_plan over the unit (kw: unit, checked, mode, name, user, health_path, sample_path,
    sample_request) and plan over the facts. The unit's refusal is kept beside plan's `error` (it comes first)."""
    got = unit_plan(**kw)
    return dict(got, **plan(facts, cuda_home, venv, cache_dir, arch_list, build_log, ld_library_path, extra, check_mode, got["unit"], kw.get("mode")))


def device_refusals(facts, source=devices.PROC_DEVICES):
    """The units' DeviceAllow= rules against the GPUs nvidia-smi answers with (facts: blackwell_cuda, its gpus and
    device_majors; devices.refusal): {"read": why the host is refused as it was read, "uvm_loaded": the same once the
    role loaded nvidia-uvm since}, each '' when it is not refused."""
    facts = facts or {}
    majors, gpus = facts.get("device_majors"), bool(facts.get("gpus"))
    return {
        "read": devices.refusal(majors, gpus, source=source) or "",
        "uvm_loaded": devices.refusal(majors, gpus, source=source, uvm_loaded=True) or "",
    }


def state_files(role_files, mode):
    """The files the service is made of, by mode (role_files: the role's paths by name - unit, dropin, validate_unit,
    ready_unit, secrets, validate_config): `fingerprinted` (what a validation vouches for: the unit only when the role
    owns it, never the validator's settings, which carry the fingerprint) and `state` (the last good state's: the
    unit's path in both modes, so that a failed switch from dropin to unit mode takes the role's new unit away again,
    or puts the site's own back)."""
    fingerprinted = ([role_files["unit"]] if mode == "unit" else []) + [role_files[k] for k in ("dropin", "validate_unit", "ready_unit", "secrets")]
    return {
        "fingerprinted": fingerprinted,
        "state": fingerprinted + ([] if mode == "unit" else [role_files["unit"]]) + [role_files["validate_config"]],
    }


def cache_owner(run_user, group, mode):
    """Who owns the cache directories and the JIT workspace: the account the service runs as (root when there is none),
    and sglang_service_group only when the role owns the unit ('' in dropin mode: the user's own group)."""
    return {"owner": run_user or "root", "group": group if mode == "unit" else ""}


def probe_plan(facts, unit=None, proc_devices=devices.PROC_DEVICES, extra_services=None, primary=None, group=None, role_files=None, **options):
    """The service probe's plan (its action, on the controller): preflight's, and what else follows from the reading
    and the role's variables alone: `device_refusal` (device_refusals, with the path the majors were read from),
    `extra_services` (sglang_service_extra_services resolved against primary, the first service's variables:
    service/list.py extra_services' services; [] for a further service's own run, which gives none), `cache_owner`
    (cache_owner, with sglang_service_group), given role_files, `fingerprinted_files` and `state_files`
    (state_files), and `exposure` (unit.exposure: served beyond loopback with no API key; '' when not) with
    `exposure_refusal` (the same, naming the service, when options' require_api_key: sglang_service_require_api_key)."""
    require_api_key = bool(options.pop("require_api_key", False))
    out = preflight(facts, unit=unit, **options)
    out["device_refusal"] = device_refusals(facts, proc_devices)
    chosen = out.get("unit") or {}
    out["exposure"] = unit_command.exposure(chosen.get("argv"), chosen.get("listen"))
    out["exposure_refusal"] = ("%s.service: %s" % (options.get("name"), out["exposure"])) if require_api_key and out["exposure"] else ""
    out["extra_services"] = service_list.extra_services(extra_services, primary)["services"] if primary else []
    out["cache_owner"] = cache_owner(out["run_user"], group, options.get("mode"))
    if role_files is not None:
        files_by_mode = state_files(role_files, options.get("mode"))
        out["fingerprinted_files"], out["state_files"] = files_by_mode["fingerprinted"], files_by_mode["state"]
    return out


def files(planned, probe, entries, mode, secrets=False, boot_validation=True, check=False):
    """Which of the role's paths this run writes, and whether tasks/files.yml has anything to do, from the preflight's
    probe. entries: the role's paths as the paths module takes them, rendered (vars/main.yml __sglang_service_paths):
    `account` (a list), `validator` (a list), and one entry each for `unit`, `dropin`, `modules_load`, `validate_unit`,
    `ready_unit`, and `secrets_gone`, `validate_unit_gone`, `ready_unit_gone` (state absent). Only the entries this run
    wants are read. Returns {account, unit_files (the entries), account_pending, unit_files_pending (whether a paths call
    would change any), check_files (the check timer's units and its enablement link when `check`, else their
    removal: entries `check` and `check_gone`, lists) and check_files_pending, stale_workspaces (workspaces whose
    venv link no longer resolves; never this run's), adopt (a ready host's state becomes the last good one, unless a
    snapshot is there and reads; also the operator's own service a first drop-in run finds running), work}."""
    probe = probe or {}
    observed = probe.get("observed") or {}
    account = list(entries["account"]) + (list(entries["validator"]) if boot_validation else [])
    unit_files = [] if secrets else [entries["secrets_gone"]]
    unit_files += [entries["unit"]] if mode == "unit" else []
    unit_files += [entries["dropin"], entries["modules_load"]]
    unit_files += [entries["validate_unit"], entries["ready_unit"]] if boot_validation else [entries["validate_unit_gone"], entries["ready_unit_gone"]]
    stale = sglang_service.stale_workspaces(probe.get("gone_venv_links"), [(planned.get("env") or {}).get("FLASHINFER_WORKSPACE_BASE")])
    snapshot = probe.get("snapshot") or {}
    marker = probe.get("marker") or {}
    # the operator's own service, running before the role's first change in drop-in mode (no marker yet): the state a
    # failed first rollout goes back to, rather than a stopped service (issue 57 item 7)
    operators = mode == "dropin" and not marker and ((planned.get("unit") or {}).get("active_state") == "active")
    adopt = (bool(marker.get("ready")) or operators) and not (snapshot.get("exists") and snapshot.get("error") is None)
    account_pending = len(paths.pending(account, observed)) > 0
    unit_files_pending = len(paths.pending(unit_files, observed)) > 0
    check_files = list(entries.get("check" if check and boot_validation else "check_gone") or [])
    check_files_pending = bool(check_files) and len(paths.pending(check_files, observed)) > 0
    return {
        "account": account,
        "unit_files": unit_files,
        "account_pending": account_pending,
        "unit_files_pending": unit_files_pending,
        "check_files": check_files,
        "check_files_pending": check_files_pending,
        "stale_workspaces": stale,
        "adopt": adopt,
        "work": mode == "unit" or bool(secrets) or adopt or len(stale) > 0 or account_pending or unit_files_pending or check_files_pending,
    }
