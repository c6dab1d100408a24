# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The measure behind blackwell_cuda facts: GPUs and driver (one nvidia-smi call), the CUDA toolkits, the venv's
versions, and FlashInfer's (and SGLang's) answer in an environment, and every FlashInfer service on the host.
Shared by cuda_facts and toolkit_probe."""

from __future__ import annotations

import os

from ansible_collections.blackwell.inference.plugins.module_utils.common import systemd as systemd_env
from ansible_collections.blackwell.inference.plugins.module_utils.cuda import devices as systemd_devices
from ansible_collections.blackwell.inference.plugins.module_utils.cuda import nvidia_smi
from ansible_collections.blackwell.inference.plugins.module_utils.cuda import toolkits as cuda_toolkits
from ansible_collections.blackwell.inference.plugins.module_utils.flashinfer import rules as flashinfer_rules
from ansible_collections.blackwell.inference.plugins.module_utils.service import census as service_census
from ansible_collections.blackwell.inference.plugins.module_utils.sglang import rules as sglang_rules
from ansible_collections.blackwell.inference.plugins.module_utils.venv import info as venv_info

PROC_DRIVER_VERSION = "/proc/driver/nvidia/version"
# What FlashInfer and CUDA read from the environment; only these are returned (no secrets).
REPORTED_KEYS = (
    "CUDA_HOME",
    "CUDA_PATH",
    "PATH",
    "HOME",
    "CUDA_VISIBLE_DEVICES",
    "LD_LIBRARY_PATH",
    "FLASHINFER_CUDA_ARCH_LIST",
    "FLASHINFER_WORKSPACE_BASE",
    "FLASHINFER_NVCC",
    "SGLANG_CACHE_DIR",
)


class MeasureError(Exception):
    """A reading that is not an answer (nvidia-smi failing in a way no driver state explains, a venv that is not one);
    result: the command's rc/stdout/stderr when there was one."""

    def __init__(self, msg, result=None):
        super().__init__(msg)
        self.msg = msg
        self.result = result or {}


def gather_gpus(nvsmi, run):
    """(gpus, driver) from one nvidia-smi call (a second only for pre-R510 drivers)."""
    driver = {"present": False, "version": None, "branch": None, "cuda_version": None, "cuda_version_source": None, "open_kernel_module": None, "error": None}
    fields = nvidia_smi.QUERY_FIELDS
    res = run(nvidia_smi.query_argv(nvsmi, fields))
    if res.os_error:
        driver["error"] = "%s not runnable (%s)" % (nvsmi, res.os_error)
        return [], driver
    if res.rc != 0 and nvidia_smi.invalid_field(res.stdout + res.stderr) == "compute_cap":
        fields = nvidia_smi.LEGACY_QUERY_FIELDS
        res = run(nvidia_smi.query_argv(nvsmi, fields))
        driver["error"] = "driver too old for the compute_cap query field (needs about R510): compute capability unknown"
    if res.rc != 0:
        loaded, reason = nvidia_smi.classify_failure(res.rc, res.stdout, res.stderr)
        if loaded is None:
            raise MeasureError("nvidia-smi failed: %s" % reason, res.as_dict())
        driver["present"], driver["error"] = loaded, reason
        return [], driver
    try:
        gpus = nvidia_smi.parse_query(res.stdout, fields)
    except nvidia_smi.NvidiaSmiError as exc:
        raise MeasureError("unexpected nvidia-smi output: %s" % exc, res.as_dict()) from exc
    versions = sorted({g.pop("driver_version") for g in gpus} - {None})
    driver["present"] = True
    if versions:
        driver["version"] = versions[0]
        driver["branch"] = nvidia_smi.driver_branch(versions[0])
        driver["cuda_version"], driver["cuda_version_source"] = nvidia_smi.driver_cuda_version(versions[0])
    try:
        with open(PROC_DRIVER_VERSION, encoding="utf-8") as fh:
            driver["open_kernel_module"] = nvidia_smi.parse_proc_version(fh.read())
    except OSError:
        pass
    return gpus, driver


def gather_device_majors(path):
    """({name: major} of the nvidia* character devices path (/proc/devices) registers, error): one read; (None, why)
    when it cannot be read."""
    try:
        with open(path or systemd_devices.PROC_DEVICES, encoding="utf-8") as fh:
            return systemd_devices.nvidia_majors(fh.read()), None
    except OSError as exc:
        return None, "cannot read %s: %s" % (path, exc.strerror or exc)


def gather_toolkits(root, run):
    toolkits = [cuda_toolkits.describe_toolkit(p, run) for p in cuda_toolkits.find_toolkit_dirs(root)]
    default = cuda_toolkits.default_toolkit(root)
    if default is not None:
        match = [t for t in toolkits if os.path.realpath(t["path"]) == default["path"]]
        default["version"] = match[0]["version"] if match else None
    return toolkits, default


def gather_venv(venv, optional=False):
    link = (venv or "").rstrip("/") or venv  # the link itself, not what a trailing / follows to
    if not venv or (optional and not os.path.lexists(link)):
        return None, None
    try:
        python = venv_info.check_venv(venv)
    except venv_info.VenvError as exc:
        raise MeasureError(str(exc)) from exc
    sites = venv_info.site_packages(venv)
    packages = venv_info.installed_versions(sites)
    wanted = ("sglang", "flashinfer-python", "flashinfer-cubin", "flashinfer-jit-cache", "torch", "sglang-kernel", "sgl-kernel")
    target = os.path.realpath(link) if os.path.islink(link) else venv
    info = {"path": venv, "target": target, "python": python, "site_packages": sites, "packages": {k: packages[k] for k in wanted if k in packages}}
    return info, venv_info.torch_info(sites)


def predict(run, env, fi_version, sglang_version, torch_cuda, ccs, home_dir):
    """(flashinfer, sglang): FlashInfer's answer in env, and SGLang's layer over it when the venv has SGLang."""
    flashinfer = flashinfer_rules.predict(env, run, fi_version, torch_cuda, ccs, home_dir=home_dir)
    sglang = None
    if sglang_version:
        sglang = sglang_rules.layer(
            sglang_version, env, ccs, flashinfer, lambda wenv, wccs: flashinfer_rules.predict(wenv, run, fi_version, torch_cuda, wccs, home_dir=home_dir)
        )
    return flashinfer, sglang


def gather_services(run, gpus, managed_unit, home_dir):
    """service_census rows: every loaded service whose command runs a venv with FlashInfer, judged in its own
    environment (one systemctl show; nvcc only for a CUDA home the runner has not asked yet). Raises MeasureError."""
    res = run(service_census.show_argv())
    if not res.ok:
        raise MeasureError("cannot list the services (systemctl show)", res.as_dict())
    torch_cuda = {}

    def read_venv(path):
        if not os.path.isfile(os.path.join(path, "pyvenv.cfg")):
            return None
        try:
            info, torch = gather_venv(path)
        except MeasureError:
            return None
        torch_cuda[path] = torch["cuda"] if torch else None
        return info

    def judge(record, venv):
        env, _notes = service_census.unit_environment(record, systemd_env.read_text)
        packages = venv["packages"]
        ccs = flashinfer_rules.visible_ccs(gpus, env)
        return predict(run, env, packages["flashinfer-python"], packages.get("sglang"), torch_cuda.get(venv["path"]), ccs, env.get("HOME") or home_dir)

    return service_census.census(service_census.parse_records(res.stdout), managed_unit, read_venv, judge)


# the options another module's `facts` takes (service_probe's, service_health's), as cuda_facts names them
FACTS_DEFAULTS = {
    "nvidia_smi": "nvidia-smi",
    "environment": {},
    "unit": None,
    "venv": None,
    "venv_optional": False,
    "flashinfer_version": None,
    "toolkit_root": "/usr/local",
    "services": False,
    "proc_devices": systemd_devices.PROC_DEVICES,
}


def suboptions(name, given, known, required=(), error=MeasureError):
    """A dict option of a reading (links, apt_repo, facts, health, ...) checked: any option not in `known`, then any
    of `required` missing or empty, raises `error` (a MeasureError) naming them. Returns it as a new dict."""
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise error("%s: unsupported option(s) %s (known: %s)" % (name, ", ".join(unknown), ", ".join(known)))
    missing = [k for k in required if not given.get(k)]
    if missing:
        raise error("%s: needs %s" % (name, ", ".join(missing)))
    return dict(given)


def facts_options(given, known):
    """cuda_facts' options from a module's `facts` dict, limited to `known`, with cuda_facts' defaults. Raises
    MeasureError naming any other option."""
    suboptions("facts", given, known)
    p = {k: FACTS_DEFAULTS[k] for k in known}
    p.update(given)
    return p


def in_unit(module, run, p, boolean, home_dir):
    """(blackwell_cuda, env) as cuda_facts gives them for p: the measure in the unit's environment (p's environment
    over it) and, with p["services"], every FlashInfer service on the host. `boolean` reads a bool option (the
    module's). Raises MeasureError; fails the module when the unit cannot be read."""
    for key in ("venv_optional", "services"):
        if key in p:
            p[key] = boolean(p[key])
    env, env_notes = systemd_env.service_environment(module, run, p.get("unit"), p.get("environment") or {})
    facts = measure(run, p, env, env_notes, home_dir)
    if p.get("services"):
        facts["services"] = gather_services(run, facts["gpus"], p.get("unit"), home_dir)
    return facts, env


def measure(run, p, env, env_notes, home_dir):
    """blackwell_cuda for p (nvidia_smi, toolkit_root, and optionally venv, venv_optional, flashinfer_version,
    torch_cuda, proc_devices) in env. Raises MeasureError."""
    gpus, driver = gather_gpus(p["nvidia_smi"], run)
    device_majors, device_majors_error = gather_device_majors(p.get("proc_devices") or systemd_devices.PROC_DEVICES)
    toolkits, default = gather_toolkits(p["toolkit_root"], run)
    venv, torch = gather_venv(p.get("venv"), p.get("venv_optional", False))

    fi_version = p.get("flashinfer_version") or (venv or {}).get("packages", {}).get("flashinfer-python")
    torch_cuda = torch["cuda"] if torch else p.get("torch_cuda")
    ccs = flashinfer_rules.visible_ccs(gpus, env)
    sglang = None
    if fi_version:
        flashinfer, sglang = predict(run, env, fi_version, (venv or {}).get("packages", {}).get("sglang"), torch_cuda, ccs, home_dir)
    else:
        flashinfer = {
            "version": None,
            "accepted": False,
            "target_archs": [],
            "error": "flashinfer-python is not installed in venv=%s (set flashinfer_version to predict anyway)" % p.get("venv")
            if venv
            else "no venv given (set venv or flashinfer_version)" + (" (venv=%s does not exist yet)" % p.get("venv") if p.get("venv") else ""),
            "error_stage": "version",
        }
    facts = {
        "gpus": gpus,
        "compute_capabilities": nvidia_smi.summarize_gpus(gpus),
        "driver": driver,
        "device_majors": device_majors,
        "device_majors_error": device_majors_error,
        "toolkits": toolkits,
        "default_toolkit": default,
        "environment": {k: env[k] for k in REPORTED_KEYS if k in env},
        "environment_notes": env_notes,
        "venv": venv,
        "torch": torch,
        "torch_driver": nvidia_smi.torch_driver(torch, driver),
        "flashinfer": flashinfer,
        "sglang": sglang,
    }
    return facts
