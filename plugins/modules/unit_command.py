#!/usr/bin/python
# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: unit_command
short_description: The command an existing service unit runs, and the one a drop-in gives it
version_added: "0.3.0"
description:
  - Reads the unit's state from systemd (C(systemctl show)) and its effective C(ExecStart) from its own files - the
    fragment and its drop-ins in systemd's order, those in O(exclude) left out (the role's own drop-in, so a rerun
    derives the same command) - with systemd's quoting, continuation lines and C(ExecStart=) resets.
  - Also returns what those files do to the service's environment (C(Environment=), C(EnvironmentFile=),
    C(UnsetEnvironment=)) and command, with the file of each, so an operator's later drop-in can be named.
  - Without O(command) the unit's own command is kept, every flag of it, with only its interpreter (a venv's
    C(bin/python*) or console script) moved to the same name in O(venv). A command that does not start in a venv (a
    system python, a wrapper script) cannot be moved and fails, naming the variable to set.
  - With O(command) that command is used, and the unit's own is returned as C(old) so the change can be shown.
  - Read-only; runs in check mode.
author:
  - Blackwell Inference maintainers (@blackwell-inference)
options:
  unit:
    description: The unit, e.g. C(sglang-k26.service).
    type: str
    required: true
  venv:
    description: The managed venv (its link) the kept command's interpreter moves to.
    type: path
    required: true
  exclude:
    description: Drop-in files to leave out when reading the unit's command.
    type: list
    elements: path
    default: []
  command:
    description: The command to use instead of the unit's own (the role's variables); empty keeps the unit's.
    type: list
    elements: str
    default: []
  host:
    description: The host the service serves on when its command does not say (C(--host)).
    type: str
    default: 127.0.0.1
  port:
    description: The port the service serves on when its command does not say (C(--port)).
    type: int
    default: 30000
  keep:
    description: Whether the unit's own command is to be kept (drop-in mode); C(false) only reads the unit.
    type: bool
    default: true
  mode:
    description:
      - C(sglang_service_mode). With C(dropin), a unit systemd has not loaded is named in RV(dropin_refusal), the
        refusal of the M(blackwell.inference.sglang_service) role (the unit's name is O(unit) without C(.service)).
    type: str
    choices: [unit, dropin]
  show:
    description:
      - Further keys whose values an C(EnvironmentFile=) shows in RV(environment_files), beside those CUDA and
        FlashInfer read - the keys the role itself sets, whose values are public in its drop-in.
    type: list
    elements: str
    default: []
    version_added: 0.4.0
  digest_key:
    description:
      - The host's digest key file (root's alone). The values of C(EnvironmentFile=) that are not shown are digested as
        an HMAC-SHA256 under it (C(hmac-sha256:...)), never as a plain sha256 anyone could test guesses against.
      - Without it they are digested as C(sha256:...); the role always gives it.
    type: path
    version_added: 0.4.0
  digest_key_create:
    description: Make O(digest_key) (random, 0600) when the host has none yet.
    type: bool
    default: false
    version_added: 0.4.0
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - blackwell.inference.attributes
"""

EXAMPLES = r"""
- name: The command of sglang-k26.service, its interpreter moved to the managed venv
  blackwell.inference.unit_command:
    unit: sglang-k26.service
    venv: /opt/sglang/current
    exclude: [/etc/systemd/system/sglang-k26.service.d/50-blackwell-inference.conf]
  register: k26_command
"""

RETURN = r"""
dropin_refusal:
  description:
    - With O(mode), why the unit cannot be started as it is, C('') when it can - a drop-in's unit that systemd has not
      loaded, a required C(EnvironmentFile=) of its files that is not there (systemd would refuse to start it), or an
      C(EnvironmentFile=) that an account other than root may write (its values would reach what the role runs as root).
  returned: when O(mode) is given
  type: str
  sample: ""
load_state:
  description: systemd's C(LoadState) of the unit (C(loaded), C(not-found), ...).
  returned: always
  type: str
  sample: loaded
unit_file_state:
  description: systemd's C(UnitFileState) (C(enabled), C(disabled), empty when the unit is not found).
  returned: always
  type: str
  sample: enabled
active_state:
  description: systemd's C(ActiveState) (C(active), C(failed), C(inactive), C(activating), ...).
  returned: always
  type: str
  sample: active
user:
  description: The unit's C(User=) (empty for root).
  returned: always
  type: str
  sample: ""
files:
  description: The unit's files read, in systemd's order (fragment first, the excluded drop-ins left out).
  returned: always
  type: list
  elements: str
  sample: [/etc/systemd/system/sglang-k26.service]
unit_argv:
  description: The unit's own effective command (null when it has none), and the file that set it.
  returned: always
  type: list
  elements: str
  sample: [/root/venv_sglang211/bin/python, -m, sglang.launch_server, --model-path, /models/Kimi-K2.6, --tp, "8"]
set_by:
  description: The file whose C(ExecStart=) is the effective one.
  returned: always
  type: str
  sample: /etc/systemd/system/sglang-k26.service
argv:
  description: The command the drop-in gives the unit (empty when O(keep) is false and no O(command) is given).
  returned: always
  type: list
  elements: str
  sample: [/opt/sglang/current/bin/python, -m, sglang.launch_server, --model-path, /models/Kimi-K2.6, --tp, "8"]
source:
  description: C(unit) (the unit's own, interpreter moved), C(variables) (O(command)) or C(none).
  returned: always
  type: str
  sample: unit
old:
  description: The unit's own command, shown when O(command) replaces it.
  returned: always
  type: list
  elements: str
replaced:
  description: Whether O(command) differs from the unit's own command.
  returned: always
  type: bool
listen:
  description: Where the command serves (its C(--host)/C(--port), else O(host)/O(port)).
  returned: always
  type: dict
  sample: {host: 0.0.0.0, port: 30000}
environment_steps:
  description: >-
    What the unit's other files (every file but those in O(exclude)) do to the service's environment and command, in
    systemd's order, for the role to see an operator's later drop-in. Each step has C(file), C(dropin), C(late) (the
    file applies after the excluded drop-in: its name sorts after it), C(kind) (C(set), C(reset), C(unset),
    C(env_file), C(exec_start)), C(key) and C(value).
  returned: always
  type: list
  elements: dict
  sample: [{file: /etc/systemd/system/sglang-k26.service.d/90-local.conf, dropin: true, late: true, kind: set, key: CUDA_HOME,
            value: /usr/local/cuda-12.8}]
environment_files:
  description: >-
    What each C(EnvironmentFile=) of those files sets, C({path: {key: {value, digest}}}); the value only for the keys
    CUDA and FlashInfer read and those in O(show) (an environment file may hold secrets), the digest of every value
    (C(hmac-sha256:...) under O(digest_key), else C(sha256:...)). The paths have their
    specifiers expanded (C(%i), C(%n), C(%H), ...) as systemd does; a glob is read as the files it matches, in order.
  returned: always
  type: dict
missing_env_files:
  description: The required C(EnvironmentFile=) paths (no C(-)) that match no file, each with the unit file setting it.
  returned: always
  type: list
  elements: dict
  sample: [{path: /etc/sglang/k26.env, file: /etc/systemd/system/sglang@.service}]
  version_added: 0.4.0
exposure:
  description:
    - Why the command (RV(argv)) serves beyond loopback with no API key - it binds an address others may reach and has
      no C(--api-key) - or C('') when it does not.
  returned: always
  type: str
  version_added: 0.4.0
writable_env_files:
  description: The C(EnvironmentFile=) files that an account other than root may write, each with the unit file naming it.
  returned: always
  type: list
  elements: dict
  sample: [{path: /etc/sglang/k26.env, file: /etc/systemd/system/sglang-k26.service}]
  version_added: 0.4.0
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.blackwell.inference.plugins.module_utils.common import commands, secrets
from ansible_collections.blackwell.inference.plugins.module_utils.service import unit as logic


def main():
    module = AnsibleModule(
        argument_spec=dict(
            unit=dict(type="str", required=True),
            venv=dict(type="path", required=True),
            exclude=dict(type="list", elements="path", default=[]),
            command=dict(type="list", elements="str", default=[]),
            host=dict(type="str", default="127.0.0.1"),
            port=dict(type="int", default=30000),
            keep=dict(type="bool", default=True),
            mode=dict(type="str", choices=["unit", "dropin"]),
            show=dict(type="list", elements="str", default=[]),
            digest_key=dict(type="path", no_log=False),
            digest_key_create=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    params = dict(module.params)
    mode = params.pop("mode")
    key_path, create = params.pop("digest_key"), params.pop("digest_key_create")
    digest = logic.plain_digest
    if key_path:
        try:
            digest = logic.keyed_digest(secrets.digest_key(key_path, create and not module.check_mode))
        except (OSError, ValueError) as exc:
            module.fail_json(msg="digest_key: %s" % exc)
    try:
        result = logic.read(commands.module_runner(module), digest=digest, **params)
    except logic.UnitReadError as exc:
        module.fail_json(msg=exc.msg, **exc.result)
    # served beyond loopback with no API key: the role warns of it, or refuses it (sglang_service_require_api_key)
    result["exposure"] = logic.exposure(result.get("argv"), result.get("listen"))
    if mode:
        unit = params["unit"]
        result["dropin_refusal"] = logic.dropin_refusal(result, mode, unit[: -len(".service")] if unit.endswith(".service") else unit)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
