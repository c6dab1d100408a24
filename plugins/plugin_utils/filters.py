# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side, shared by the collection's filter plugins.

ansible-core imports every filter plugin file of the collection in a task's process the first time the task looks up
one of its filters. A filter file therefore imports no module_utils at its top: `call` imports the module a filter
needs when the filter is called, so a task pays only for the code it runs."""

from __future__ import annotations

import importlib

from ansible.errors import AnsibleFilterError

MODULE_UTILS = "ansible_collections.blackwell.inference.plugins.module_utils."


def guard(func):
    """The filter's refusal (a ValueError of module_utils, e.g. cuda_plan.PlanError) as Ansible's filter error, with
    its message (the role's rescue and the operator read it)."""

    def wrapped(*args, **kw):
        try:
            return func(*args, **kw)
        except ValueError as exc:
            raise AnsibleFilterError(str(exc)) from exc

    return wrapped


def module(name):
    """A module of plugins/module_utils by its dotted name below it ("cuda.plan"), imported on first use."""
    return importlib.import_module(MODULE_UTILS + name)


def call(name, func, guarded=False):
    """The filter that calls module_utils' `name`.`func`, importing that module when it is first called; guarded: its
    ValueError becomes Ansible's filter error (guard)."""

    def filter_(*args, **kw):
        return getattr(module(name), func)(*args, **kw)

    filter_.__name__ = func
    filter_.__doc__ = "%s.%s, imported when called" % (name, func)
    return guard(filter_) if guarded else filter_
