# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Why a FlashInfer service failed, read from its journal since its last start: the causes this fleet has met,
each with the line that shows it and its fix. The caller reads the journal (journalctl argv from `journal_argv`) and
passes the text and, when known, the effective CUDA version cuda_facts computed and its torch_driver verdict
(`facts_apply` says whether they describe the unit as systemd has it now); `effective_cuda` asks FlashInfer's lookup in
the unit's own environment through the caller's runner, as flashinfer_rules does."""

from __future__ import annotations

import json
import os
import re

from ansible_collections.blackwell.inference.plugins.module_utils.common.systemd import SYSTEM_PATH
from ansible_collections.blackwell.inference.plugins.module_utils.cuda.nvidia_smi import driver_cuda_version, driver_fix
from ansible_collections.blackwell.inference.plugins.module_utils.flashinfer import rules as flashinfer_rules

# (name, pattern, cause, fix); the cause may use {cuda} (the effective CUDA version, or "its CUDA"), and the driver
# cause {torch} and {driver} (the numbers _driver_words finds, else nothing)
KNOWN = (
    (
        "flashinfer_no_arch",
        re.compile(r"FlashInfer requires GPUs with sm75 or higher"),
        "FlashInfer found no target arch: its GPU detection failed behind a CUDA version lookup that found {cuda}, "
        "below its SM 12.x gate, so the arch set came out empty (the message names the GPU, not the cause)",
        "point the unit at CUDA >= 12.9 (CUDA_HOME and PATH to the toolkit cuda_toolkit installs), which this role's "
        "environment does, or set FLASHINFER_CUDA_ARCH_LIST",
    ),
    (
        "flashinfer_cuda_gate",
        re.compile(r"SM 12\.x requires CUDA >= 12\.9|SM 12\.1\+ requires CUDA >= 12\.9|SM 120 requires CUDA >= 12\.8"),
        "FlashInfer's SM 12.x gate refused {cuda} (the CUDA version its lookup found in the unit's environment)",
        "point the unit at CUDA >= 12.9 (CUDA_HOME and PATH), which this role's environment does",
    ),
    (
        "jit_missing_curand",
        re.compile(r"curand\.h: No such file or directory|cannot open source file \"curand\.h\""),
        "a FlashInfer JIT build could not find curand.h: the toolkit it compiled with lacks the cuRAND headers",
        "install the toolkit's libcurand-dev package (cuda_toolkit installs it with the slim set; rerun the play)",
    ),
    (
        "oom_kill",
        re.compile(r"killed by the OOM killer|Failed with result 'oom-kill'|Result=oom-kill"),
        "the kernel's OOM killer killed the service (host memory, not GPU memory)",
        "free host memory (other processes, page cache pinned by tmpfs) or lower the server's memory use (fewer workers or a smaller --max-running-requests)",
    ),
    (
        "driver_too_old",
        re.compile(
            r"The NVIDIA driver on your system is too old \(found version (?P<found>\d+)\)"
            r"|CUDA driver version is insufficient for CUDA runtime version"
            r"|cudaErrorInsufficientDriver|CUDA_ERROR_SYSTEM_DRIVER_MISMATCH|cudaErrorSystemDriverMismatch"
        ),
        "torch's CUDA{torch} runtime is newer than the driver supports{driver}",
        "install a torch built for the driver's CUDA (cuda_facts reports torch's CUDA lane and the driver's) or update the driver",
    ),
)


def journal_argv(unit, since_usec=None, lines=400):
    """journalctl's argument list: the unit's messages (its own and systemd's about it) since its last start."""
    argv = ["journalctl", "--no-pager", "--output", "cat", "--unit", unit, "--lines", str(lines)]
    if since_usec:
        argv += ["--since", "@%d.%06d" % divmod(int(since_usec), 1000000)]
    return argv


def runs_argv(unit, lines=2000):
    """journalctl's argument list for the unit's recent runs, one JSON entry a line (each names its run's invocation)."""
    return ["journalctl", "--no-pager", "--output", "json", "--unit", unit, "--lines", str(lines)]


def _message(entry):
    """An entry's MESSAGE: a string, or the bytes journald keeps for a line that is not UTF-8 (a list of numbers)."""
    msg = entry.get("MESSAGE")
    if isinstance(msg, list):
        try:
            return bytes(msg).decode("utf-8", "replace")
        except (TypeError, ValueError):
            return ""
    return msg if isinstance(msg, str) else ""


def previous_run(json_stdout, current):
    """The text of the run before the unit's current one (systemd's InvocationID `current`), when systemd restarted the
    unit into the current run by itself (Restart=: the earlier run's own lines end with systemd's "Scheduled restart
    job"); '' otherwise. A service that crashes after minutes of loading its model is restarted into another load, and
    its journal since the last start shows the cause only once that load fails again: the run before shows it now.

    A line belongs to the run of its _SYSTEMD_INVOCATION_ID (the service's own output) or INVOCATION_ID (systemd's
    messages about the unit); `journalctl --output json` lines (runs_argv) in journal order."""
    order, text = [], {}
    for raw in (json_stdout or "").splitlines():
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        run = entry.get("_SYSTEMD_INVOCATION_ID") or entry.get("INVOCATION_ID") if isinstance(entry, dict) else None
        if not run:
            continue
        if run not in text:
            order.append(run)
            text[run] = []
        text[run].append(_message(entry))
    before = order[: order.index(current)] if current in text else order
    if not before:
        return ""
    lines = text[before[-1]]
    return "\n".join(lines) if any("Scheduled restart job" in line for line in lines) else ""


def facts_apply(expected, unit_env):
    """Whether facts computed for the environment `expected` (what the role wrote for the unit) describe the unit as
    systemd has it loaded now (`unit_env`, systemd_env.unit_environment): every key of expected at the same value.
    A unit put back to another state, or edited since, does not; nothing expected (None) leaves it to the caller."""
    if expected is None:
        return True
    unit_env = unit_env or {}
    return bool(expected) and all(k in unit_env and str(unit_env[k]) == str(v) for k, v in expected.items())


# the causes whose message names the CUDA version FlashInfer's lookup found
CUDA_CAUSES = ("flashinfer_no_arch", "flashinfer_cuda_gate")


def names_cuda(found):
    """Whether a cause found (explain) would name FlashInfer's CUDA version."""
    return any(f["name"] in CUDA_CAUSES for f in found)


def effective_cuda(unit_env, run, exists=os.path.exists):
    """The CUDA version FlashInfer's lookup finds in the unit's environment (CUDA_HOME, CUDA_PATH, `which nvcc` on its
    PATH - systemd's default when it sets none - then /usr/local/cuda; the version from that home's nvcc banner), or
    None when no nvcc answers there (FlashInfer would fall back to torch's CUDA lane, which is not guessed here)."""
    env = dict(unit_env or {})
    env.setdefault("PATH", SYSTEM_PATH)
    try:
        got = flashinfer_rules.resolve_cuda_version(env, run, None, None, exists=exists)
    except flashinfer_rules.FlashInferError:
        return None
    return got["cuda_version"] if got["cuda_version_source"] == "nvcc" else None


def _driver_words(groups, verdict):
    """(torch, driver, fix) for the driver_too_old cause: the numbers from torch's own line ("found version 12040" is
    cuDriverGetVersion's integer) and from cuda_facts' torch_driver verdict when it says not ok about that driver."""
    found = driver_cuda_version(None, int(groups["found"]))[0] if groups.get("found") else None
    v = verdict if isinstance(verdict, dict) and verdict.get("ok") is False and verdict.get("torch_cuda") and verdict.get("driver_cuda") else None
    if v and found and found != v["driver_cuda"]:
        v = None  # the verdict is about another driver than the one the service met
    driver_cuda = found or (v or {}).get("driver_cuda")
    return (
        " %s" % v["torch_cuda"] if v else "",
        " (the driver supports CUDA %s)" % driver_cuda if driver_cuda else "",
        driver_fix(v["torch_cuda"], driver_cuda) if v else None,
    )


def match(text):
    """The known causes that TEXT shows, in the order of KNOWN, each once: [(name, groups, line)] where line is the
    first journal line that shows it (what describe() words)."""
    lines = (text or "").splitlines()
    found = []
    for name, pattern, _cause, _fix in KNOWN:
        for line in lines:
            m = pattern.search(line)
            if m:
                found.append((name, m.groupdict(), line.strip()[:300]))
                break
    return found


def describe(matches, cuda_version=None, torch_driver=None):
    """[{'name', 'cause', 'fix', 'line'}] of match()'s causes. cuda_version (FlashInfer's effective CUDA) and
    torch_driver (cuda_facts' verdict on torch's CUDA against the driver) put numbers in them."""
    known = {name: (cause, fix) for name, _pattern, cause, fix in KNOWN}
    cuda = "CUDA %s" % cuda_version if cuda_version else "its CUDA"
    found = []
    for name, groups, line in matches:
        cause, fix = known[name]
        torch, driver, numbered_fix = _driver_words(groups, torch_driver) if name == "driver_too_old" else ("", "", None)
        found.append({"name": name, "cause": cause.format(cuda=cuda, torch=torch, driver=driver), "fix": numbered_fix or fix, "line": line})
    return found


def explain(text, cuda_version=None, torch_driver=None):
    """The known causes found in TEXT, worded (describe(match(text), ...))."""
    return describe(match(text), cuda_version, torch_driver)


def summary(found):
    """One sentence per cause for a failure message; '' when nothing known was found."""
    return " ".join("%s (journal: %r); fix: %s." % (f["cause"], f["line"], f["fix"]) for f in found)
