# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Why a FlashInfer service failed, read from its journal since its last start: the causes this fleet has met,
each with the line that shows it and its fix. Pure: the caller reads the journal (journalctl argv from
`journal_argv`) and passes the text and, when known, the effective CUDA version cuda_facts computed."""

from __future__ import annotations

import re

from ansible_collections.blackwell.inference.plugins.module_utils.nvidia_smi import driver_cuda_version

# (name, pattern, cause, fix); the fix may use {cuda} (the effective CUDA version, or "its CUDA")
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
        "torch's CUDA runtime is newer than the driver supports{driver}",
        "install a torch built for the driver's CUDA (cuda_facts reports torch's CUDA lane and the driver's) or update the driver",
    ),
)


def journal_argv(unit, since_usec=None, lines=400):
    """journalctl's argument list: the unit's messages (its own and systemd's about it) since its last start."""
    argv = ["journalctl", "--no-pager", "--output", "cat", "--unit", unit, "--lines", str(lines)]
    if since_usec:
        argv += ["--since", "@%d.%06d" % divmod(int(since_usec), 1000000)]
    return argv


def explain(text, cuda_version=None):
    """The known causes found in TEXT, in the order of KNOWN, each once:
    [{'name', 'cause', 'fix', 'line'}] where line is the first journal line that shows it."""
    lines = (text or "").splitlines()
    cuda = "CUDA %s" % cuda_version if cuda_version else "its CUDA"
    found = []
    for name, pattern, cause, fix in KNOWN:
        for line in lines:
            m = pattern.search(line)
            if not m:
                continue
            groups = m.groupdict()
            # torch's "found version" is cuDriverGetVersion's integer (12080 = 12.8)
            driver = " (the driver supports CUDA %s)" % driver_cuda_version(None, int(groups["found"]))[0] if groups.get("found") else ""
            found.append({"name": name, "cause": cause.format(cuda=cuda, driver=driver), "fix": fix, "line": line.strip()[:300]})
            break
    return found


def summary(found):
    """One sentence per cause for a failure message; '' when nothing known was found."""
    return " ".join("%s (journal: %r); fix: %s." % (f["cause"], f["line"], f["fix"]) for f in found)
