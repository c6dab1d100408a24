# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What SGLang does to FlashInfer's inputs inside its workers, by SGLang version (no SGLang code here).

SGLang's `set_cuda_arch()` (sglang/srt/utils/common.py, srt/utils.py before 0.5.3), called first thing in
`ModelRunner.load_model` of every TP worker when FlashInfer is importable and CUDA is available, writes
the worker GPU's capability into the environment:

- 0.4.5 - 0.5.4.post2: `TORCH_CUDA_ARCH_LIST = "<major>.<minor>"` (+ "+PTX" on 9.0): FlashInfer's own list unchanged;
- 0.5.4.post3 - 0.5.23: `FLASHINFER_CUDA_ARCH_LIST = "<major>.<minor>" + ("a" if major >= 9 else "")`.

The switch came in a post release (0.5.4.post3), so versions compare with their post number. Read in 30 wheels from
0.4.0 (no set_cuda_arch yet) to 0.5.23; tests/integration/test_sglang_wheels.py runs the own set_cuda_arch of the
wheels at each boundary of this table against it.
`SGLANG_IS_FLASHINFER_AVAILABLE=false` turns it off. From 0.5.18 (not 0.5.17) `import sglang` also defaults
`FLASHINFER_WORKSPACE_BASE` to its `SGLANG_CACHE_DIR` (`~/.cache/sglang`) when it is unset
(`srt/environ.py`, `redirect_third_party_caches`).

FlashInfer fixes its JIT workspace when `flashinfer.jit` is first imported: a worker that imports FlashInfer
before `set_cuda_arch()` uses the unit's arch list, one that imports it after (0.5.23's sampler imports
`flashinfer.sampling` lazily) uses SGLang's. Only a unit environment that already says what SGLang will say
lands both in the same, warmed, workspace.
"""

from __future__ import annotations

import re

from ansible_collections.blackwell.inference.plugins.module_utils.cuda import arch as cuda_arch

_ANY_POST = 1 << 16  # the last release read stands for its post releases too
# (first version, last version read, the variable set_cuda_arch writes); versions as (major, minor, patch, post)
RULES = (
    ((0, 4, 5, 0), (0, 5, 4, 2), "TORCH_CUDA_ARCH_LIST"),
    ((0, 5, 4, 3), (0, 5, 23, _ANY_POST), "FLASHINFER_CUDA_ARCH_LIST"),
)
VERIFIED_UP_TO = (0, 5, 23)
WORKSPACE_DEFAULT_FROM = (0, 5, 18, 0)
_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:\.post(\d+))?")
_CC = re.compile(r"^(\d+)\.(\d+)$")


def version_key(version):
    """'0.5.4.post3' -> (0, 5, 4, 3), '0.5.4' -> (0, 5, 4, 0); None if unparsable (pre-releases count as the release)."""
    m = _VERSION.match(str(version or ""))
    return tuple(int(x or 0) for x in m.groups()) if m else None


def _name(key):
    """(0, 5, 4, 3) -> '0.5.4.post3', (0, 5, 5, 0) -> '0.5.5'."""
    return ".".join(map(str, key[:3])) + (".post%d" % key[3] if key[3] else "")


def sets(version):
    """The variable SGLang `version`'s set_cuda_arch writes (None: none), and a note when not read."""
    key = version_key(version)
    if key is None:
        return None, "sglang %r is not a version: no set_cuda_arch modelled" % (version,)
    if key < RULES[0][0]:
        return None, "sglang %s predates set_cuda_arch (modelled from 0.4.5, the first version read with it)" % version
    for first, last, var in RULES:
        if first <= key <= last:
            return var, None
    return RULES[-1][2], "sglang %s is newer than %s: modelled with the rules of %s on" % (
        version,
        ".".join(map(str, VERIFIED_UP_TO)),
        _name(RULES[-1][0]),
    )


def worker_arch_list(cc):
    """SGLang's value for a worker on a GPU of compute capability cc ('12.0' -> '12.0a', '8.9' -> '8.9')."""
    m = _CC.match(str(cc))
    if not m:
        raise ValueError("compute capability %r is not MAJOR.MINOR" % (cc,))
    major, minor = int(m.group(1)), int(m.group(2))
    return cuda_arch.entry(major, minor, "a" if major >= 9 else "")  # SGLang's rule: the arch-specific code from 9.0


def _enabled(env):
    # SGLang's get_bool_env_var: "true" and "1" in any case are true; anything else (also "yes", " true") is false
    return str((env or {}).get("SGLANG_IS_FLASHINFER_AVAILABLE", "true")).lower() in ("true", "1")


def _expand_home(path, home):
    """os.path.expanduser as SGLang's process applies it to SGLANG_CACHE_DIR, with the unit's HOME."""
    if home and (path == "~" or path.startswith("~/")):
        return (home.rstrip("/") + path[1:]) or "/"
    return path


def worker_env(version, env, cc):
    """The environment FlashInfer sees in a worker on GPU cc after SGLang's start-up, or None when SGLang leaves
    FlashInfer's arch list alone there."""
    var, _note = sets(version)
    if var != "FLASHINFER_CUDA_ARCH_LIST" or not _enabled(env):
        return None
    out = dict(env or {})
    out["FLASHINFER_CUDA_ARCH_LIST"] = worker_arch_list(cc)
    if "FLASHINFER_WORKSPACE_BASE" not in out and version_key(version) >= WORKSPACE_DEFAULT_FROM:
        home = out.get("HOME")
        out["FLASHINFER_WORKSPACE_BASE"] = _expand_home(out.get("SGLANG_CACHE_DIR", "~/.cache/sglang"), home)  # "" stays ""
    return out


def layer(version, env, ccs, unit, predict):
    """SGLang's layer over FlashInfer's own answer `unit` (flashinfer_rules.predict in the unit's environment).

    predict(env, ccs) -> FlashInfer facts in a worker's environment (for one GPU). Returns the `sglang` facts:
    version, sets (the variable), arch_list (what to write so both import orders agree; None when GPUs disagree
    or SGLang does not set it), workers (one per distinct compute capability: arch_list, target_archs,
    cache_dir, accepted, error, same_workspace), orders_agree, notes."""
    var, note = sets(version)
    res = {"version": version, "sets": var, "arch_list": None, "workers": [], "orders_agree": True, "notes": [note] if note else []}
    if var == "TORCH_CUDA_ARCH_LIST":
        res["notes"].append("sglang %s sets TORCH_CUDA_ARCH_LIST only: FlashInfer's own arch list holds in its workers" % version)
    if var == "FLASHINFER_CUDA_ARCH_LIST" and not _enabled(env):
        res["notes"].append("SGLANG_IS_FLASHINFER_AVAILABLE is off: set_cuda_arch leaves FlashInfer's arch list alone")
    for cc in sorted(set(ccs or [])):
        wenv = worker_env(version, env, cc)
        if wenv is None:
            continue
        fi = predict(wenv, [cc])
        same = bool(unit and fi.get("cache_dir") and fi.get("cache_dir") == unit.get("cache_dir"))
        res["workers"].append(
            {
                "compute_capability": cc,
                "arch_list": wenv["FLASHINFER_CUDA_ARCH_LIST"],
                "target_archs": fi.get("target_archs") or [],
                "cache_dir": fi.get("cache_dir"),
                "accepted": bool(fi.get("accepted")),
                "error": fi.get("error"),
                "same_workspace": same,
            }
        )
    lists = sorted({w["arch_list"] for w in res["workers"]})
    if len(lists) == 1:
        res["arch_list"] = lists[0]
    elif len(lists) > 1:
        res["notes"].append(
            "GPUs of compute capabilities %s get different lists from SGLang (%s): no one unit environment matches every worker"
            % (", ".join(w["compute_capability"] for w in res["workers"]), ", ".join(lists))
        )
    res["orders_agree"] = all(w["same_workspace"] and w["accepted"] for w in res["workers"])
    return res


def _cc_key(cc):
    try:
        return tuple(int(x) for x in str(cc).split("."))
    except ValueError:
        return (float("inf"), str(cc))


def mixed_refusal(sglang):
    """Why one service cannot serve these GPUs, '' when it can: SGLang's workers set different arch lists on GPUs of
    different compute capabilities (a mixed host), so whatever the unit says, a worker whose FlashInfer import comes
    after set_cuda_arch() lands in a JIT workspace (e.g. 90a beside 120a) that the one warm-up never fills, and its
    first sampled request compiles FlashInfer's sampling module cold. No single list can fix that (FlashInfer's own
    `9.0a 12.0f` matches neither worker, any sglang_service_arch_list matches at most one), so the fix is one service
    per GPU kind; the message puts the workers' lists and that fix first (the fleet table shows 300 characters)."""
    by_list = {}
    for worker in (sglang or {}).get("workers") or []:
        by_list.setdefault(worker.get("arch_list"), []).append(worker.get("compute_capability"))
    if len(by_list) < 2:
        return ""
    groups = sorted(((sorted(ccs, key=_cc_key), archs) for archs, ccs in by_list.items()), key=lambda g: _cc_key(g[0][0]))
    ccs = [cc for group, _archs in groups for cc in group]
    return (
        "one SGLang %s service over GPUs of CC %s: its set_cuda_arch() sets FLASHINFER_CUDA_ARCH_LIST=%s in its workers. "
        "Serve each GPU kind by its own service (CUDA_VISIBLE_DEVICES in sglang_service_environment, "
        "sglang_service_extra_services[].gpus for the others): no one unit environment, FlashInfer's own list or any "
        "sglang_service_arch_list, lands every worker in the JIT workspace the warm-up fills, so each worker's first "
        "sampled request would compile FlashInfer's sampling module cold"
        % (
            sglang.get("version"),
            " and ".join(ccs),
            " and ".join("%s on CC %s" % (archs, "/".join(group)) for group, archs in groups),
        )
    )


def service_arch_list(own, sglang, override=""):
    """(FLASHINFER_CUDA_ARCH_LIST to write, error): SGLang's value when the venv's SGLang sets one (so both
    import orders land in one workspace), else FlashInfer's own; refused (error) when SGLang's workers on the
    service's GPUs set different lists (mixed_refusal: an override cannot help), or when an override
    disagrees with SGLang's value (error names sglang_service_arch_list)."""
    mixed = mixed_refusal(sglang)
    if mixed:
        return None, mixed
    wanted = (sglang or {}).get("arch_list")
    refused = [w for w in (sglang or {}).get("workers") or [] if not w.get("accepted")]
    if wanted and refused and not override:
        return None, "FlashInfer in SGLang %s's workers would not accept FLASHINFER_CUDA_ARCH_LIST=%r: %s" % (
            sglang.get("version"),
            wanted,
            "; ".join("CC %s: %s" % (w.get("compute_capability"), w.get("error") or "not accepted") for w in refused),
        )
    if override:
        if wanted and override.split() != wanted.split():
            return None, (
                "sglang_service_arch_list=%r disagrees with SGLang %s, which sets FLASHINFER_CUDA_ARCH_LIST=%r in its workers: "
                "a worker importing FlashInfer after that would use another JIT workspace than the one warmed. "
                "Allowed: %r, or leave sglang_service_arch_list empty" % (override, sglang.get("version"), wanted, wanted)
            )
        return override, None
    return (wanted or own), None
