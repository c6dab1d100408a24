# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Find the CUDA toolkits under a root (/usr/local) and read nvcc's banner."""

from __future__ import annotations

import hashlib
import os
import re

# FlashInfer's own pattern (flashinfer/jit/cpp_ext.py, 0.2.14.post1 .. 0.7.4): first match wins.
RELEASE_RE = re.compile(r"release (\d+\.\d+),")
FULL_RE = re.compile(r"\bV(\d+\.\d+\.\d+)\b")
TOOLKIT_DIR_RE = re.compile(r"^cuda-(\d+)\.(\d+)$")

# The headers and stub FlashInfer's sampling JIT module needs (see docs: JIT cache).
CURAND_HEADERS = ("curand.h", "curand_kernel.h", "curand_philox4x32_x.h")
DRIVER_STUB = os.path.join("lib64", "stubs", "libcuda.so")
# What a kernel compile runs (nvcc -cubin: nvcc, its profile, cicc, ptxas): a toolkit whose files kept their size and
# modification time compiles as it did (an upgrade or a reinstall changes them)
COMPILE_CHAIN = (os.path.join("bin", "nvcc"), os.path.join("bin", "nvcc.profile"), os.path.join("nvvm", "bin", "cicc"), os.path.join("bin", "ptxas"))


def identity(path):
    """A short digest of the compile chain's files (size and mtime, 'missing' for one that is not there)."""
    parts = []
    for rel in COMPILE_CHAIN:
        try:
            st = os.stat(os.path.join(path, rel))
            parts.append("%s %d %d" % (rel, st.st_size, st.st_mtime_ns))
        except OSError:
            parts.append("%s missing" % rel)
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def parse_nvcc_banner(text):
    """(release "13.0", full "13.0.88") from `nvcc --version`; None where absent."""
    text = text or ""
    rel = RELEASE_RE.search(text)
    full = FULL_RE.search(text)
    return (rel.group(1) if rel else None, full.group(1) if full else None)


def version_key(version):
    return tuple(int(p) for p in version.split("."))


def find_toolkit_dirs(root):
    """Every <root>/cuda-X.Y directory (not the cuda / cuda-X alternative links), oldest first."""
    try:
        names = os.listdir(root)
    except OSError:
        return []
    found = []
    for name in names:
        m = TOOLKIT_DIR_RE.match(name)
        path = os.path.join(root, name)
        if m and os.path.isdir(path):
            found.append(((int(m.group(1)), int(m.group(2))), path))
    return [path for _key, path in sorted(found)]


def describe_toolkit(path, run):
    """Facts about one toolkit directory; run(argv) -> CommandResult."""
    nvcc = os.path.join(path, "bin", "nvcc")
    dir_version = TOOLKIT_DIR_RE.match(os.path.basename(path))
    info = {
        "path": path,
        "nvcc": nvcc,
        "version": None,
        "release": None,
        "dir_version": "%s.%s" % dir_version.groups() if dir_version else None,
        "has_curand_headers": all(os.path.isfile(os.path.join(path, "include", h)) for h in CURAND_HEADERS),
        "has_driver_stubs": os.path.isfile(os.path.join(path, DRIVER_STUB)),
        "nvcc_error": None,
        "identity": identity(path),
    }
    res = run([nvcc, "--version"])
    if res.os_error:
        info["nvcc_error"] = "%s: %s" % (res.os_error, res.stderr)
    elif res.rc != 0:
        info["nvcc_error"] = "nvcc --version exited with rc=%s: %s" % (res.rc, (res.stderr or res.stdout).strip())
    else:
        info["version"], info["release"] = parse_nvcc_banner(res.stdout)
        if info["version"] is None:
            info["nvcc_error"] = "nvcc --version printed no 'release X.Y,' banner"
    return info


def default_toolkit(root):
    """Where <root>/cuda resolves (through /etc/alternatives), or None."""
    link = os.path.join(root, "cuda")
    if not os.path.lexists(link):
        return None
    target = os.path.realpath(link)
    return {
        "link": link,
        "path": target,
        "exists": os.path.isdir(target),
        "via_alternatives": os.path.islink(link) and os.readlink(link).startswith("/etc/alternatives/"),
    }
