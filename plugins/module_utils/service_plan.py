# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The service role's plan from one cuda_facts answer: FlashInfer's verdict on the toolkit, the arch list SGLang's
workers will agree with, and the environment the unit gets. The first refusal wins, in that order."""

from __future__ import annotations

from ansible_collections.blackwell.inference.plugins.module_utils import paths, service_list, sglang_rules, sglang_service


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


def probe_environment(environment, cuda_home, venv, arch_list=""):
    """The environment the preflight's probe measures FlashInfer in, before the plan exists: the role's variables'
    environment with CUDA_HOME and the unit's PATH (sglang_service.service_path), and sglang_service_arch_list when set."""
    env = {str(k): str(v) for k, v in (environment or {}).items()}
    env.update({"CUDA_HOME": str(cuda_home), "PATH": sglang_service.service_path(cuda_home, venv)})
    if arch_list:
        env["FLASHINFER_CUDA_ARCH_LIST"] = str(arch_list)
    return env


def plan(facts, cuda_home, venv, cache_dir, arch_list="", build_log="", ld_library_path=(), extra=None, check_mode=False):
    """{error} for the first refusal, else {error: None, archs, arch_source, env, venv_target, versions, toolkit}.
    A sglang_service_environment that sets a derived key raises ValueError (named by sglang_service.environment)."""
    refusal = flashinfer_refusal(facts, cuda_home, venv, arch_list, check_mode)
    if refusal:
        return {"error": refusal}
    fi = facts.get("flashinfer") or {}
    choice = arch_choice(fi.get("target_archs") or [], facts.get("sglang"), arch_list)
    if choice["error"]:
        return {"error": choice["error"]}
    found = facts.get("venv") or {}
    target = found.get("target") or venv  # the venv the link points at: FlashInfer's workspace is that venv's own
    return {
        "error": None,
        "archs": choice["archs"],
        "arch_source": choice["source"],
        "env": sglang_service.environment(cuda_home, venv, cache_dir, choice["archs"], build_log, ld_library_path, extra, target),
        "venv_target": target,
        "versions": found.get("packages") or {},
        "toolkit": {"cuda_home": cuda_home, "cuda_version": fi.get("cuda_version")},
    }


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
