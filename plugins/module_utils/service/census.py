# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every FlashInfer service on the host: the loaded systemd services whose command starts in a Python venv that has
FlashInfer, and FlashInfer's verdict (with SGLang's layer when that venv has SGLang) in each one's own environment.

A forgotten unit (an EAGLE-3 deployment still on CUDA 12.8's PATH) crashes the way the seeds' service did; the
managed service's checks never see it. Pure: the caller runs `systemctl show` once and reads the venvs."""

from __future__ import annotations

import re

from ansible_collections.blackwell.inference.plugins.module_utils.common import systemd as systemd_env
from ansible_collections.blackwell.inference.plugins.module_utils.common.systemd import SYSTEM_PATH
from ansible_collections.blackwell.inference.plugins.module_utils.sglang import rules as sglang_rules

SHOW_PROPERTIES = ("Id", "LoadState", "ActiveState", "SubState", "ExecStart", "Environment", "EnvironmentFiles", "DropInPaths")
# the service role's drop-in (both modes): a unit that has it is the role's, the first service or a further one
ROLE_DROPIN = "50-blackwell-inference.conf"
_PATH = re.compile(r"(?:^|[{;]\s*)path=(?P<path>[^ ;]+)")
_VENV_BIN = re.compile(r"^(?P<venv>/.+)/bin/[^/]+$")


def show_argv():
    """One `systemctl show` for every loaded service (patterns match the units in memory: running, failed, enabled)."""
    return ["systemctl", "show", "--no-pager", "--type=service"] + ["--property=%s" % p for p in SHOW_PROPERTIES] + ["--", "*.service"]


def parse_records(stdout):
    """`systemctl show` of several units (blocks separated by blank lines) -> [props] (systemd_env.parse_show each)."""
    records, block = [], []
    for line in [*stdout.splitlines(), ""]:
        if line.strip():
            block.append(line)
        elif block:
            records.append(systemd_env.parse_show("\n".join(block)))
            block = []
    return records


def programs(exec_start_values):
    """The programs of ExecStart ("{ path=/opt/v/bin/python ; argv[]=... ; ... }", one per command line)."""
    found = []
    for value in exec_start_values or []:
        for m in _PATH.finditer(value):
            if m.group("path") not in found:
                found.append(m.group("path"))
    return found


def venv_candidates(record):
    """Directories a unit's commands start in (<dir>/bin/<program>): a venv when <dir>/pyvenv.cfg exists."""
    found = []
    for program in programs(record.get("ExecStart")):
        m = _VENV_BIN.match(program)
        if m and m.group("venv") not in found:
            found.append(m.group("venv"))
    return found


def first(record, key, default=None):
    values = record.get(key) or [default]
    return values[0]


def verdict(flashinfer, sglang):
    """(accepted, error) of a unit: FlashInfer's own answer in its environment, then SGLang's workers (SGLang rewrites
    the arch list before its lazy FlashInfer import, so a worker may refuse what the unit accepts, or the reverse)."""
    if not flashinfer.get("accepted"):
        return False, flashinfer.get("error") or "not accepted"
    refused = [w for w in (sglang or {}).get("workers") or [] if not w.get("accepted")]
    if refused:
        return False, "; ".join("SGLang %s's worker on CC %s: %s" % (sglang.get("version"), w.get("compute_capability"), w.get("error")) for w in refused)
    return True, None


def cold_jit(sglang):
    """Why an accepted unit's SGLang workers would still compile FlashInfer cold, '' when they would not: GPUs of
    several kinds in one service (sglang_rules.mixed_refusal), or workers whose set_cuda_arch() moves them to another
    JIT workspace than the unit's environment names (the warm-up fills the unit's; each worker's first sampled request
    then compiles FlashInfer's sampling module, every TP worker waiting on it)."""
    mixed = sglang_rules.mixed_refusal(sglang)
    if mixed:
        return mixed
    moved = [w for w in (sglang or {}).get("workers") or [] if w.get("accepted") and w.get("same_workspace") is False]
    if not moved:
        return ""
    lists = " / ".join(sorted({w.get("arch_list") for w in moved if w.get("arch_list")}))
    workspaces = ", ".join(sorted({w.get("cache_dir") or "?" for w in moved}))
    return (
        "SGLang %s's workers set FLASHINFER_CUDA_ARCH_LIST=%s and use JIT workspace %s, not the one the unit's "
        "environment names: each worker's first sampled request compiles FlashInfer's sampling module cold "
        "(set the unit's FLASHINFER_CUDA_ARCH_LIST to %s)" % (sglang.get("version"), lists or "?", workspaces, lists or "SGLang's")
    )


def entry(record, venv, flashinfer, sglang, managed):
    """One unit's row: what it runs, where FlashInfer's CUDA comes from, the archs, the verdict."""
    accepted, error = verdict(flashinfer, sglang)
    workers = (sglang or {}).get("workers") or []
    return {
        "unit": first(record, "Id"),
        "managed": managed,
        "active": first(record, "ActiveState", "unknown"),
        "sub": first(record, "SubState", ""),
        "venv": venv["path"],
        "packages": venv["packages"],
        "flashinfer": flashinfer.get("version"),
        "sglang": (sglang or {}).get("version"),
        "cuda_home": flashinfer.get("cuda_home"),
        "cuda_version": flashinfer.get("cuda_version"),
        "target_archs": flashinfer.get("target_archs") or [],
        "worker_archs": sorted({a for w in workers for a in w.get("target_archs") or []}),
        "orders_agree": (sglang or {}).get("orders_agree", True),
        "accepted": accepted,
        "error": error,
        "cold_jit": cold_jit(sglang) if accepted else "",
        "symptom": flashinfer.get("symptom"),
    }


def managed(record, managed_unit):
    """Whether the service role manages this unit: it is `managed_unit`, or it has the role's drop-in."""
    dropins = " ".join(record.get("DropInPaths") or []).split()
    return first(record, "Id") == managed_unit or any(p.rsplit("/", 1)[-1] == ROLE_DROPIN for p in dropins)


def census(records, managed_unit, read_venv, judge):
    """Rows for the FlashInfer services among `records`: `managed_unit` first, the role's other units, then the rest,
    each group by name.

    read_venv(dir) -> venv facts ({path, packages}) or None when dir is not a venv; judge(record, venv) ->
    (flashinfer facts, sglang facts or None) in the unit's own environment."""
    rows = []
    for record in records:
        if first(record, "LoadState") != "loaded":
            continue
        for candidate in venv_candidates(record):
            venv = read_venv(candidate)
            if not venv or "flashinfer-python" not in venv["packages"]:
                continue
            flashinfer, sglang = judge(record, venv)
            rows.append(entry(record, venv, flashinfer, sglang, managed(record, managed_unit)))
            break
    return sorted(rows, key=lambda r: (r["unit"] != managed_unit, not r["managed"], r["unit"]))


def unit_environment(record, read_file):
    """The environment a unit's process gets (Environment=, EnvironmentFile=, systemd's PATH when none)."""
    env, notes = systemd_env.unit_environment(record, read_file)
    env.setdefault("PATH", SYSTEM_PATH)
    return env, notes
