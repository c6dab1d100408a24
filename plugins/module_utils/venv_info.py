# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read package versions from a venv's files, without importing anything (no torch import)."""

from __future__ import annotations

import glob
import os
import re

_TORCH_CUDA_RE = re.compile(r"""^cuda\s*(?::[^=]*)?=\s*(?:None|['"]([^'"]*)['"])\s*$""", re.M)
_TORCH_VERSION_RE = re.compile(r"""^__version__\s*(?::[^=]*)?=\s*['"]([^'"]+)['"]""", re.M)


class VenvError(ValueError):
    pass


def normalize_name(name):
    """PEP 503 normalization: flashinfer_python, flashinfer-python -> flashinfer-python."""
    return re.sub(r"[-_.]+", "-", name).lower()


def check_venv(venv):
    if not os.path.isdir(venv):
        raise VenvError("venv=%s does not exist or is not a directory" % venv)
    if not os.path.isfile(os.path.join(venv, "pyvenv.cfg")):
        raise VenvError("venv=%s is not a Python virtual environment (no pyvenv.cfg)" % venv)
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(python):
        raise VenvError("venv=%s has no bin/python" % venv)
    return python


def site_packages(venv):
    """The venv's site-packages directories (lib and lib64, any python3.X)."""
    dirs = []
    for pattern in ("lib/python3*/site-packages", "lib64/python3*/site-packages"):
        for d in sorted(glob.glob(os.path.join(venv, pattern))):
            if os.path.realpath(d) not in [os.path.realpath(x) for x in dirs]:
                dirs.append(d)
    return dirs


def installed_versions(site_dirs):
    """{normalized name: version} from *.dist-info/METADATA (the Name/Version headers)."""
    versions = {}
    for sp in site_dirs:
        for meta_dir in glob.glob(os.path.join(sp, "*.dist-info")):
            name = version = None
            try:
                with open(os.path.join(meta_dir, "METADATA"), encoding="utf-8", errors="replace") as fh:
                    for line in fh:
                        if line.startswith("Name:"):
                            name = line[5:].strip()
                        elif line.startswith("Version:"):
                            version = line[8:].strip()
                        elif not line.strip():
                            break
            except OSError:
                continue
            if name and version:
                versions.setdefault(normalize_name(name), version)
    return versions


def parse_torch_version_py(text):
    """(version, cuda) from torch/version.py text; cuda None for a CPU build."""
    ver = _TORCH_VERSION_RE.search(text or "")
    cuda = _TORCH_CUDA_RE.search(text or "")
    return (ver.group(1) if ver else None, (cuda.group(1) or None) if cuda else None)


def torch_info(site_dirs):
    """{version, cuda} read from torch/version.py, or None when torch is absent."""
    for sp in site_dirs:
        path = os.path.join(sp, "torch", "version.py")
        if os.path.isfile(path):
            with open(path, encoding="utf-8", errors="replace") as fh:
                version, cuda = parse_torch_version_py(fh.read())
            return {"version": version, "cuda": cuda}
    return None


_PIP_CHECK_LINE = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*) (?P<version>\S+) (?:requires|has requirement|is not supported)\b")


def pip_check_problems(stdout, no_deps=()):
    """`pip check`'s problems that count: every line, except those of a distribution installed without its
    dependencies on purpose (`no_deps`: requirements or names; its own requirements are its operator's business, a
    problem of another distribution with it still counts). Returns (kept lines, number of lines set aside)."""
    skip = {requirement_name(r) for r in no_deps or () if str(r).strip()}
    kept, skipped = [], 0
    for raw in (stdout or "").splitlines():
        line = raw.strip()
        if not line or line == "No broken requirements found.":
            continue
        m = _PIP_CHECK_LINE.match(line)
        if m and normalize_name(m.group("name")) in skip:
            skipped += 1
        else:
            kept.append(line)
    return kept, skipped


def pip_check_verdict(result, no_deps=()):
    """The venv's `pip check` verdict from its registered result (a dict with rc and stdout; skipped or not run:
    passed). It passes with rc 0, or when every line it printed is about a distribution installed without its
    dependencies on purpose. Returns (passed, problems, set_aside)."""
    result = result if isinstance(result, dict) else {}
    if result.get("skipped") or result.get("rc") is None:
        return True, [], 0
    kept, skipped = pip_check_problems(result.get("stdout"), no_deps)
    return result["rc"] == 0 or (skipped > 0 and not kept), kept, skipped


PINNED = re.compile(r"^[A-Za-z0-9._-]+(\[[A-Za-z0-9,._-]+\])?==\S+$")


def requirement_name(requirement):
    """'flashinfer_python[cu13]==0.7.4' -> 'flashinfer-python' (PEP 503, extras and version dropped)."""
    return normalize_name(re.split(r"[\[=<>!~; ]", str(requirement).strip(), maxsplit=1)[0])


def no_deps_accepted(no_deps, packages, lock_file=""):
    """Whether sglang_venv_packages_no_deps can be installed as asked: each pinned name==version, none also in
    sglang_venv_packages (by PEP 503 name), and none beside a lock file (the lock is the whole set)."""
    no_deps = list(no_deps or [])
    if any(not PINNED.match(str(r).strip()) for r in no_deps):
        return False
    if no_deps and lock_file:
        return False
    return not {requirement_name(r) for r in no_deps} & {requirement_name(r) for r in packages or []}
