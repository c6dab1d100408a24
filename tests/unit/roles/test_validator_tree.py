"""The boot validator's package tree (roles/sglang_service/vars/main.yml): every module_utils file boot_validate.py
imports, directly or through another, is in __sglang_service_validator_modules, and nothing else; the service probe's
action returns their text from the collection itself."""

import ast
import os

import yaml

from ansible_collections.blackwell.inference.plugins.action import service_probe

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MU = os.path.join(ROOT, "plugins", "module_utils")
PREFIX = "ansible_collections.blackwell.inference.plugins.module_utils."


def own_imports(path):
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PREFIX):
            rest = node.module[len(PREFIX) :].split(".")
            for alias in node.names:
                parts = rest if len(rest) == 2 else [*rest, alias.name]
                yield "/".join(parts) + ".py"


def closure(start):
    seen, todo = set(), list(own_imports(start))
    while todo:
        rel = todo.pop()
        if rel not in seen:
            seen.add(rel)
            todo.extend(own_imports(os.path.join(MU, rel)))
    return seen


def role_vars():
    with open(os.path.join(ROOT, "roles", "sglang_service", "vars", "main.yml"), encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def test_the_tree_holds_what_the_validator_imports():
    wanted = closure(os.path.join(ROOT, "roles", "sglang_service", "files", "boot_validate.py"))
    assert "service/ready.py" in wanted and "cuda/arch.py" in wanted  # READY, and the arch spellings of the smoke
    assert "service/textfile.py" in wanted  # the marker for node_exporter's textfile collector
    assert sorted(role_vars()["__sglang_service_validator_modules"]) == sorted(wanted)


def test_only_the_flat_copies_of_before_are_removed():
    # the tree is the validator's (the modules above); what it removes are the flat copies released versions placed
    gone = role_vars()["__sglang_service_validator_tree"]["gone"]
    assert gone and all("/" not in name and name.endswith(".py") for name in gone)


def test_the_packages_cover_every_module():
    v = role_vars()
    packages = {p.replace("{{ __sglang_service_validator_base }}", v["__sglang_service_validator_base"]) for p in v["__sglang_service_validator_packages"]}
    for rel in v["__sglang_service_validator_modules"]:
        assert "%s/%s" % (v["__sglang_service_validator_base"], os.path.dirname(rel)) in packages


def test_the_action_returns_the_collections_own_text():
    spec = {
        "root": "/usr/local/libexec/blackwell-inference",
        "dirs": ["ansible_collections", "ansible_collections/blackwell/inference/plugins/module_utils/cuda"],
        "files": ["ansible_collections/__init__.py", "ansible_collections/blackwell/inference/plugins/module_utils/cuda/arch.py"],
        "gone": ["cuda_arch.py"],
        "dir_entry": {"state": "directory", "mode": "0755"},
        "file_entry": {"state": "file", "mode": "0644"},
    }
    entries = service_probe.validator_paths(spec)
    with open(os.path.join(MU, "cuda", "arch.py"), encoding="utf-8") as fh:
        arch = fh.read()
    assert entries == [
        {"state": "directory", "mode": "0755", "path": "/usr/local/libexec/blackwell-inference/ansible_collections"},
        {
            "state": "directory",
            "mode": "0755",
            "path": "/usr/local/libexec/blackwell-inference/ansible_collections/blackwell/inference/plugins/module_utils/cuda",
        },
        {"state": "file", "mode": "0644", "path": "/usr/local/libexec/blackwell-inference/ansible_collections/__init__.py", "content": ""},
        {
            "state": "file",
            "mode": "0644",
            "content": arch,
            "path": "/usr/local/libexec/blackwell-inference/ansible_collections/blackwell/inference/plugins/module_utils/cuda/arch.py",
        },
        {"path": "/usr/local/libexec/blackwell-inference/cuda_arch.py", "state": "absent"},
    ]


def test_every_package_init_is_empty_even_where_the_collection_has_none():
    v = role_vars()
    spec = {
        "root": "/x",
        "dirs": [],
        "gone": [],
        "dir_entry": {},
        "file_entry": {},
        "files": [
            "ansible_collections/blackwell/inference/plugins/__init__.py",
            "ansible_collections/blackwell/inference/plugins/module_utils/__init__.py",
            "ansible_collections/blackwell/inference/plugins/module_utils/cuda/__init__.py",
        ],
    }
    assert [e["content"] for e in service_probe.validator_paths(spec)] == ["", "", ""]
    assert v["__sglang_service_validator_base"] == "ansible_collections/blackwell/inference/plugins/module_utils"
