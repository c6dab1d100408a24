# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side: this collection's plugin names, looked up once in ansible-playbook's own process (the preload
callback) so the process forked for each task inherits them loaded."""

from __future__ import annotations

import os

COLLECTION = "blackwell.inference"
# ansible-core's own plugins that the roles' tasks run through: the action plugins of the task keywords the roles use
# (tests/unit/plugins/plugin_utils/test_preload.py checks the list against roles/ and playbooks/), "normal" for a
# module without one, and one name from each filter and test file the roles' Jinja uses (a file loads whole)
BUILTIN_ACTIONS = (
    "assert",
    "command",
    "copy",
    "debug",
    "fail",
    "file",
    "gather_facts",
    "get_url",
    "group",
    "normal",
    "ping",
    "set_fact",
    "setup",
    "slurp",
    "stat",
    "systemd_service",
    "user",
    "validate_argument_spec",
    "apt",
)
BUILTIN_FILTERS = ("combine", "unique")  # core.py, mathstuff.py
BUILTIN_TESTS = ("version",)  # core.py
PLUGINS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def names(plugins_dir=PLUGINS):
    """{'filter': [...], 'test': [...], 'module': [...], 'action': [...]}: fully qualified names.

    This collection's filters are named by their documentation files (one per filter, plugins/filter/NAME.yml), its
    modules and action plugins by their Python files; ansible-core's by the lists above."""

    def listed(sub, ext):
        try:
            entries = os.listdir(os.path.join(plugins_dir, sub))
        except OSError:
            return []
        return sorted("%s.%s" % (COLLECTION, e[: -len(ext)]) for e in entries if e.endswith(ext) and not e.startswith("_"))

    builtin = "ansible.builtin."
    return {
        "filter": listed("filter", ".yml") + [builtin + n for n in BUILTIN_FILTERS],
        "test": [builtin + n for n in BUILTIN_TESTS],
        "module": listed("modules", ".py"),
        "action": listed("action", ".py") + [builtin + n for n in BUILTIN_ACTIONS],
    }


def preload(filter_loader, test_loader, module_loader, action_loader, plugins_dir=PLUGINS):
    """Look each name up with its loader; returns {kind: number found}. A lookup that fails is skipped: the task that
    needs the plugin reports it."""
    found = {}
    lookups = {
        "filter": filter_loader.get,
        "test": test_loader.get,
        "module": module_loader.find_plugin,
        "action": lambda name: action_loader.get(name, class_only=True),
    }
    for kind, listed in names(plugins_dir).items():
        found[kind] = 0
        for name in listed:
            try:
                plugin = lookups[kind](name)
            except Exception:  # a load error is the using task's to report
                plugin = None
            found[kind] += plugin is not None
    return found
