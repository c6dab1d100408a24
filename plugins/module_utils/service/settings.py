# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure pieces of the service role: its environment from facts, the unit's settings, what a validation vouches for
and what a rollback says (READY itself, the verdict and the marker: ready.py)."""

from __future__ import annotations

import base64
import hashlib
import json
import posixpath
import re

from ansible_collections.blackwell.inference.plugins.module_utils.common.systemd import SYSTEM_PATH
from ansible_collections.blackwell.inference.plugins.module_utils.cuda import arch as cuda_arch
from ansible_collections.blackwell.inference.plugins.module_utils.service import ready

# Written by the role, never taken from sglang_service_environment (they come from the facts).
MANAGED_KEYS = (
    "CUDA_HOME",
    "PATH",
    "FLASHINFER_CUDA_ARCH_LIST",
    "FLASHINFER_WORKSPACE_BASE",
    "SGLANG_CACHE_DIR",
    "FLASHINFER_JIT_BUILD_LOG",
    "LD_LIBRARY_PATH",
)

# The system-call and process sandbox both units add to their hardening (one home: the templates render these lines
# and tests/gpu/run.sh's sandboxed run takes them). Measured on the lab host: the JIT smoke (nvcc under ninja, the
# host compiler) and FlashInfer's warm-up pass inside it and need nothing beyond @system-service; CUDA's own calls
# (the driver's ioctls, mmaps, memory policy) are proven by tests/gpu/run.sh on a GPU. ProtectProc=invisible hides
# other users' processes from the service user; the validator (root) keeps no CAP_SYS_PTRACE, so it sees only its own.
SANDBOX = (
    ("RestrictNamespaces", "yes"),
    ("SystemCallFilter", "@system-service"),
    ("ProtectProc", "invisible"),
)


def arch_list(target_archs):
    """FlashInfer's own target archs ('120a', '90a') -> FLASHINFER_CUDA_ARCH_LIST ('9.0a 12.0a')."""
    return cuda_arch.entries_for_targets(target_archs)


def workspace(cache_dir, venv_target):
    """FlashInfer's workspace base for one venv: <cache_dir>/jit/<venv directory name>.

    FlashInfer keys its JIT cache by version and archs only, and its build.ninja embeds the venv's
    paths: two venvs sharing one workspace rebuild it for each other (a rollback to the previous venv
    would compile at start). One workspace per venv keeps each venv's cache warm until it is pruned."""
    name = posixpath.basename(str(venv_target or "").rstrip("/"))
    if not name or name in (".", ".."):
        raise ValueError("venv target %r has no directory name to key the JIT workspace by" % venv_target)
    return "%s/jit/%s" % (str(cache_dir).rstrip("/"), name)


def stale_workspaces(link_stats, keep=()):
    """Workspaces whose venv is gone: the workspace directories whose <workspace>/venv link no longer resolves, from
    either the paths of the dangling links (`find <cache>/jit -mindepth 2 -maxdepth 2 -name venv -xtype l`, one call)
    or `stat` (follow) results looped over each link. Workspaces in `keep` are never stale."""
    keep = {str(k).rstrip("/") for k in keep if k}
    stale = set()
    for res in link_stats or []:
        if isinstance(res, str):
            path = res.strip()  # a dangling link, as find printed it
        else:
            path = str(res.get("item") or "")
            if (res.get("stat") or {}).get("exists", True):
                continue
        if not path:
            continue
        ws = posixpath.dirname(path.rstrip("/"))
        if ws and ws not in keep:
            stale.add(ws)
    return sorted(stale)


def service_path(cuda_home, venv):
    """The service's PATH: the toolkit's bin first (FlashInfer's nvcc lookup), then the venv's, then systemd's own."""
    return "%s/bin:%s/bin:%s" % (str(cuda_home).rstrip("/"), str(venv).rstrip("/"), SYSTEM_PATH)


def probe_environment(environment, cuda_home, venv, arch_list=""):
    """The environment the preflight's probe measures FlashInfer in, before the plan exists: the role's variables'
    environment with CUDA_HOME and the unit's PATH (service_path), and sglang_service_arch_list when set."""
    env = {str(k): str(v) for k, v in (environment or {}).items()}
    env.update({"CUDA_HOME": str(cuda_home), "PATH": service_path(cuda_home, venv)})
    if arch_list:
        env["FLASHINFER_CUDA_ARCH_LIST"] = str(arch_list)
    return env


def environment(cuda_home, venv, cache_dir, archs, build_log="", ld_library_path=(), extra=None, venv_target=None):
    """The service's environment: toolkit first on PATH, pinned archs and cache, nothing implicit.
    With `venv_target` (the venv the link points at), FlashInfer's workspace is that venv's own
    (`workspace()`); without it, the cache directory itself (the layout before one workspace per venv)."""
    extra = dict(extra or {})
    clash = sorted(set(extra) & set(MANAGED_KEYS))
    if clash:
        raise ValueError("sglang_service_environment may not set %s (derived from the facts)" % ", ".join(clash))
    env = {
        "CUDA_HOME": cuda_home,
        "PATH": service_path(cuda_home, venv),
        "FLASHINFER_CUDA_ARCH_LIST": archs,
        "FLASHINFER_WORKSPACE_BASE": workspace(cache_dir, venv_target) if venv_target else cache_dir,
        "SGLANG_CACHE_DIR": cache_dir.rstrip("/") + "/sglang",
    }
    if build_log:
        env["FLASHINFER_JIT_BUILD_LOG"] = build_log
    if ld_library_path:
        env["LD_LIBRARY_PATH"] = ":".join(ld_library_path)
    env.update({str(k): str(v) for k, v in extra.items()})
    return env


# Control characters cannot pass through a unit file: systemd's line reader ends a line at \n, \r and \0 (the
# issue-45 attack: "x\rExecStartPre=+..." became a root ExecStartPre=), and the rest would not be read back as written.
# A tab is kept inside a quoted word (Environment=, ExecStart=) and a quoted environment-file value, nowhere else here.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_CONTROL_BUT_TAB = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_NEW_LINE = "\n\r\x00"
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# what systemd strips around a setting's value (its WHITESPACE)
_WHITESPACE = " \t\n\r"
# the first word of an Exec*= line may carry these prefixes (+ runs it as root); systemd reads them after unquoting
_EXEC_PREFIXES = "-@:+!|"


def control_character(value, tab=False):
    """'' when `value` holds no control character (below 0x20, or 0x7f; a tab allowed with tab=True), else which one,
    where, and what systemd would make of it: 'holds a control character (\\r at 1), which systemd would read as a
    new line'."""
    value = str(value)
    m = (_CONTROL_BUT_TAB if tab else _CONTROL).search(value)
    if not m:
        return ""
    what = "read as a new line" if m.group() in _NEW_LINE else "not read back as written"
    return "holds a control character (%s at %d), which systemd would %s" % (repr(m.group())[1:-1], m.start(), what)


def _no_control(value, setting, tab=False):
    found = control_character(value, tab)
    if found:
        raise ValueError("%s %r %s; refused" % (setting, str(value), found))
    return str(value)


def _ends_escaped(value):
    """Whether `value` ends in an odd run of backslashes: at a line's end systemd joins the next line to it."""
    return (len(value) - len(value.rstrip("\\"))) % 2 == 1


def _plain_path(path, setting):
    path = _no_control(path, setting)
    if not path.startswith("/") or ".." in path.split("/"):
        raise ValueError("%s %r: an absolute path without .. components" % (setting, path))
    return path


def systemd_quote(word, exec_arg=False, verbatim=False):
    """One word of a unit setting (an ExecStart= argument or a whole Environment= assignment), quoted for
    systemd: backslashes and quotes escaped, % doubled (no specifier expansion), $ doubled in ExecStart=
    (no variable expansion); control characters refused (a tab is kept inside the quotes). verbatim: a word of the
    unit's own ExecStart, kept as the operator wrote it: its specifiers and $VARIABLES stay for systemd to expand."""
    word = _no_control(word, "ExecStart= argument" if exec_arg else "Environment= assignment", tab=True)
    word = word.replace("\\", "\\\\").replace('"', '\\"')
    if verbatim:
        return '"%s"' % word
    word = word.replace("%", "%%")
    return '"%s"' % (word.replace("$", "$$") if exec_arg else word)


def systemd_environment(key, value):
    """One Environment= assignment, KEY=value, quoted (systemd unquotes it, unescapes C escapes and expands
    specifiers; never $)."""
    if not _ENV_NAME.match(str(key)):
        raise ValueError("Environment= %r: not a variable name" % str(key))
    return systemd_quote("%s=%s" % (key, _no_control(value, "Environment= %s" % key, tab=True)))


def systemd_exec(argv):
    """An Exec*= command line from its words: each quoted (systemd_quote); the first, the program, must not start with
    a prefix systemd reads after unquoting (-@:+!|; + runs it as root) and holds no $ (systemd never expands the
    program's path, so $$ would stay)."""
    words = [str(w) for w in argv or []]
    if not words or not words[0]:
        raise ValueError("ExecStart=: no program")
    if words[0][0] in _EXEC_PREFIXES or "$" in words[0]:
        raise ValueError("ExecStart= program %r: starts with one of %s or holds a $" % (words[0], _EXEC_PREFIXES))
    return " ".join(systemd_quote(w, True) for w in words)


def systemd_exec_kept(argv):
    """The unit's own ExecStart kept by a drop-in (only its interpreter moved): its arguments as the operator wrote
    them, specifiers (%i) and variables (${PORT}) left for systemd to expand, as in the unit (issue 57 item 10)."""
    words = [str(w) for w in argv or []]
    systemd_exec(words[:1])  # the program as systemd_exec checks it
    return " ".join([systemd_quote(words[0], True)] + [systemd_quote(w, True, verbatim=True) for w in words[1:]])


def systemd_description(text):
    """Description=: taken as written (no unquoting), specifiers expanded: % doubled. What systemd cannot keep is
    refused: control characters, whitespace at either end (stripped), a trailing backslash (joins the next line)."""
    text = _no_control(text, "Description=")
    if text != text.strip(_WHITESPACE) or _ends_escaped(text):
        raise ValueError("Description= %r: starts or ends with whitespace or a backslash, which systemd drops" % text)
    return text.replace("%", "%%")


def systemd_path(path):
    """One path of ReadWritePaths= (and the other namespace path lists): systemd unquotes each word (backslash takes the
    next character as it is, no C escapes) and expands specifiers. Quoted, backslashes and quotes escaped, % doubled.
    An absolute path without .. (systemd refuses one); control characters refused."""
    path = _plain_path(path, "ReadWritePaths=")
    return '"%s"' % path.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")


def systemd_env_file_path(path):
    """EnvironmentFile=: the whole value is the path (no unquoting), specifiers expanded: % doubled. Refused: control
    characters, a relative path or .., whitespace at the end (stripped), a trailing backslash (joins the next line)."""
    path = _plain_path(path, "EnvironmentFile=")
    if path != path.rstrip(_WHITESPACE) or _ends_escaped(path):
        raise ValueError("EnvironmentFile= %r: ends with whitespace or a backslash, which systemd drops" % path)
    return path.replace("%", "%%")


# systemd_escape's settings: each value as its setting reads it (systemd_value)
SYSTEMD_SETTINGS = {
    "Description": systemd_description,
    "Environment": systemd_environment,
    "EnvironmentFile": systemd_env_file_path,
    "ExecStart": systemd_exec,
    "ExecStart kept": systemd_exec_kept,
    "ReadWritePaths": systemd_path,
    "word": systemd_quote,
}


def systemd_value(value, setting, name=None):
    """value written for a unit's `setting` (SYSTEMD_SETTINGS): Environment= takes the variable's name, ReadWritePaths=
    one path or a list (joined by spaces), ExecStart= the command's words. Refuses what systemd would not read back."""
    if setting not in SYSTEMD_SETTINGS:
        raise ValueError("systemd setting %r: not one of %s" % (setting, ", ".join(sorted(SYSTEMD_SETTINGS))))
    if setting == "Environment":
        if name is None:
            raise ValueError("Environment=: no variable name")
        return systemd_environment(name, value)
    if setting == "ReadWritePaths" and isinstance(value, (list, tuple)):
        return " ".join(systemd_path(p) for p in value)
    return SYSTEMD_SETTINGS[setting](value)


def inputs(facts, cuda_home, env, venv_target, archs, files=None, policy=None):
    """Everything a validation vouches for, from cuda_facts' blackwell_cuda facts: the GPUs (count and compute
    capabilities), the driver, the toolkit's full version (patch level), the venv, the environment, the
    unit files' checksums and the validation policy. Any change here needs a new smoke."""
    facts = facts or {}
    home = str(cuda_home).rstrip("/")
    toolkit = next((t for t in facts.get("toolkits") or [] if str(t.get("path", "")).rstrip("/") == home), {})
    return {
        "gpus": sorted(str(g.get("compute_capability")) for g in facts.get("gpus") or []),
        "driver": (facts.get("driver") or {}).get("version"),
        "toolkit": {
            "cuda_home": home,
            "version": toolkit.get("version"),
            "curand_headers": toolkit.get("has_curand_headers"),
            "driver_stubs": toolkit.get("has_driver_stubs"),
        },
        "flashinfer_cuda": (facts.get("flashinfer") or {}).get("cuda_version"),
        "venv": venv_target,
        "env": dict(env or {}),
        "archs": archs,
        "files": dict(files or {}),
        "policy": dict(policy or {}),
    }


def inputs_digest(vouched):
    """A short fingerprint of inputs()."""
    return hashlib.sha256(json.dumps(vouched, sort_keys=True).encode()).hexdigest()[:16]


def rewarm_note(rewarm):
    """What the rollback's JIT re-warm of the last good state did ('' when it did not run)."""
    rewarm = rewarm or {}
    if not rewarm or rewarm.get("skipped"):
        return ""
    if rewarm.get("failed"):
        return "its JIT cache could NOT be re-warmed (%s); " % ready.short(rewarm.get("msg") or "failed")
    mods = ((rewarm.get("steps") or {}).get("warm") or {}).get("modules") or []
    compiled = [m["name"] for m in mods if m.get("compiled")]
    return "its JIT cache re-warmed (%s); " % ("compiled " + " ".join(compiled) if compiled else "nothing to compile")


def last_good_policy(settings, marker, warm, user):
    """The JIT modules to re-warm, and the user, of the last good state a rollback puts back: not those of the failed
    change (its sglang_service_jit_warm may list other modules, which the restored service never loads).

    settings is ansible.builtin.slurp's result for the restored boot validator settings (the last good state's own
    file: skipped or absent when boot validation is off); marker is the ready marker as it was before this run, whose
    vouched policy is the last good one's when its inputs are last_good's. Else the current variables.
    Returns {"warm": [...], "user": str, "source": "settings" | "marker" | "variables"}."""
    content = (settings or {}).get("content") if isinstance(settings, dict) else None
    if content:
        try:
            data = json.loads(base64.b64decode(content).decode())
        except (ValueError, UnicodeDecodeError):
            data = None
        if isinstance(data, dict) and isinstance(data.get("warm"), list):
            return {"warm": list(data["warm"]), "user": data.get("user") or "", "source": "settings"}
    marker = marker if isinstance(marker, dict) else {}
    last_good = marker.get("last_good") or {}
    policy = (marker.get("vouched") or {}).get("policy") or {}
    if last_good.get("inputs") and last_good.get("inputs") == marker.get("inputs") and isinstance(policy.get("warm"), list):
        return {"warm": list(policy["warm"]), "user": policy.get("user") or "", "source": "marker"}
    return {"warm": list(warm or []), "user": user or "", "source": "variables"}


def rollback_note(restore, rewarm, health_back, restart, unit, restarted, venv=None, venv_failed=False):
    """One sentence of what a rollback did: what was put back (and what was NOT), the JIT re-warm, and whether the
    previous service answers again. restore is service_snapshot's result (a failed one lists what it put back in
    `restored` and each file it could not in `errors`), health_back service_health's (or a skipped result), venv the
    sglang_venv role's rollback result sglang_venv_rollback ({path, target, switched, missing}; None when the snapshot
    had no venv link); venv_failed: that role's rollback entry failed."""
    restore = restore or {}
    snapshot = restore.get("snapshot")
    if not snapshot:
        what = "stopped" if restarted else "not restarted"
        if restore.get("failed"):
            return "the last good state could NOT be read (%s); %s %s" % (ready.short(restore.get("msg") or "failed"), unit, what)
        return "no last good state to restore; %s %s" % (unit, what)
    steps = list(restore.get("restored") or [])
    steps += ["%s NOT put back" % str(e).split(": ", 1)[0] for e in restore.get("errors") or []]
    venv = venv if isinstance(venv, dict) else {}
    if venv_failed:
        steps.append("link %s NOT put back: the sglang_venv role's rollback failed" % ((snapshot.get("link") or {}).get("path") or venv.get("path")))
    elif venv.get("missing"):
        steps.append("link %s NOT put back: the venv %s is gone" % (venv.get("path"), venv.get("target")))
    elif venv.get("switched"):
        steps.append("link %s -> %s" % (venv.get("path"), venv.get("target")))
    part = " in part" if restore.get("failed") or venv_failed else ""
    steps = ", ".join(steps) or "every file was as it was"
    note = "restored the last good state of %s%s (%s); %s" % (snapshot.get("time"), part, steps, rewarm_note(rewarm))
    if not restart:
        return note + "the service was left alone (sglang_service_restart is false)"
    health_back = health_back or {}
    if health_back.get("status") == 200:
        return note + "the previous service answers again"
    return note + "the previous service does NOT answer either: it %s" % (health_back.get("msg") or "was not asked")


def _failed(result):
    return isinstance(result, dict) and bool(result.get("failed"))


def rollback_errors(restore, venv_back=None, reload=None, start=None, stop=None):
    """The rollback's steps that put things back or start them and failed, one line each ("<step>: <why>"): each file
    service_snapshot could not put back (or its one message when it failed before or after them), the sglang_venv
    role's rollback entry ({failed, msg} recorded by the rescue around it), the daemon-reload, the start of the last
    good state or the stop of the failed new one. Skipped and successful results name nothing. The re-warm and the
    health wait are not here: the note says how they went."""
    out = []
    if _failed(restore):
        out += ["put back the files: %s" % ready.short(e) for e in restore.get("errors") or []] or [
            "put back the files: %s" % ready.short(restore.get("msg") or "failed")
        ]
    for step, result in (
        ("put the venv link back", venv_back),
        ("reload systemd", reload),
        ("start the last good state", start),
        ("stop the failed new state", stop),
    ):
        if _failed(result):
            out.append("%s: %s" % (step, ready.short(result.get("msg") or "failed")))
    return out


def rollback_outcome(
    restore, cause, host, marker_path, unit, restart, restarted, venv=None, venv_back=None, reload=None, start=None, stop=None, rewarm=None, health_back=None
):
    """What a rollback says when it is over, every step having run: {"note", "errors", "reason", "msg"}.

    venv is sglang_venv_rollback (its rollback entry's result), used only when the snapshot has a venv link;
    venv_back the rescue's {failed, msg} when that entry failed. note is rollback_note's sentence; errors
    rollback_errors' lines; reason the failed marker's (the cause, the note, then every restore error); msg the play's
    one failure: "<host> is NOT READY: <cause>. <note>. Marker: <path>." and then one line per restore step that
    failed."""
    if not isinstance(((restore or {}).get("snapshot") or {}).get("link"), dict):
        venv = None  # the snapshot had no venv link: the venv role's rollback did not run
    note = rollback_note(restore, rewarm, health_back, restart, unit, restarted, venv, venv_failed=_failed(venv_back))
    errors = rollback_errors(restore, venv_back, reload, start, stop)
    reason = "%s; %s" % (cause, note)
    msg = "%s is %s: %s. %s. Marker: %s." % (host, ready.NOT_READY, cause, note, marker_path)
    if errors:
        reason += "; restore steps that failed: " + "; ".join(errors)
        msg += "\n%d restore step%s failed (the others ran):\n" % (len(errors), "" if len(errors) == 1 else "s")
        msg += "\n".join("- " + e for e in errors)
    return {"note": note, "errors": errors, "reason": reason, "msg": msg}
