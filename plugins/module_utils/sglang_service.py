# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure pieces of the service role: its environment from facts, the ready verdict, the marker.

Also imported by the boot-time validator on the host (stdlib only, no Ansible).
"""

from __future__ import annotations

import hashlib
import json
import re

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_TARGET = re.compile(r"^(\d+)(\d)([af]?)$")
_ERROR_LINE = re.compile(r"(fatal )?error: .*")
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


def arch_list(target_archs):
    """FlashInfer's own target archs ('120a', '90a') -> FLASHINFER_CUDA_ARCH_LIST ('9.0a 12.0a')."""
    entries = []
    for arch in target_archs:
        m = _TARGET.match(str(arch))
        if not m:
            raise ValueError("target arch %r is not FlashInfer's MAJORMINOR[a|f] spelling" % arch)
        entries.append((int(m.group(1)), int(m.group(2)), m.group(3)))
    return " ".join("%d.%d%s" % e for e in sorted(set(entries)))


def environment(cuda_home, venv, cache_dir, archs, build_log="", ld_library_path=(), extra=None):
    """The service's environment: toolkit first on PATH, pinned archs and cache, nothing implicit."""
    extra = dict(extra or {})
    clash = sorted(set(extra) & set(MANAGED_KEYS))
    if clash:
        raise ValueError("sglang_service_environment may not set %s (derived from the facts)" % ", ".join(clash))
    env = {
        "CUDA_HOME": cuda_home,
        "PATH": "%s/bin:%s/bin:%s" % (cuda_home.rstrip("/"), venv.rstrip("/"), SYSTEM_PATH),
        "FLASHINFER_CUDA_ARCH_LIST": archs,
        "FLASHINFER_WORKSPACE_BASE": cache_dir,
        "SGLANG_CACHE_DIR": cache_dir.rstrip("/") + "/sglang",
    }
    if build_log:
        env["FLASHINFER_JIT_BUILD_LOG"] = build_log
    if ld_library_path:
        env["LD_LIBRARY_PATH"] = ":".join(ld_library_path)
    env.update({str(k): str(v) for k, v in extra.items()})
    return env


def systemd_quote(word, exec_arg=False):
    """One word of a unit setting (an ExecStart= argument or a whole Environment= assignment), quoted for
    systemd: backslashes and quotes escaped, % doubled (no specifier expansion), $ doubled in ExecStart=
    (no variable expansion), newlines refused."""
    word = str(word)
    if "\n" in word:
        raise ValueError("%r: newlines cannot be passed through a unit file" % word)
    word = word.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    return '"%s"' % (word.replace("$", "$$") if exec_arg else word)


def inputs_digest(env, venv_target, toolkit_version, archs):
    """What a validation vouches for: any change here needs a new smoke."""
    data = json.dumps({"env": env, "venv": venv_target, "toolkit": toolkit_version, "archs": archs}, sort_keys=True)
    return hashlib.sha256(data.encode()).hexdigest()[:16]


def verdict(failed, smoke, ready_without_launch):
    """(ready, reason) from a smoke result (the jit_smoke module's return or the boot validator's)."""
    steps = (smoke or {}).get("steps") or {}
    if failed:
        return False, "smoke failed: %s" % _short((smoke or {}).get("msg") or "no result")
    launch = steps.get("launch") or {}
    if not launch.get("launched"):
        if not ready_without_launch:
            return False, "no kernel launched (%s) and sglang_service_ready_without_launch is false" % launch.get("reason", "no launch step")
        return True, "compiled%s; not launched (%s), allowed by policy" % (_warm_note(steps), launch.get("reason", "?"))
    return True, "kernel launched (%s)%s" % (launch.get("detail", "ok"), _warm_note(steps))


def _short(msg):
    """First line of a failure, plus the compiler's first error line when the output has one."""
    lines = str(msg).strip().splitlines() or [""]
    first = lines[0][:300]
    err = next((m.group(0) for m in map(_ERROR_LINE.search, lines[1:]) if m), None)
    return "%s (%s)" % (first, err[:300]) if err else first


def _warm_note(steps):
    mods = (steps.get("warm") or {}).get("modules") or []
    return ", JIT cache warm (%s)" % " ".join(m["name"] for m in mods) if mods else ""


def needs_validation(marker, digest):
    """(bool, why) for an existing marker (None when absent) and the current inputs' digest."""
    if not marker:
        return True, "no ready marker"
    if not marker.get("ready"):
        return True, "marked not ready: %s" % marker.get("reason", "?")
    if marker.get("inputs") != digest:
        return True, "validated inputs differ from the current ones"
    return False, "ready for the current inputs"


def marker(ready, reason, now, digest, venv_target, toolkit, archs, versions, smoke, previous=None, source="ansible"):
    """The facts.d JSON. last_good is the newest state that passed (kept across failures)."""
    steps = (smoke or {}).get("steps") or {}
    out = {
        "ready": bool(ready),
        "reason": reason,
        "time": now,
        "source": source,
        "inputs": digest,
        "toolkit": toolkit,
        "venv": venv_target,
        "versions": versions or {},
        "archs": archs,
        "launched": bool((steps.get("launch") or {}).get("launched")),
        "smoke": steps,
    }
    last_good = (previous or {}).get("last_good")
    if ready:
        last_good = {"venv": venv_target, "inputs": digest, "time": now}
    out["last_good"] = last_good
    return out
