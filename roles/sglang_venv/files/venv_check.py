"""Post-build check of an SGLang venv: import each module given, report the versions that matter.

Run as <venv>/bin/python -c "<this file>" MODULE...; prints one JSON line; exit 1 if an import fails.
"""

import contextlib
import importlib
import importlib.metadata as md
import json
import sys

out = {"imports": {}, "versions": {}, "torch_cuda": None}
failed = []
for mod in sys.argv[1:]:
    try:
        importlib.import_module(mod)
        out["imports"][mod] = "ok"
    except BaseException as exc:
        out["imports"][mod] = "%s: %s" % (type(exc).__name__, exc)
        failed.append(mod)
for dist in ("sglang", "flashinfer-python", "flashinfer-cubin", "flashinfer-jit-cache", "torch", "sglang-kernel"):
    with contextlib.suppress(md.PackageNotFoundError):
        out["versions"][dist] = md.version(dist)
if "torch" in sys.modules:
    out["torch_cuda"] = sys.modules["torch"].version.cuda
out["failed"] = failed
print(json.dumps(out))
sys.exit(1 if failed else 0)
