"""The house's layering: plugins/module_utils is packages by concept, and imports run one way.

    common  <  cuda  <  flashinfer  <  sglang  <  venv  <  service  <  host  <  fleet

A module may import from its own package and from any package to its left, never from one to its right:
- common: commands, files, values, paths, apt and OpenPGP, systemd - nothing of ours;
- cuda: GPUs, toolkits, arch spellings, the toolkit's plan;
- flashinfer: FlashInfer's rules and its JIT smoke;
- sglang: SGLang's rules over FlashInfer's;
- venv: the SGLang venv's reading and plan;
- service: the unit, its settings, health, READY;
- host: one role's whole reading of a host (the probes, the lock), across the concepts;
- fleet: the run's report over hosts.
Plugins (modules, actions, filters, callbacks) sit above all of them; module_utils never imports a plugin.
"""

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MU = os.path.join(ROOT, "plugins", "module_utils")
PREFIX = "ansible_collections.blackwell.inference.plugins."
LAYERS = ("common", "cuda", "flashinfer", "sglang", "venv", "service", "host", "fleet")
# at most a handful of files at the top of module_utils
TOP_LEVEL_ALLOWED = set()


def modules():
    for pkg in sorted(os.listdir(MU)):
        path = os.path.join(MU, pkg)
        if os.path.isdir(path) and not pkg.startswith(("_", ".")):
            for name in sorted(os.listdir(path)):
                if name.endswith(".py"):
                    yield pkg, os.path.join(path, name)


def imports(path):
    """The collection's own modules a file imports, as dotted names below plugins/."""
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PREFIX):
            base = node.module[len(PREFIX) :]
            found.extend("%s.%s" % (base, a.name) if base.count(".") == 1 else base for a in node.names)
        elif isinstance(node, ast.Import):
            found.extend(a.name[len(PREFIX) :] for a in node.names if a.name.startswith(PREFIX))
        elif isinstance(node, ast.ImportFrom) and node.level:
            found.append("relative import of %s" % node.module)
    return found


def test_module_utils_is_packages_by_concept():
    top = {n for n in os.listdir(MU) if n.endswith(".py") and n != "__init__.py"}
    assert top <= TOP_LEVEL_ALLOWED, "files at the top of module_utils: %s" % sorted(top)
    packages = {n for n in os.listdir(MU) if os.path.isdir(os.path.join(MU, n)) and not n.startswith(("_", "."))}
    assert packages == set(LAYERS), "packages not in the layering: %s" % sorted(packages ^ set(LAYERS))
    for pkg in packages:
        with open(os.path.join(MU, pkg, "__init__.py"), encoding="utf-8") as fh:
            assert fh.read() == "", pkg


def violations(pkg, path):
    rank = LAYERS.index(pkg)
    found = []
    for name in imports(path):
        target = name.split(".")[1] if name.startswith("module_utils.") else None
        if target is None:
            found.append("%s imports %s: module_utils imports no plugin" % (path, name))
        elif target not in LAYERS:
            found.append("%s imports %s, outside the layering" % (path, name))
        elif LAYERS.index(target) > rank:
            found.append("%s (%s) imports %s: %s is above %s (%s)" % (os.path.relpath(path, ROOT), pkg, name, target, pkg, " < ".join(LAYERS)))
    return found


@pytest.mark.parametrize("pkg,path", list(modules()), ids=lambda v: os.path.relpath(v, MU) if os.sep in str(v) else v)
def test_imports_run_one_way(pkg, path):
    assert violations(pkg, path) == []


def test_a_back_import_is_caught(tmp_path):
    back = tmp_path / "systemd.py"
    back.write_text(
        "from ansible_collections.blackwell.inference.plugins.module_utils.service.settings import SYSTEM_PATH\n"
        "from ansible_collections.blackwell.inference.plugins.module_utils.common import values\n"
        "from ansible_collections.blackwell.inference.plugins.plugin_utils import filters\n"
    )
    found = violations("common", str(back))
    assert len(found) == 2, found
    assert "service is above common" in found[0]
    assert "imports no plugin" in found[1]
