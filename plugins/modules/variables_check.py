#!/usr/bin/python
# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: variables_check
short_description: The cuda_toolkit, sglang_venv and sglang_service roles' variables checked at once, before any change
version_added: "0.3.0"
description:
  - Runs on the controller only and changes nothing. Judges the host from the play's facts (C(ansible_facts) - its OS
    family, service manager and Python), then each role's variables as the play has them - against the role's
    argument specs (types and choices), then against the role's own rules - and fails with one message naming every
    variable that is wrong, each with what it takes (C(Refused before any change. ...)).
  - C(playbooks/site.yml) runs it once for all three roles before the play's lock and the first role (C(host=false) - a
    run on one host gathers its facts with the lock); each role's checks then judge the host, and check their own
    variables when that did not happen (a role used on its own, a tag selection without it).
  - A variable whose template cannot be worked out is left to the task that uses it (a wrong variable it derives from
    is refused there, or here, by its own name).
author:
  - Blackwell Inference maintainers (@blackwell-inference)
options:
  roles:
    description: The roles whose variables are checked, of C(cuda_toolkit), C(sglang_venv) and C(sglang_service).
    type: list
    elements: str
    default: [cuda_toolkit, sglang_venv, sglang_service]
  host:
    description: Judge the host from the play's facts first (they must have been gathered, C(gather_subset=min) is enough).
    type: bool
    default: true
  variables:
    description:
      - Check the roles' variables. False checks only the host (C(host)) - C(playbooks/site.yml) checked the variables
        of all three roles before the play's lock, the facts come with the lock.
    type: bool
    default: true
  extra_services:
    description:
      - Check C(sglang_service_extra_services) against the first service's variables. False in a further service's own
        run (its variables are already resolved).
    type: bool
    default: true
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - blackwell.inference.attributes
attributes:
  action:
    description: Runs on the controller only; nothing is sent to the host.
    support: full
"""

EXAMPLES = r"""
- name: Refuse a wrong variable of any of the three roles before the first one changes anything
  blackwell.inference.variables_check:

- name: The venv role's variables only
  blackwell.inference.variables_check:
    roles: [sglang_venv]
"""

RETURN = r"""
host:
  description: Why the roles cannot serve this host, empty when they can (or when C(host) is false).
  returned: always
  type: str
refusals:
  description: One refusal per wrong variable, each naming it and what it takes.
  returned: always
  type: list
  elements: str
  sample: ["sglang_venv_keep: >= 2, the current venv counts and a rollback needs the previous one (got 1)."]
"""

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(
        argument_spec={
            "roles": {"type": "list", "elements": "str", "default": ["cuda_toolkit", "sglang_venv", "sglang_service"]},
            "host": {"type": "bool", "default": True},
            "variables": {"type": "bool", "default": True},
            "extra_services": {"type": "bool", "default": True},
        },
        supports_check_mode=True,
    )
    module.fail_json(msg="blackwell.inference.variables_check runs on the controller (its action plugin)")


if __name__ == "__main__":
    main()
