"""The versions agree: no `version_added` anywhere (modules, filters, callbacks, doc fragments, roles' entry points, any
nested option or return value) is above galaxy.yml's version, the changelog's latest release is not above it either,
and every plugin, module and role a release lists as new says that release in its own `version_added`.
Unreleased changelog fragments are fine: they go into the next `antsibull-changelog release`."""

import ast
import glob
import os

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def version(text):
    """'0.3.0' -> (0, 3, 0); what galaxy.yml, version_added and the changelog use (no pre-releases here)."""
    parts = str(text).split(".")
    assert len(parts) == 3 and all(p.isdigit() for p in parts), "not a MAJOR.MINOR.PATCH version: %r" % text
    return tuple(int(p) for p in parts)


def galaxy_version():
    with open(os.path.join(ROOT, "galaxy.yml")) as fh:
        return yaml.safe_load(fh)["version"]


def changelog():
    with open(os.path.join(ROOT, "changelogs", "changelog.yaml")) as fh:
        return yaml.safe_load(fh)


def python_docs(path):
    """The YAML strings a plugin's .py defines (DOCUMENTATION, RETURN), parsed; no import of the plugin."""
    with open(path) as fh:
        tree = ast.parse(fh.read())
    docs = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id in ("DOCUMENTATION", "RETURN"):
                    docs[target.id] = yaml.safe_load(node.value.value)
        if isinstance(node, ast.ClassDef):  # doc fragments: class ModuleDocFragment: DOCUMENTATION = r'''...'''
            for item in node.body:
                if isinstance(item, ast.Assign) and isinstance(item.value, ast.Constant) and isinstance(item.value.value, str):
                    docs.update({t.id: yaml.safe_load(item.value.value) for t in item.targets if isinstance(t, ast.Name)})
    return docs


def documented():
    """(kind, name, path, docs) for every documented thing of the collection."""
    found = []
    for kind, pattern in (
        ("module", "plugins/modules/*.py"),
        ("callback", "plugins/callback/*.py"),
        ("doc_fragments", "plugins/doc_fragments/*.py"),
    ):
        for path in sorted(glob.glob(os.path.join(ROOT, pattern))):
            found.append((kind, os.path.basename(path)[:-3], path, python_docs(path)))
    for path in sorted(glob.glob(os.path.join(ROOT, "plugins", "filter", "*.yml"))):
        with open(path) as fh:
            found.append(("filter", os.path.basename(path)[:-4], path, yaml.safe_load(fh)))
    for path in sorted(glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml"))):
        with open(path) as fh:
            found.append(("role", path.split(os.sep)[-3], path, yaml.safe_load(fh)["argument_specs"]))
    return found


def every_version_added(node, where=""):
    """(where, value) for each version_added key at any depth."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "version_added":
                yield where or "(top)", value
            else:
                yield from every_version_added(value, "%s.%s" % (where, key) if where else str(key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from every_version_added(value, "%s[%d]" % (where, i))


def own_version_added(kind, docs):
    """The version the thing itself was added in (a role's: its main entry point's)."""
    if kind == "role":
        return docs["main"].get("version_added")
    return (docs.get("DOCUMENTATION") or {}).get("version_added")


def test_version_helper_orders_as_releases_do():
    assert version("0.10.0") > version("0.9.1") > version("0.3.0") > version("0.2.0")
    with pytest.raises(AssertionError):
        version("0.3")


def test_no_version_added_is_above_galaxy_version():
    top = version(galaxy_version())
    above = [
        "%s %s: %s version_added %s" % (kind, name, where, value)
        for kind, name, _path, docs in documented()
        for where, value in every_version_added(docs)
        if version(value) > top
    ]
    assert not above, "above galaxy.yml's %s: %s" % (galaxy_version(), above)


def test_every_module_filter_callback_and_role_says_when_it_was_added():
    missing = ["%s %s" % (kind, name) for kind, name, _path, docs in documented() if kind != "doc_fragments" and not own_version_added(kind, docs)]
    assert not missing


def test_the_changelogs_latest_release_is_not_above_galaxy_version():
    releases = sorted(changelog()["releases"], key=version)
    assert releases, "changelogs/changelog.yaml has no release"
    assert version(releases[-1]) <= version(galaxy_version()), "latest release %s, galaxy.yml %s" % (releases[-1], galaxy_version())


def test_every_thing_a_release_lists_as_new_says_that_release():
    """What changelog.yaml lists under a release's modules, plugins or objects carries that version_added (where it
    still exists); and what says an already released version is listed there, so version_added cannot drift."""
    own = {(kind, name): str(own_version_added(kind, docs)) for kind, name, _path, docs in documented() if kind != "doc_fragments"}
    listed = {}
    for release, data in changelog()["releases"].items():
        for entry in data.get("modules") or []:
            listed[("module", entry["name"])] = release
        for kind, entries in (data.get("plugins") or {}).items():
            for entry in entries:
                listed[(kind, entry["name"])] = release
        for kind, entries in (data.get("objects") or {}).items():
            for entry in entries:
                listed[(kind, entry["name"])] = release
    wrong = ["%s %s: listed in %s, version_added %s" % (k[0], k[1], release, own[k]) for k, release in listed.items() if k in own and own[k] != release]
    assert not wrong
    released = set(changelog()["releases"])
    unlisted = ["%s %s: version_added %s" % (k[0], k[1], v) for k, v in own.items() if v in released and k not in listed]
    assert not unlisted, "released versions that do not list these as new: %s" % unlisted
