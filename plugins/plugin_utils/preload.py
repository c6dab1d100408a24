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
# what every remote task sets up before its module runs (ansible's defaults: SSH, sh, sudo; loading one reads its
# options' documentation), and the lookups the lab inventory and the summary template call
BUILTIN_CONNECTION = ("ssh",)
BUILTIN_SHELL = ("sh",)
BUILTIN_BECOME = ("sudo",)
BUILTIN_LOOKUPS = ("env", "template")
PLUGINS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def names(plugins_dir=PLUGINS):
    """{kind: [fully qualified names]} for the kinds of LOOKUPS.

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
        "connection": [builtin + n for n in BUILTIN_CONNECTION],
        "shell": [builtin + n for n in BUILTIN_SHELL],
        "become": [builtin + n for n in BUILTIN_BECOME],
        "lookup": [builtin + n for n in BUILTIN_LOOKUPS],
    }


# how each kind's loader is asked (ansible.plugins.loader's *_loader objects): modules are only resolved to their file
# (they run on the host), plugins with options are loaded as classes (that reads their documentation once)
LOOKUPS = {
    "filter": lambda loader, name: loader.get(name),
    "test": lambda loader, name: loader.get(name),
    "module": lambda loader, name: loader.find_plugin(name),
    "action": lambda loader, name: loader.get(name, class_only=True),
    "connection": lambda loader, name: loader.get(name, class_only=True),
    "shell": lambda loader, name: loader.get(name),
    "become": lambda loader, name: loader.get(name),
    "lookup": lambda loader, name: loader.get(name),
}


# the modules whose payloads are built ahead when a playbook runs this collection's roles: the lock, which every run
# calls first (a no-op calls nothing else of the collection's: the roles' readings are the lock's). A module a run
# calls only when it changes something or verifies builds its payload in its task, as without this callback: building
# them all ahead took CPU the first tasks were waiting for (about 0.3 s of a no-op's median on the 2-core lab machine)
PAYLOADS_FIRST = ("host_lock",)


def payloads_for(actions, roles, plugins_dir=PLUGINS):
    """Fully qualified names of the modules whose payloads are worth building ahead for a playbook, first needed first:
    when it runs one of this collection's roles (roles: their fully qualified names), the modules of PAYLOADS_FIRST
    only; otherwise this collection's modules its tasks name (actions, as loaded: tasks that are included at run time
    are not among them). ansible-core's own modules are left to their tasks: a run that needs them changes the host
    and takes minutes."""
    own = set(names(plugins_dir)["module"])
    if any(str(r).startswith(COLLECTION + ".") for r in roles):
        wanted = [COLLECTION + "." + n for n in PAYLOADS_FIRST]
    else:
        wanted = sorted(a for a in actions if a in own)
    return [m for m in wanted if m in own]


def build_payloads(modules, build, keep_going=lambda: True):
    """Build each module's payload with build(name), in order, while keep_going() holds; returns the names built. A
    build that fails is skipped: the task that runs the module builds it again and reports the error."""
    built = []
    for name in modules:
        if not keep_going():
            break
        try:
            build(name)
        except Exception:  # noqa: S112 - the task that runs the module builds it again and reports the error
            continue
        built.append(name)
    return built


def preload(loaders, plugins_dir=PLUGINS):
    """Look each name up with its kind's loader ({kind: loader}); returns {kind: number found}. A lookup that fails is
    skipped: the task that needs the plugin reports it."""
    found = {}
    for kind, listed in names(plugins_dir).items():
        found[kind] = 0
        for name in listed:
            try:
                plugin = LOOKUPS[kind](loaders[kind], name)
            except Exception:  # a load error is the using task's to report
                plugin = None
            found[kind] += plugin is not None
    return found
