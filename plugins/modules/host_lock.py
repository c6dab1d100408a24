#!/usr/bin/python
# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: host_lock
short_description: One play at a time on a host (a lock held for the whole play)
version_added: "0.3.0"
description:
  - O(state=acquired) takes the host's lock for this play, waiting while another play holds it, up to O(timeout)
    seconds; then it fails naming the holder (user, controller, process, since when, play).
  - The holder is named by its controller's machine-id, boot id and PID namespace (C(/etc/machine-id),
    C(/proc/sys/kernel/random/boot_id), C(/proc/self/ns/pid)) and the ansible-playbook process (pid and start time); the
    host name is shown only. A lock left by a play of this controller (all three the same) whose process is gone
    (killed) is taken over.
  - Any other holder - another controller (even with the same host name, or the same baked machine-id in a container
    of another PID namespace), or this one before a reboot - is waited for while its heartbeat is fresh, and taken over
    once the heartbeat is older than O(stale_after) seconds, or the host booted since it. The age is told by the host's
    boot id and boot-time clock, never by its wall clock, which may step.
  - The heartbeat is the holder's last call of this module on the host (the acquire, each O(state=refreshed)). Nobody
    refreshes it during a step (apt, the venv build, the JIT smoke, the health wait), so O(stale_after) must be longer
    than the longest stretch between two calls at the configured O(timeouts); C(site.yml) refreshes between
    the venv and the service roles, and the service role before each service's validation.
  - Every change of the lock file is made holding an flock of C(<path>.guard), after reading the record again, so two
    controllers that both judged a holder stale cannot both take it over.
  - O(state=refreshed) renews this play's heartbeat, and fails when the lock is no longer this play's.
  - O(state=released) gives the lock back when this play holds it. The lock lives in C(/run), so a reboot frees it.
  - The lock is not part of the host's managed state - C(changed) is always false - and it is taken in check mode too,
    so a check never reads a host halfway through another play's change.
  - Runs as an action on the controller (it knows the play's process) with this module on the host.
author:
  - Blackwell Inference maintainers (@blackwell-inference)
options:
  state:
    description: C(acquired), C(refreshed) (the heartbeat of the lock this play holds) or C(released).
    type: str
    choices: [acquired, refreshed, released]
    default: acquired
  path:
    description: The lock file on the host.
    type: path
    default: /run/blackwell-inference/play.lock
  timeout:
    description: Seconds to wait for another play to finish.
    type: int
    default: 1800
  stale_after:
    description:
      - Seconds after which the lock of a play judged by its heartbeat is taken over; more than the longest stretch
        between two heartbeats at O(timeouts).
      - Unset, that stretch plus 1800, at least 7200.
    type: int
  timeouts:
    description:
      - The roles' timeouts the longest stretch between two heartbeats follows (the apt lock wait and the venv build;
        or a service's smoke and health wait, twice for a rollback). O(stale_after) must be longer than that stretch;
        each unset one is the role's default.
    type: dict
    version_added: 0.4.0
    suboptions:
      apt:
        description: C(cuda_toolkit_apt_lock_timeout).
        type: int
        default: 0
      venv_build:
        description: C(sglang_venv_build_timeout).
        type: int
        default: 3600
      smoke:
        description: C(sglang_service_smoke_timeout).
        type: int
        default: 1800
      health:
        description: C(sglang_service_health_timeout).
        type: int
        default: 900
  owner:
    description: Internal - the record of this play, set by the action plugin.
    type: dict
  take_over:
    description: Internal - the stale record to replace, set by the action plugin.
    type: dict
  facts:
    description:
      - With O(state=acquired), also gather the facts M(ansible.builtin.setup) gathers with C(gather_subset=min)
        (distribution, Python, service manager, local facts from O(fact_path), ...), beside the readings, as this task's
        facts. A play whose first task takes the lock needs no fact gathering call of its own (C(gather_facts=false)).
    type: bool
    default: false
  fact_path:
    description: Where local facts (C(*.fact)) are read from with O(facts), as M(ansible.builtin.setup)'s option.
    type: path
    default: /etc/ansible/facts.d
  read:
    description:
      - With O(state=acquired), what to read of the host in the same call once the lock is this play's, so that a role
        whose own read would ask the same finds it done under the lock (one remote call instead of one per role).
      - O(read.toolkit) takes the options of M(blackwell.inference.toolkit_probe), O(read.venv) those of
        M(blackwell.inference.venv_probe), O(read.service) those of M(blackwell.inference.service_probe). Each reading
        is returned with the options it was made with; a reading that fails is returned as failed, and the role then
        reads for itself and reports it.
    type: dict
    suboptions:
      toolkit:
        description: M(blackwell.inference.toolkit_probe)'s options.
        type: dict
      venv:
        description: M(blackwell.inference.venv_probe)'s options.
        type: dict
      service:
        description:
          - M(blackwell.inference.service_probe)'s options (C(marker), C(cuda_home) and C(jit_dir) required; an
            option that is null is not read).
          - Its C(ansible_facts) stay in its reading (those of the service's environment); they are not this task's.
        type: dict
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - blackwell.inference.attributes
attributes:
  action:
    description: The controller side names the play and waits; this module takes or gives back the lock file.
    support: full
"""

EXAMPLES = r"""
- name: Take the host's lock for this play
  blackwell.inference.host_lock:
    timeout: 1800

- name: Take it, gather the minimal facts and read the toolkits and the venvs under it (a play with gather_facts=false)
  blackwell.inference.host_lock:
    facts: true
    read:
      toolkit: {nvidia_smi: nvidia-smi, toolkit_root: /usr/local, packages: true}
      venv: {root: /opt/sglang, python: /usr/bin/python3}
  register: lock

- name: Give it back
  blackwell.inference.host_lock:
    state: released
"""

RETURN = r"""
acquired:
  description: Whether this play holds the lock now (O(state=acquired)).
  returned: always
  type: bool
holder:
  description:
    - The lock's record (controller, machine_id, boot_id, pid_ns, pid, pid_start, user, since, play, heartbeat,
      beat_boot_id, beat_boottime) - this play's or the one waited for.
  returned: always
  type: dict
age:
  description:
    - Seconds since the holder's heartbeat by the host's boot-time clock (null when no holder, or when the host booted
      since it), when the lock is not this play's.
  returned: when the lock was not acquired
  type: int
booted_since:
  description: Whether the host booted since the holder's heartbeat (the holder is then stale).
  returned: when the lock was not acquired
  type: bool
  version_added: 0.4.0
waited:
  description: Seconds spent waiting for another play.
  returned: with state=acquired
  type: float
took_over:
  description: The record of a gone play whose lock was taken over (with C(why)), or null.
  returned: with state=acquired
  type: dict
read:
  description:
    - Per reading asked for (C(toolkit), C(venv), C(service)) - what M(blackwell.inference.toolkit_probe),
      M(blackwell.inference.venv_probe) or M(blackwell.inference.service_probe) returns (the toolkit's C(blackwell_cuda)
      also as this task's facts), with
      C(options) (the options it was made with) and C(failed); a failed one has C(msg) instead.
  returned: when O(read) is given and the lock was acquired
  type: dict
ansible_facts:
  description:
    - C(blackwell_cuda), from the toolkit reading (when O(read.toolkit) is given and the reading did not fail); with
      O(facts), also the facts of C(gather_subset=min), as M(ansible.builtin.setup) returns them.
  returned: when the lock was acquired
  type: dict
"""

import contextlib
import fcntl
import json
import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.blackwell.inference.plugins.module_utils.common import commands, files
from ansible_collections.blackwell.inference.plugins.module_utils.host import lock as host_lock


def host_clock():
    """(this host's boot id, its boot-time clock in seconds, its wall clock): what a heartbeat is written and aged by."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as fh:
            boot_id = fh.read().strip()
    except OSError:
        boot_id = ""
    boottime = time.clock_gettime(time.CLOCK_BOOTTIME) if hasattr(time, "CLOCK_BOOTTIME") else time.monotonic()
    return boot_id, boottime, time.time()


def read(path):
    """(record or None, whether the file exists, seconds since its heartbeat on this host or None: lock.heartbeat_age)."""
    try:
        with open(path) as fh:
            holder = host_lock.parse(fh.read())
            mtime = os.fstat(fh.fileno()).st_mtime
    except FileNotFoundError:
        return None, False, None
    age = host_lock.heartbeat_age(holder, *host_clock(), file_mtime=mtime)
    return holder, True, (None if age is None else age if age == host_lock.BOOTED_SINCE else int(age))


@contextlib.contextmanager
def guarded(path):
    """Every change of the lock file is made holding an flock of `<path>.guard` (root's, 0600), after reading the record
    again: the read-compare-write of a takeover is one step for every controller."""
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    fd = os.open(path + ".guard", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # the flock goes with it


def write(path, owner):
    """This play's record with a heartbeat of now, written whole (a reader never sees half a record); the record."""
    fresh = dict(owner, **host_lock.heartbeat(*host_clock()))
    files.write_atomic(path, (json.dumps(fresh, sort_keys=True) + "\n").encode("utf-8"), mode=0o644)
    return fresh


def take(path, owner, take_over):
    """Under the guard: the lock for `owner` when nobody holds it, or when the holder is still exactly `take_over` (the
    stale record the controller judged; {} for an unreadable one); None when someone else holds it now."""
    with guarded(path):
        holder, exists, _age = read(path)
        if exists and not (take_over is not None and holder == (take_over or None)):
            return None
        return write(path, owner)


def renew(path, owner):
    """Under the guard: this play's record with a new heartbeat; None when the lock is no longer this play's."""
    with guarded(path):
        holder, exists, _age = read(path)
        if not (exists and host_lock.same_play(holder, owner)):
            return None
        return write(path, holder)


def give_back(path, owner):
    """Under the guard: the lock file removed when it is this play's; the record that was there."""
    with guarded(path):
        holder, exists, _age = read(path)
        if exists and host_lock.same_play(holder, owner):
            os.unlink(path)
        return holder


def readers(module):
    """The reads host_lock's read option may ask for, each through a runner of its own (they run side by side; a
    command asked twice in one reading runs once)."""

    # imported here: giving the lock back reads nothing, and skips their imports on the host
    from ansible_collections.blackwell.inference.plugins.module_utils.host import service_read, toolkit_read  # noqa: PLC0415
    from ansible_collections.blackwell.inference.plugins.module_utils.venv import info as venv_info  # noqa: PLC0415

    def runner():
        return commands.CachingRunner(commands.module_runner(module))

    def toolkit(options):
        run = runner()
        return dict(toolkit_read.read_for(module, run, options), commands_run=list(run.calls))

    def venv(options):
        return venv_info.read_host(runner(), options["root"], options.get("python") or "python3", options.get("tools") or [])

    def service(options):
        return service_read.read(module, runner(), service_read.params(options))

    return {"toolkit": toolkit, "venv": venv, "service": service}


# ansible.builtin.setup's minimal subset (a literal there, not a constant of ansible's facts package)
MIN_SUBSET = frozenset(
    [
        "apparmor",
        "caps",
        "cmdline",
        "date_time",
        "distribution",
        "dns",
        "env",
        "fips",
        "local",
        "lsb",
        "pkg_mgr",
        "platform",
        "python",
        "selinux",
        "service_mgr",
        "ssh_pub_keys",
        "user",
    ]
)


def min_facts(module):
    """What ansible.builtin.setup gathers with gather_subset=min: its collectors, its minimal subset, its namespace."""
    # imported here: only a call with facts=true loads the collectors
    from ansible.module_utils.facts import ansible_collector, default_collectors  # noqa: PLC0415
    from ansible.module_utils.facts.namespace import PrefixFactNamespace  # noqa: PLC0415

    collector = ansible_collector.get_ansible_collector(
        all_collector_classes=default_collectors.collectors,
        namespace=PrefixFactNamespace(namespace_name="ansible", prefix="ansible_"),
        gather_subset=["min"],
        gather_timeout=10,
        minimal_gather_subset=MIN_SUBSET,
    )
    return collector.collect(module=module)


def acquired(module, holder, path):
    """Exit holding the lock, with the facts and what was asked to be read under it. Facts that cannot be gathered
    fail the task and give the lock back (the play stops before its block, whose end would give it back)."""
    # each in a thread of its own: a fail_json there raises (Quiet), so this thread alone answers
    quiet = commands.Quiet(module)
    facts_now = commands.aside(min_facts, quiet) if module.params["facts"] else None
    out, facts = host_lock.readings(module.params["read"], readers(quiet)) if module.params["read"] else (None, {})
    if facts_now is not None:
        try:
            facts.update(facts_now())
        except Exception as exc:
            give_back(path, holder)
            module.fail_json(msg="The host's facts could not be gathered (the lock was given back): %s" % exc, **getattr(exc, "result", {}))
    result = {"changed": False, "acquired": True, "holder": holder, "ansible_facts": facts}
    if out is not None:
        result["read"] = out
    module.exit_json(**result)


def main():
    module = AnsibleModule(
        argument_spec={
            "state": {"type": "str", "choices": ["acquired", "refreshed", "released"], "default": "acquired"},
            "path": {"type": "path", "default": host_lock.DEFAULT_PATH},
            "timeout": {"type": "int", "default": 1800},
            "stale_after": {"type": "int"},
            "timeouts": {
                "type": "dict",
                "options": {
                    "apt": {"type": "int", "default": 0},
                    "venv_build": {"type": "int", "default": 3600},
                    "smoke": {"type": "int", "default": 1800},
                    "health": {"type": "int", "default": 900},
                },
            },
            "owner": {"type": "dict"},
            "take_over": {"type": "dict"},
            "read": {"type": "dict", "options": {"toolkit": {"type": "dict"}, "venv": {"type": "dict"}, "service": {"type": "dict"}}},
            "facts": {"type": "bool", "default": False},
            "fact_path": {"type": "path", "default": "/etc/ansible/facts.d"},
        },
        supports_check_mode=True,
    )
    p = module.params
    if not p["owner"]:
        module.fail_json(msg="host_lock runs through its action plugin (blackwell.inference.host_lock), which names the play")
    owner, path = p["owner"], p["path"]
    if p["state"] == "released":
        module.exit_json(changed=False, acquired=False, holder=give_back(path, owner))
    if p["state"] == "refreshed":
        fresh = renew(path, owner)
        if fresh is None:
            holder, exists, _age = read(path)
            module.fail_json(
                msg="The host's lock is no longer this play's (%s holds it): stopped before the next step changes anything"
                % (host_lock.describe(holder) if exists else "nobody"),
                acquired=False,
                holder=holder,
            )
        module.exit_json(changed=False, acquired=True, holder=fresh)
    fresh = renew(path, owner)  # this play holds it already (a second play of the playbook): renewed
    if fresh is None:
        fresh = take(path, owner, p["take_over"])
    if fresh is not None:
        acquired(module, fresh, path)
    holder, _exists, age = read(path)
    booted_since = age == host_lock.BOOTED_SINCE
    module.exit_json(changed=False, acquired=False, holder=holder, age=None if booted_since else age, booted_since=booted_since)


if __name__ == "__main__":
    main()
