"""docs/architecture.md is a map: every module_utils module, plugin and repository path it names exists, and every
package of plugins/module_utils and every module in it is on the map."""

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MU = os.path.join(ROOT, "plugins", "module_utils")
DOC = os.path.join(ROOT, "docs", "architecture.md")
PACKAGES = ("common", "cuda", "flashinfer", "sglang", "venv", "service", "host", "fleet")


def doc():
    with open(DOC, encoding="utf-8") as fh:
        return fh.read()


def named_modules(text):
    """`pkg/mod.py` (optionally followed by a function name) and, in the package table, `mod.py` of that row."""
    found = {(m.group(1), m.group(2)) for m in re.finditer(r"\b(%s)/(\w+)\.py\b" % "|".join(PACKAGES), text)}
    for row in re.finditer(r"^\| `(\w+)` \|[^|]*\|(.*)\|$", text, re.M):
        found.update((row.group(1), m) for m in re.findall(r"`(\w+)\.py`", row.group(2)))
    return found


def test_every_module_the_map_names_exists():
    missing = sorted("%s/%s.py" % nm for nm in named_modules(doc()) if not os.path.isfile(os.path.join(MU, *nm) + ".py"))
    assert missing == []


def test_every_module_is_on_the_map():
    named = named_modules(doc())
    present = {(pkg, name[:-3]) for pkg in PACKAGES for name in os.listdir(os.path.join(MU, pkg)) if name.endswith(".py") and name != "__init__.py"}
    assert sorted(present - named) == []


def test_every_path_and_plugin_it_names_exists():
    text = doc()
    paths = set(re.findall(r"`((?:plugins|roles|playbooks|tests|docs)/[\w./-]+)`", text))
    assert paths, "the map names no path"
    assert sorted(p for p in paths if not os.path.exists(os.path.join(ROOT, p))) == []
    # a plugin it names in a sentence like "`name` module" or "the `name` callback"
    for kind, folder in (("module", "modules"), ("callback", "callback")):
        for name in re.findall(r"`(\w+)` %s" % kind, text):
            assert os.path.isfile(os.path.join(ROOT, "plugins", folder, name + ".py")), name


def test_the_map_names_the_layering_the_test_enforces():
    from tests.unit import test_layering

    assert " < ".join(test_layering.LAYERS) in doc()
