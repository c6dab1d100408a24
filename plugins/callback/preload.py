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
  - Enable it in C(ansible.cfg) with C(callbacks_enabled = blackwell.inference.preload).
requirements:
  - enabled in C(callbacks_enabled)
"""

from ansible.plugins import loader
from ansible.plugins.callback import CallbackBase

from ansible_collections.blackwell.inference.plugins.plugin_utils import preload


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "blackwell.inference.preload"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.loaded = preload.preload({kind: getattr(loader, kind + "_loader") for kind in preload.LOOKUPS})
