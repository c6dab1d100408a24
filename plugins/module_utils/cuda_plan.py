# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which exact NVIDIA packages make up the toolkits wanted (pure logic, used by a filter)."""

from __future__ import annotations

import re

RELEASE_RE = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")
SLIM_COMPONENTS = (
    "cuda-nvcc",
    "cuda-crt",
    "cuda-nvvm",
    "cuda-cudart",
    "cuda-cudart-dev",
    "cuda-cccl",
    "libcurand",
    "libcurand-dev",
    "cuda-nvrtc",
    "cuda-nvrtc-dev",
    "cuda-driver-dev",
)
# Pull the driver or float: never part of a plan.
FORBIDDEN = re.compile(r"^(cuda|cuda-\d+-\d+|cuda-runtime-.*|cuda-drivers.*|cuda-toolkit|cuda-toolkit-\d+|nvidia-.*|libnvidia-.*)$")


class PlanError(ValueError):
    pass


def release_parts(release):
    m = RELEASE_RE.match(str(release))
    if not m:
        raise PlanError("cuda_toolkit_versions: %r is not a full CUDA release X.Y.Z (e.g. 13.0.2)" % (release,))
    return tuple(int(x) for x in m.groups())


def package_names(release, components):
    """Package names of one release, config-common packages first (they register the alternatives)."""
    major, minor, _patch = release_parts(release)
    xy = "%d-%d" % (major, minor)
    names = ["cuda-toolkit-config-common", "cuda-toolkit-%d-config-common" % major, "cuda-toolkit-%s-config-common" % xy]
    names += ["%s-%s" % (c, xy) for c in SLIM_COMPONENTS]
    if components == "full":
        names.append("cuda-toolkit-%s" % xy)
    elif components != "slim":
        raise PlanError("cuda_toolkit_components must be one of slim, full; got %r" % (components,))
    return names


def plan(releases, components, known, overrides=None):
    """[{release, version: "X.Y", home_suffix, packages: ["name=version", ...]}] or PlanError.

    known: {release: {min_driver, packages: {name: version}}}; overrides: {release: {name: version}}.
    """
    overrides = overrides or {}
    out = []
    for release in releases:
        major, minor, _patch = release_parts(release)
        pins = dict((known.get(release) or {}).get("packages") or {})
        pins.update(overrides.get(release) or {})
        names = package_names(release, components)
        missing = [n for n in names if n not in pins]
        if missing:
            raise PlanError(
                "no pinned versions for CUDA %s packages %s: add them to cuda_toolkit_package_versions['%s'] "
                "(the role pins every component; known releases: %s)"
                % (release, ", ".join(missing), release, ", ".join(sorted(r for r, v in known.items() if v.get("packages"))) or "none")
            )
        bad = [n for n in names if FORBIDDEN.match(n)]
        if bad:
            raise PlanError("refusing packages that pull the driver or float: %s" % ", ".join(bad))
        out.append({"release": release, "version": "%d.%d" % (major, minor), "packages": ["%s=%s" % (n, pins[n]) for n in names]})
    return out


def driver_too_old(driver_version, min_driver):
    """True when driver_version (e.g. 570.124.06) is below min_driver (580.95.05)."""

    def key(v):
        return tuple(int(x) for x in str(v).split("."))

    return key(driver_version) < key(min_driver)


def summarize(toolkits, compile_results, default, wanted=()):
    """Per toolkit: version, release, path, jit_ready, wanted, compiled_for (archs that built), default."""
    built = {}
    for res in compile_results or []:
        if res.get("skipped") or res.get("rc") != 0:
            continue
        entry, arch = res["item"]
        built.setdefault(entry["version"], []).append(arch)
    default_path = (default or {}).get("path")
    return [
        {
            "version": t.get("version"),
            "release": t.get("release"),
            "path": t["path"],
            "jit_ready": bool(t.get("has_curand_headers") and t.get("has_driver_stubs")),
            "wanted": t.get("dir_version") in wanted,
            "compiled_for": built.get(t.get("dir_version"), []),
            "default": t["path"] == default_path,
        }
        for t in toolkits
    ]


def summary_line(entry):
    return "%s: CUDA %s%s, JIT-ready: %s, compiles: %s%s" % (
        entry["path"],
        entry["release"] or entry["version"] or "?",
        "" if entry["version"] else " (nvcc unusable)",
        "yes" if entry["jit_ready"] else "no",
        " ".join(entry["compiled_for"]) or ("FAILED" if entry["wanted"] else "not checked (not managed here)"),
        " [/usr/local/cuda]" if entry["default"] else "",
    )
