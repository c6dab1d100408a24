# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side, shared by the collection's filter plugins."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError


def guard(func):
    """The filter's refusal (a ValueError of module_utils, e.g. cuda_plan.PlanError) as Ansible's filter error, with
    its message (the role's rescue and the operator read it)."""

    def wrapped(*args, **kw):
        try:
            return func(*args, **kw)
        except ValueError as exc:
            raise AnsibleFilterError(str(exc)) from exc

    return wrapped
