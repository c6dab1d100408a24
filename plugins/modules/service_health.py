#!/usr/bin/python
# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: service_health
short_description: Wait for a service's health endpoint, and stop waiting as soon as its unit died
version_added: "0.3.0"
description:
  - Asks O(url) on the host every O(interval) seconds until it answers HTTP 200, up to O(timeout) seconds.
  - Between tries it reads the state of O(unit) from systemd. A unit that is failed or dead and not about to be
    restarted, or that crashed O(crash_limit) times since the wait began, will never answer, so the wait ends there
    (seconds, not the whole timeout) and the failure says why, in systemd's words.
  - Read-only; C(changed) is always false. It also waits in check mode (nothing is changed by asking).
author:
  - Blackwell Inference maintainers (@blackwell-inference)
options:
  url:
    description: The health endpoint (SGLang's C(/health)).
    type: str
    required: true
  unit:
    description: The service's systemd unit. Without it the wait only asks O(url).
    type: str
  timeout:
    description: Seconds to wait for an answer at most.
    type: int
    default: 120
  interval:
    description: Seconds between tries.
    type: float
    default: 2
  request_timeout:
    description: Seconds one request may take.
    type: int
    default: 5
  crash_limit:
    description: Restarts of O(unit) during the wait after which it is a crash loop; 0 never gives up on restarts.
    type: int
    default: 3
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
"""

EXAMPLES = r"""
- name: Wait for the restarted service to answer
  blackwell.inference.service_health:
    url: http://127.0.0.1:30000/health
    unit: sglang-k26.service
    timeout: 600
  register: health
  ignore_errors: true
"""

RETURN = r"""
status:
  description: HTTP status of the last try (-1 when nothing answered).
  returned: always
  type: int
seconds:
  description: Seconds waited.
  returned: always
  type: float
unit_state:
  description: The unit's C(ActiveState), C(SubState), C(Result), C(ExecMainStatus), C(NRestarts) when the wait ended.
  returned: when unit is given
  type: dict
gave_up:
  description: Why the wait ended before the timeout (the unit died or crash-looped), or null.
  returned: always
  type: str
"""

import time
import urllib.error

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url

from ansible_collections.blackwell.inference.plugins.module_utils import service_health as health


def ask(url, timeout):
    try:
        with open_url(url, timeout=timeout, use_proxy=False) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except (OSError, ValueError):
        return -1


def main():
    module = AnsibleModule(
        argument_spec={
            "url": {"type": "str", "required": True},
            "unit": {"type": "str"},
            "timeout": {"type": "int", "default": 120},
            "interval": {"type": "float", "default": 2},
            "request_timeout": {"type": "int", "default": 5},
            "crash_limit": {"type": "int", "default": 3},
        },
        supports_check_mode=True,
    )
    p = module.params

    def unit_state():
        if not p["unit"]:
            return {}
        rc, out, err = module.run_command(health.show_argv(p["unit"]))
        if rc != 0:
            module.fail_json(msg="systemctl show %s failed" % p["unit"], rc=rc, stdout=out, stderr=err)
        return health.parse_show(out)

    start = time.monotonic()
    restarts_before = unit_state().get("NRestarts", 0)
    props, reason = {}, None
    while True:
        status = ask(p["url"], p["request_timeout"])
        seconds = round(time.monotonic() - start, 1)
        if status == 200:
            module.exit_json(changed=False, status=status, seconds=seconds, unit_state=unit_state(), gave_up=None)
        props = unit_state()
        reason = health.gave_up(props, restarts_before, p["crash_limit"])
        if reason or seconds >= p["timeout"]:
            break
        time.sleep(min(p["interval"], max(0.0, p["timeout"] - seconds)))
    module.fail_json(
        msg=health.failure(p["url"], p["timeout"], seconds, status, props, reason), status=status, seconds=seconds, unit_state=props, gave_up=reason
    )


if __name__ == "__main__":
    main()
