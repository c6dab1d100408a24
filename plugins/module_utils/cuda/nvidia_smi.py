# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse one `nvidia-smi --query-gpu` call and the driver facts around it. Pure functions."""

from __future__ import annotations

import csv
import re

QUERY_FIELDS = ("index", "name", "uuid", "compute_cap", "driver_version", "memory.total")
# compute_cap is a valid query field from about R510 on; older drivers get the same query without it.
LEGACY_QUERY_FIELDS = tuple(f for f in QUERY_FIELDS if f != "compute_cap")

# Highest CUDA version each driver branch supports (NVIDIA CUDA Toolkit release notes,
# "CUDA Toolkit and Corresponding Driver Versions"; what `nvidia-smi` prints as "CUDA Version").
DRIVER_BRANCH_CUDA = {
    590: "13.1",
    580: "13.0",
    575: "12.9",
    570: "12.8",
    565: "12.7",
    560: "12.6",
    555: "12.5",
    550: "12.4",
    545: "12.3",
    535: "12.2",
    530: "12.1",
    525: "12.0",
    520: "11.8",
    515: "11.7",
    510: "11.6",
    470: "11.4",
}

_NA = re.compile(r"^\[(N/A|Not Supported|Unknown Error|Insufficient Permissions|GPU is lost)\]$")
_CC = re.compile(r"^\d+\.\d+$")
_DRIVER = re.compile(r"^\d+\.\d+(\.\d+)?$")
_INVALID_FIELD = re.compile(r'Field "([^"]+)" is not a valid field to query')


class NvidiaSmiError(ValueError):
    """nvidia-smi answered, but not in the format asked for."""


def query_argv(nvidia_smi, fields=QUERY_FIELDS):
    return [nvidia_smi, "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits"]


def _value(raw):
    raw = raw.strip()
    if raw == "" or _NA.match(raw):
        return None
    return raw


def parse_query(stdout, fields=QUERY_FIELDS):
    """Turn the csv,noheader,nounits answer into a list of GPU dicts. Raises NvidiaSmiError."""
    gpus = []
    for lineno, row in enumerate(csv.reader(stdout.splitlines(), skipinitialspace=True), start=1):
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != len(fields):
            raise NvidiaSmiError(
                "line %d of nvidia-smi output has %d fields, expected %d (%s): %r" % (lineno, len(row), len(fields), ",".join(fields), ",".join(row))
            )
        rec = {f: _value(v) for f, v in zip(fields, row)}
        if rec["index"] is None or not rec["index"].isdigit():
            raise NvidiaSmiError("line %d: GPU index %r is not a number" % (lineno, rec["index"]))
        cc = rec.get("compute_cap")
        if cc is not None and not _CC.match(cc):
            raise NvidiaSmiError("line %d: compute capability %r is not MAJOR.MINOR" % (lineno, cc))
        drv = rec["driver_version"]
        if drv is not None and not _DRIVER.match(drv):
            raise NvidiaSmiError("line %d: driver version %r is not a version" % (lineno, drv))
        mem = rec["memory.total"]
        if mem is not None and not mem.isdigit():
            raise NvidiaSmiError("line %d: memory.total %r is not MiB" % (lineno, mem))
        gpus.append(
            {
                "index": int(rec["index"]),
                "name": rec["name"],
                "uuid": rec["uuid"],
                "compute_capability": cc,
                "memory_mib": int(mem) if mem is not None else None,
                "driver_version": drv,
            }
        )
    return gpus


def invalid_field(output):
    """Name of the field an old driver refused (`Field "compute_cap" is not a valid field to query.`)."""
    m = _INVALID_FIELD.search(output or "")
    return m.group(1) if m else None


def classify_failure(rc, stdout, stderr):
    """Say what a failed nvidia-smi call means: (driver_loaded, reason)."""
    text = " ".join(((stdout or "") + " " + (stderr or "")).split())
    if "No devices were found" in text:
        return True, "driver loaded but no NVIDIA GPU was found"
    if "couldn't communicate with the NVIDIA driver" in text:
        return False, "nvidia-smi cannot talk to the NVIDIA driver (module not loaded or version mismatch)"
    if "Driver/library version mismatch" in text:
        return False, "NVIDIA driver/library version mismatch (reboot or reload the kernel module)"
    return None, "nvidia-smi exited with rc=%s: %s" % (rc, text or "(no output)")


def driver_branch(version):
    if not version:
        return None
    return int(version.split(".", 1)[0])


def driver_cuda_version(version, driver_api_version=None):
    """Highest CUDA the driver supports: from cuDriverGetVersion when known, else from the branch table.

    Returns (version or None, source). driver_api_version is the integer cuDriverGetVersion gives
    (13000 = 13.0).
    """
    if driver_api_version:
        return "%d.%d" % (driver_api_version // 1000, (driver_api_version % 1000) // 10), "libcuda"
    branch = driver_branch(version)
    if branch is None:
        return None, None
    if branch in DRIVER_BRANCH_CUDA:
        return DRIVER_BRANCH_CUDA[branch], "driver_branch_table"
    return None, "unknown driver branch R%d" % branch


def parse_proc_version(text):
    """True for the open kernel module, False for the proprietary one, None when unknown.

    /proc/driver/nvidia/version, first line, e.g.
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build ..."
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.124.06  ..."
    """
    for line in (text or "").splitlines():
        if line.startswith("NVRM version:"):
            return "Open Kernel Module" in line
    return None


def summarize_gpus(gpus):
    """Distinct compute capabilities present, sorted, e.g. ["9.0", "12.0"]."""
    ccs = {g["compute_capability"] for g in gpus if g.get("compute_capability")}
    return sorted(ccs, key=lambda c: tuple(int(x) for x in c.split(".")))


def _major_minor(version):
    """(12, 8) from "12.8" or "12.8.1"; None when it is not MAJOR.MINOR[...]."""
    m = re.match(r"^(\d+)\.(\d+)", str(version or ""))
    return (int(m.group(1)), int(m.group(2))) if m else None


def oldest_branch_for(cuda_version):
    """The oldest driver branch of DRIVER_BRANCH_CUDA whose highest CUDA is at least cuda_version, or None."""
    want = _major_minor(cuda_version)
    fits = [b for b, c in DRIVER_BRANCH_CUDA.items() if want and _major_minor(c) >= want]
    return min(fits) if fits else None


def driver_fix(torch_cuda, driver_cuda):
    """The two ways out of a torch whose CUDA runtime is newer than the driver supports."""
    branch = oldest_branch_for(torch_cuda)
    return "upgrade the NVIDIA driver to one that supports CUDA %s%s, or pin a torch built for CUDA <= %s (a +cuXYZ wheel no newer than cu%s)" % (
        torch_cuda,
        " (R%d or later)" % branch if branch else "",
        driver_cuda,
        str(driver_cuda).replace(".", ""),
    )


def torch_driver(torch, driver):
    """Whether the venv's torch CUDA runtime fits the driver: {torch_cuda, driver_cuda, ok, msg}.

    torch: {version, cuda} as read from torch/version.py (None: no torch); driver: the driver facts (present,
    version, cuda_version = the highest CUDA it supports). Compared as MAJOR.MINOR:
    - torch's CUDA <= the driver's: ok (CUDA's backward compatibility);
    - a newer major: not ok, the runtime refuses the driver (cudaErrorInsufficientDriver; torch warns "The NVIDIA
      driver on your system is too old" and sees no GPU);
    - the same major, a newer minor: not ok either. It may start under CUDA minor-version compatibility, but PTX
      made by torch's newer toolchain does not JIT on this driver (cudaErrorUnsupportedPtxVersion) and the runtime's
      newer features are missing: conservative, since which of torch's kernels need either is not known here.
    ok is None when either side is unknown: no torch, a torch without CUDA (CPU or ROCm build), no driver, or a
    driver whose highest CUDA is not known."""
    torch_cuda = (torch or {}).get("cuda")
    driver = driver or {}
    driver_cuda = driver.get("cuda_version")
    out = {"torch_cuda": torch_cuda, "driver_cuda": driver_cuda, "ok": None}
    t, d = _major_minor(torch_cuda), _major_minor(driver_cuda)
    what = "torch %s" % ((torch or {}).get("version") or "")
    what = what.rstrip()
    drv = "driver %s" % driver["version"] if driver.get("version") else "the driver"
    if not torch:
        out["msg"] = "no torch in the venv: nothing to compare with the driver"
    elif not torch_cuda:
        out["msg"] = "%s has no CUDA runtime (a CPU or ROCm build): nothing to compare with the driver" % what
    elif not driver.get("present") or not driver.get("version"):
        out["msg"] = "no NVIDIA driver answered (%s): %s's CUDA %s cannot be checked against it" % (driver.get("error") or "not present", what, torch_cuda)
    elif not d:
        out["msg"] = "the highest CUDA %s supports is not known (%s): %s's CUDA %s cannot be checked against it" % (
            drv,
            driver.get("cuda_version_source") or "no CUDA version",
            what,
            torch_cuda,
        )
    elif not t:
        out["msg"] = "%s's CUDA %r is not MAJOR.MINOR: it cannot be checked against the driver" % (what, torch_cuda)
    elif t <= d:
        out["ok"] = True
        out["msg"] = "%s's CUDA %s runtime is within what %s supports (CUDA %s)" % (what, torch_cuda, drv, driver_cuda)
    else:
        out["ok"] = False
        if t[0] > d[0]:
            why = "a CUDA %d runtime refuses a CUDA %d driver (cudaErrorInsufficientDriver: torch sees no GPU)" % (t[0], d[0])
        else:
            why = (
                "it can start only under CUDA minor-version compatibility, where PTX from its newer toolchain does not "
                "JIT on this driver (cudaErrorUnsupportedPtxVersion) and CUDA %s's newer features are missing" % torch_cuda
            )
        fix = driver_fix(torch_cuda, driver_cuda)
        out["msg"] = "%s is built for CUDA %s, newer than %s supports (CUDA %s): %s; fix: %s" % (what, torch_cuda, drv, driver_cuda, why, fix)
    return out
