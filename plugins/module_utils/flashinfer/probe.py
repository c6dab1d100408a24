# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ask FlashInfer itself, inside the service's venv and environment, what it computes.

Only used with probe=true: it imports torch and flashinfer (seconds, not milliseconds).
"""

from __future__ import annotations

# Runs as `env -i <command-line part> <venv>/bin/python -c PROBE_SCRIPT` with the rest of the service
# environment as JSON on stdin (service_env.split_env): exactly the service environment, no secret in argv.
# flashinfer.jit.cpp_ext.get_cuda_path/get_cuda_version and compilation_context.CompilationContext
# exist under these names in every version 0.4.0 .. 0.7.4.
PROBE_SCRIPT = r"""
import json, os, sys
os.environ.update(json.load(sys.stdin))  # the rest of the service environment, before any import
out = {"cuda_home": None, "cuda_version": None, "target_archs": None, "error": None,
       "error_kind": None, "error_stage": None, "gpu_count": None}
def failed(stage, exc):
    out["error"], out["error_kind"], out["error_stage"] = str(exc), type(exc).__name__, stage
try:
    import torch
    out["gpu_count"] = torch.cuda.device_count()
    import flashinfer
    from flashinfer.jit import cpp_ext
    from flashinfer.compilation_context import CompilationContext
except BaseException as exc:
    failed("import", exc)
else:
    try:
        out["cuda_home"] = cpp_ext.get_cuda_path()
    except BaseException as exc:
        failed("cuda_home", exc)
    try:
        out["cuda_version"] = str(cpp_ext.get_cuda_version())
    except BaseException as exc:
        if out["error"] is None:
            failed("version", exc)
    try:
        archs = CompilationContext().TARGET_CUDA_ARCHS
        out["target_archs"] = ["%s%s" % a for a in sorted(archs)]
    except BaseException as exc:
        if out["error"] is None:
            failed("archs", exc)
json.dump(out, sys.stdout)
"""


def _import_key(facts):
    """Stage and exception class; the message too for FlashInfer's own RuntimeErrors
    (ValueError/IndexError texts come from the Python version, not from FlashInfer)."""
    if facts.get("error_stage") != "import":
        return ("ok",)
    if facts.get("error_kind") in ("ValueError", "IndexError"):
        return ("import", facts.get("error_kind"))
    return ("import", facts.get("error_kind"), facts.get("error"))


def _outcome(facts):
    if facts.get("error_stage") == "import":
        return "import fails (%s: %s)" % (facts.get("error_kind"), facts.get("error"))
    return "import works"


def compare(prediction, probe, archs_comparable):
    """Does the probe agree with the prediction? Returns (agrees, [differences]).

    Archs are compared only when FlashInfer could see them the same way: from
    FLASHINFER_CUDA_ARCH_LIST, or with GPUs visible to torch in the probe.
    """
    diffs = []
    if probe.get("error_stage") == "import" or prediction.get("error_stage") == "import":
        if _import_key(probe) != _import_key(prediction):
            diffs.append("import: predicted %s, FlashInfer says %s" % (_outcome(prediction), _outcome(probe)))
        return (not diffs), diffs
    for key in ("cuda_home", "cuda_version"):
        if probe.get(key) != prediction.get(key):
            diffs.append("%s: predicted %r, FlashInfer says %r" % (key, prediction.get(key), probe.get(key)))
    if archs_comparable and probe.get("target_archs") is not None and probe["target_archs"] != prediction.get("target_archs"):
        diffs.append("target_archs: predicted %r, FlashInfer says %r" % (prediction.get("target_archs"), probe["target_archs"]))
    return (not diffs), diffs
