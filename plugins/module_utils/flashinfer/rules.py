# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Predict what FlashInfer computes for its CUDA home, CUDA version and target archs.

Re-implemented from reading flashinfer-python 0.4.0, 0.5.0, 0.6.6, 0.6.7(.post1-3), 0.6.8,
0.6.11, 0.6.14, 0.6.18.post1, 0.7.0, 0.7.0.post1, 0.7.1, 0.7.2.post1 and 0.7.4:
  flashinfer/jit/cpp_ext.py        get_cuda_path(), get_cuda_version()
  flashinfer/compilation_context.py CompilationContext.__init__, _normalize_cuda_arch()
  flashinfer/jit/env.py            _get_workspace_dir_name() (cache dir "<ver>/<archs>")
  flashinfer/jit/core.py           check_cuda_arch() ("requires GPUs with sm75 or higher")
Commands are run through a runner (argv, env) -> CommandResult so the effects are exactly
those of the service's own process: `which nvcc` and `<home>/bin/nvcc --version` with its env.
"""

from __future__ import annotations

import contextlib
import os
import re

from ansible_collections.blackwell.inference.plugins.module_utils.common.env import split_env
from ansible_collections.blackwell.inference.plugins.module_utils.cuda import arch as cuda_arch
from ansible_collections.blackwell.inference.plugins.module_utils.cuda.toolkits import RELEASE_RE

# Newest FlashInfer whose source was read for these rules; newer ones get the newest rules + a note.
VERIFIED_UP_TO = (0, 7, 4)
OLDEST_MODELLED = (0, 4, 0)  # 0.4.0 introduced CUDA_HOME/CUDA_PATH/which-nvcc + torch fallback

# Rule bands for the arch suffix (_normalize_cuda_arch); see docs/flashinfer-facts.
BAND_LEGACY = "0.4.0-0.6.6"  # list entries verbatim, GPUs with major >= 9 get "a", no CUDA check
BAND_067 = "0.6.7"  # every SM 12.x -> 120f, requires CUDA >= 12.9
BAND_STRICT = "0.6.8-0.7.0.post1"  # 12.0 -> 120f, 12.x -> 12xa, both require CUDA >= 12.9
BAND_CURRENT = "0.7.1+"  # 12.0 -> 120f (>= 12.9) or 120a (12.8); 12.x -> 12xa (>= 12.9)

MSG_NO_TORCH_CUDA = "nvcc not found and PyTorch is not built with CUDA support. Could not determine CUDA version."
MSG_SM75 = "FlashInfer requires GPUs with sm75 or higher"

_VERSION_RE = re.compile(r"^(\d+)\.(\d+)\.(\d+)")


class FlashInferError(Exception):
    """An exception FlashInfer itself would raise; .kind is its class name."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind
        self.message = message

    def __str__(self):
        return self.message


def release_tuple(version):
    """'0.7.0.post1' -> (0, 7, 0); None if unparsable."""
    m = _VERSION_RE.match(version or "")
    return tuple(int(x) for x in m.groups()) if m else None


def cuda_tuple(version):
    """'12.8' -> (12, 8) (packaging.Version order is numeric for major.minor)."""
    return tuple(int(x) for x in version.split(".")[:2])


def arch_band(fi_version):
    rel = release_tuple(fi_version)
    if rel is None or rel < OLDEST_MODELLED:
        return None
    if rel < (0, 6, 7):
        return BAND_LEGACY
    if rel < (0, 6, 8):
        return BAND_067
    if rel < (0, 7, 1):
        return BAND_STRICT
    return BAND_CURRENT


def has_default_cuda_home(fi_version):
    """/usr/local/cuda as last resort arrived in 0.5.0 (0.4.x raises 'Could not find nvcc')."""
    rel = release_tuple(fi_version)
    return rel is None or rel >= (0, 5, 0)


def resolve_cuda_home(env, run, fi_version, exists=os.path.exists):
    """get_cuda_path(): returns (home, source) or raises FlashInferError.

    CUDA_HOME or CUDA_PATH ('' counts as unset for CUDA_HOME only through `or`: a set-but-empty
    CUDA_PATH is returned as ''), else dirname(dirname(`which nvcc`)) (no realpath: a wrapper in
    /usr/local/bin gives /usr/local), else /usr/local/cuda when it exists (0.5.0+).
    """
    home = env.get("CUDA_HOME") or env.get("CUDA_PATH")
    if home is not None:
        return home, ("CUDA_HOME" if env.get("CUDA_HOME") else "CUDA_PATH")
    # `which` and nvcc read nothing but the command-line part of the environment (no secrets needed)
    which = run(["which", "nvcc"], env=split_env(env)[0])
    if which.os_error:
        # subprocess.run(["which", "nvcc"]) itself raises when `which` is not on PATH
        raise FlashInferError(which.os_error, "[Errno 2] No such file or directory: 'which'")
    if which.rc == 0:
        return os.path.dirname(os.path.dirname(which.stdout.strip())), "PATH"
    if not has_default_cuda_home(fi_version):
        raise FlashInferError("RuntimeError", "Could not find nvcc")
    if not exists("/usr/local/cuda"):
        raise FlashInferError("RuntimeError", "Could not find nvcc and default cuda_home='/usr/local/cuda' doesn't exist")
    return "/usr/local/cuda", "default"


def resolve_cuda_version(env, run, fi_version, torch_cuda, exists=os.path.exists):
    """get_cuda_version(): returns dict(cuda_home, cuda_home_source, cuda_version, cuda_version_source).

    Caught (-> torch.version.cuda fallback): RuntimeError, FileNotFoundError, CalledProcessError
    (non-zero exit), no 'release X.Y,' match. Not caught: PermissionError and other OSErrors,
    raised as FlashInferError.
    """
    out = {"cuda_home": None, "cuda_home_source": None, "cuda_version": None, "cuda_version_source": None}
    try:
        home, source = resolve_cuda_home(env, run, fi_version, exists=exists)
        out["cuda_home"], out["cuda_home_source"] = home, source
        res = run([os.path.join(home, "bin/nvcc"), "--version"], env=split_env(env)[0])
        if res.os_error and res.os_error != "FileNotFoundError":
            raise FlashInferError(res.os_error, "%s: %s" % (res.os_error, res.stderr))
        if res.os_error is None and res.rc == 0:
            m = RELEASE_RE.search(res.stdout)
            if m:
                out["cuda_version"], out["cuda_version_source"] = m.group(1), "nvcc"
                return out
    except FlashInferError as exc:
        if exc.kind not in ("RuntimeError", "FileNotFoundError"):
            raise
    if torch_cuda is None:
        raise FlashInferError("RuntimeError", MSG_NO_TORCH_CUDA)
    out["cuda_version"], out["cuda_version_source"] = ".".join(torch_cuda.split(".")[:2]), "torch"
    return out


def normalize_arch(band, major, minor, cuda_version):
    """_normalize_cuda_arch(major, minor) -> (major, minor-with-suffix) or raises FlashInferError.

    cuda_version is a callable returning 'X.Y' (FlashInfer asks only for SM 12.x).
    """
    if band == BAND_LEGACY:
        return (major, "%da" % minor) if major >= 9 else (major, str(minor))
    if major == 9:
        return (major, "%da" % minor)
    if major == 12:
        cuda = cuda_tuple(cuda_version())
        if band == BAND_067:
            if cuda >= (12, 9):
                return (major, "0f")
            raise FlashInferError("RuntimeError", "SM 12.x requires CUDA >= 12.9")
        if band == BAND_STRICT:
            if cuda >= (12, 9):
                return (major, "0f") if minor == 0 else (major, "%da" % minor)
            raise FlashInferError("RuntimeError", "SM 12.x requires CUDA >= 12.9")
        if minor == 0:
            if cuda >= (12, 9):
                return (major, "0f")
            if cuda >= (12, 8):
                return (major, "0a")
            raise FlashInferError("RuntimeError", "SM 120 requires CUDA >= 12.8")
        if cuda >= (12, 9):
            return (major, "%da" % minor)
        raise FlashInferError("RuntimeError", "SM 12.1+ requires CUDA >= 12.9")
    if major >= 10:
        return (major, "%da" % minor)
    return (major, str(minor))


def parse_arch_list(band, value, cuda_version):
    """FLASHINFER_CUDA_ARCH_LIST as CompilationContext reads it: split on single spaces.

    Raises FlashInferError (ValueError/IndexError at import) for malformed entries, and the
    gate's RuntimeError for bare 12.x entries from 0.6.7 on (not swallowed: import fails).
    """
    archs = set()
    for entry in value.split(" "):
        parts = entry.split(".")
        if len(parts) < 2:
            raise FlashInferError("ValueError", "not enough values to unpack (expected 2, got 1): FLASHINFER_CUDA_ARCH_LIST entry %r" % entry)
        if len(parts) > 2:
            raise FlashInferError("ValueError", "too many values to unpack (expected 2): FLASHINFER_CUDA_ARCH_LIST entry %r" % entry)
        major_s, minor = parts
        try:
            major = int(major_s)
        except ValueError as exc:
            raise FlashInferError("ValueError", "invalid literal for int() with base 10: %r: FLASHINFER_CUDA_ARCH_LIST entry %r" % (major_s, entry)) from exc
        if band == BAND_LEGACY:
            archs.add((major, minor))
            continue
        if minor == "":
            raise FlashInferError("IndexError", "string index out of range: FLASHINFER_CUDA_ARCH_LIST entry %r" % entry)
        if minor[-1].isalpha():
            archs.add((major, minor))
            continue
        try:
            minor_i = int(minor)
        except ValueError as exc:
            raise FlashInferError("ValueError", "invalid literal for int() with base 10: %r: FLASHINFER_CUDA_ARCH_LIST entry %r" % (minor, entry)) from exc
        archs.add(normalize_arch(band, major, minor_i, cuda_version))
    return archs


def detect_archs(band, ccs, cuda_version):
    """GPU-detection path: (archs, swallowed_error). The loop stops at the first exception,
    which FlashInfer only logs ("Failed to get device capability: ...")."""
    archs = set()
    for cc in ccs:
        major, minor = (int(x) for x in cc.split("."))
        try:
            archs.add(normalize_arch(band, major, minor, cuda_version))
        except FlashInferError as exc:
            return archs, exc
    return archs, None


def arch_name(arch):
    """FlashInfer's (major, 'minor[a|f]') -> its target spelling, e.g. '120a' (cuda_arch.target)."""
    major, minor_s = arch
    minor = minor_s.rstrip("af")
    return cuda_arch.target(major, int(minor), minor_s[len(minor) :])


def sorted_arch_names(archs):
    """Cache-directory order: sorted((int major, str minor)) as in jit/env.py."""
    return [arch_name(a) for a in sorted(archs)]


def covers(arch, cc):
    """Does code built for arch (major, 'minor[a|f]') run on a GPU of compute capability cc?

    'a' (arch-specific) runs only on that exact CC; 'f' (family) and plain SASS run on the same
    major with an equal or higher minor.
    """
    major, minor_s = arch
    gmaj, gmin = (int(x) for x in cc.split("."))
    if major != gmaj:
        return False
    digits = minor_s.rstrip("abcdefghijklmnopqrstuvwxyz")
    if not digits.isdigit():
        return False
    if minor_s.endswith("a"):
        return int(digits) == gmin
    return int(digits) <= gmin


def visible_ccs(gpus, env):
    """Compute capabilities in device order as the service sees them (CUDA_VISIBLE_DEVICES)."""
    ordered = sorted(gpus, key=lambda g: g["index"])
    value = env.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        chosen = ordered
    else:
        chosen = []
        for tok in (t.strip() for t in value.split(",")):
            match = [g for g in ordered if tok.isdigit() and g["index"] == int(tok)]
            match = match or [g for g in ordered if tok and g.get("uuid") and g["uuid"].startswith(tok)]
            if not match:
                break  # CUDA ignores everything from the first invalid entry on
            if match[0] not in chosen:
                chosen.append(match[0])
    return [g["compute_capability"] for g in chosen if g.get("compute_capability")]


def cache_dir(env, fi_version, archs, home_dir):
    """${FLASHINFER_WORKSPACE_BASE:-$HOME}/.cache/flashinfer/<version>/<archs joined by _>."""
    base = env.get("FLASHINFER_WORKSPACE_BASE", env.get("HOME", home_dir))
    # pathlib drops an empty arch part; 0.4.0 has no version part (0.5.0 has; 0.4.1 not read)
    parts = [base, ".cache", "flashinfer"]
    if release_tuple(fi_version) >= (0, 5, 0):
        parts.append(fi_version)
    if archs:
        parts.append("_".join(sorted_arch_names(archs)))
    return os.path.join(*parts)


def predict(env, run, fi_version, torch_cuda, ccs, exists=os.path.exists, home_dir="/root"):
    """What FlashInfer fi_version computes in env for GPUs of compute capabilities ccs.

    Returns the facts dict: cuda_home(+source), cuda_version(+source), target_archs, accepted,
    error, error_kind, error_stage (import | detection | first_jit | version), cache_dir, notes.
    """
    band = arch_band(fi_version)
    res = {
        "version": fi_version,
        "rules": band,
        "cuda_home": None,
        "cuda_home_source": None,
        "cuda_version": None,
        "cuda_version_source": None,
        "target_archs": [],
        "accepted": False,
        "error": None,
        "error_kind": None,
        "error_stage": None,
        "symptom": None,
        "cache_dir": None,
        "notes": [],
    }
    if band is None:
        res["error"] = "flashinfer-python %s is older than %s, which this prediction does not model" % (fi_version, ".".join(map(str, OLDEST_MODELLED)))
        res["error_stage"] = "version"
        return res
    rel = release_tuple(fi_version)
    if rel > VERIFIED_UP_TO:
        res["notes"].append("flashinfer-python %s is newer than %s: predicted with the %s rules" % (fi_version, ".".join(map(str, VERIFIED_UP_TO)), band))

    version_error = []

    def cuda_version():
        if res["cuda_version"] is None:
            raise version_error[0]
        return res["cuda_version"]

    try:
        res.update(resolve_cuda_version(env, run, fi_version, torch_cuda, exists=exists))
    except FlashInferError as exc:
        version_error.append(exc)
        # the home may still be known when only the version failed
        with contextlib.suppress(FlashInferError):
            res["cuda_home"], res["cuda_home_source"] = resolve_cuda_home(env, run, fi_version, exists=exists)

    def fail(exc, stage):
        res["error"], res["error_kind"], res["error_stage"] = exc.message, exc.kind, stage

    arch_list = env.get("FLASHINFER_CUDA_ARCH_LIST")
    if arch_list is not None:
        try:
            archs = parse_arch_list(band, arch_list, cuda_version)
        except FlashInferError as exc:
            fail(exc, "import")  # CompilationContext() runs at import: `import flashinfer` fails
            return res
    else:
        archs, swallowed = detect_archs(band, ccs, cuda_version)
        if swallowed is not None:
            fail(swallowed, "detection")
            res["notes"].append(
                "FlashInfer logs 'Failed to get device capability: %s' and goes on with archs %s" % (swallowed.message, sorted_arch_names(archs) or "[]")
            )
    res["target_archs"] = sorted_arch_names(archs)
    res["cache_dir"] = cache_dir(env, fi_version, archs, home_dir)
    eligible = any(m >= 8 or (m == 7 and n.isdigit() and int(n) >= 5) for m, n in archs)
    if not eligible:
        # 0.7.1+ re-detects first and names the (empty) set in the message
        res["symptom"] = "%s. Detected TARGET_CUDA_ARCHS=%s." % (MSG_SM75, sorted(archs)) if rel >= (0, 7, 1) else MSG_SM75
        if res["error"] is None:
            fail(FlashInferError("RuntimeError", MSG_SM75), "first_jit")
    uncovered = [cc for cc in ccs if not any(covers(a, cc) for a in archs)]
    if uncovered and res["error"] is None:
        fail(
            FlashInferError(
                "RuntimeError",
                "no target arch covers GPU compute capability %s (target archs: %s)"
                % (", ".join(sorted(set(uncovered))), " ".join(res["target_archs"]) or "none"),
            ),
            "first_jit",
        )
    if version_error and res["error"] is None:
        # JIT compiles call get_cuda_version() again and fail the same way
        fail(version_error[0], "first_jit")
    res["accepted"] = res["error"] is None and bool(ccs)
    return res
