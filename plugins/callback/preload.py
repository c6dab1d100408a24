# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: preload
type: aggregate
short_description: Loads this collection's filters and resolves its modules once, before the first task
description:
  - ansible-playbook runs every task in a process forked from it. A filter plugin or a module path that the forked
    process looks up is found and imported there, and forgotten when that process exits, so a task that uses one of
    this collection's filters pays for loading it again (20-40 ms on a small controller, measured with
    C(tests/benchmark/bench_site.py)).
  - This callback looks up each of the collection's filters, modules and action plugins, and the plugins of ansible-core
    that the roles use (actions, filters, tests, lookups, and the default connection, shell and become plugins, whose
    options come from their documentation), once in ansible-playbook's own process, before any task forks, so every
    task inherits them loaded. It prints nothing and changes no result.
  - A plugin that fails to load here is left alone; the task that uses it reports the error as before.
  - When the playbook starts, a process of its own builds, into this run's payload cache, the payloads that
    ansible-core sends to the host for the collection's modules this playbook uses first. When it runs one of the
    collection's roles, that is the lock's only (every run calls it first; a run that changes nothing calls nothing else
    of the collection's); otherwise the modules its tasks name. A task otherwise builds its module's payload the first
    time the run uses that module (about 0.1 s each, on the task's path). ansible-core locks each payload while it is built and reads a
    finished one only, so a task never sees half of one; a payload this process did not get to is built by its task as
    before. It stops when ansible-playbook is gone.
  - Enable it in C(ansible.cfg) with C(callbacks_enabled = blackwell.inference.preload).
requirements:
  - enabled in C(callbacks_enabled)
"""

import os

from ansible import constants as C
from ansible.executor import module_common
from ansible.parsing.dataloader import DataLoader
from ansible.plugins import loader
from ansible.plugins.callback import CallbackBase
from ansible.template import Templar
from ansible.utils.multiprocessing import context as multiprocessing_context

from ansible_collections.blackwell.inference.plugins.plugin_utils import preload


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "blackwell.inference.preload"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.loaded = preload.preload({kind: getattr(loader, kind + "_loader") for kind in preload.LOOKUPS})
        self.builder = None

    def v2_playbook_on_start(self, playbook):
        actions, roles = _static_tasks(playbook)
        modules = preload.payloads_for(actions, roles)
        if not modules:
            return
        # forked like ansible's own workers, before any play starts its threads; daemonic: ended with ansible-playbook
        self.builder = multiprocessing_context.Process(target=_build_payloads, args=(os.getpid(), modules), daemon=True)
        try:
            self.builder.start()
        except OSError:  # no process to spare: each task builds its own payload, as without this callback
            self.builder = None


def _static_tasks(playbook):
    """The actions of the playbook's tasks as loaded (imports expanded, includes not yet), and the fully qualified
    names of the roles they belong to."""
    actions, roles = set(), set()

    def walk(blocks):
        for block in blocks or []:
            for item in (block.block or []) + (block.rescue or []) + (block.always or []):
                if hasattr(item, "block"):
                    walk([item])
                    continue
                actions.add(item.action)
                role = getattr(item, "_role", None)
                if role is not None:
                    roles.add(role.get_name(include_role_fqcn=True))

    try:
        for play in playbook.get_plays():
            for role in play.get_roles():
                roles.add(role.get_name(include_role_fqcn=True))
            walk(play.pre_tasks + play.tasks + play.post_tasks)
    except Exception:  # noqa: S110 - an unexpected playbook shape only means no payload is built ahead
        pass
    return actions, roles


def _build_payloads(parent, modules):
    """In the builder process: each module's payload into this run's cache (C.DEFAULT_LOCAL_TMP, inherited), while the
    run lasts."""
    templar = Templar(loader=DataLoader())
    compression = C.config.get_config_value("DEFAULT_MODULE_COMPRESSION")

    def build(name):
        found = loader.module_loader.find_plugin_with_context(name)
        module_common.modify_module(
            module_name=name,
            module_path=found.plugin_resolved_path,
            module_args={},
            templar=templar,
            # the payload's cache key is the module, the compression and ansible-core's debug extensions (none here);
            # the interpreter only shapes the shebang, which is not cached
            task_vars={"ansible_python_interpreter": "/usr/bin/python3"},
            module_compression=compression,
        )

    def keep_going():
        return os.getppid() == parent and os.path.isdir(C.DEFAULT_LOCAL_TMP)

    preload.build_payloads(modules, build, keep_going)
