"""A fleet of lab hosts: ct200 and ct201, ct202, ... booted from one image, each its own systemd-nspawn machine on its
own veth (labctl.sh), and an inventory of the `inference` group over all of them with the lab's variables.

    python3 tests/lab/fleet.py up N [STATE]    boot ct201..ct20(N-1) beside a running ct200 (LAB_INDEX, default 0)
                                               from STATE's image (default converged); print the inventory's path
    python3 tests/lab/fleet.py down N          power them off and remove them (ct200 stays)

`make lab LAB_HOSTS=3` runs `up 3 before` after its prepare; `make lab-destroy` runs `down 10`. The extra hosts use veth
indices 10 * (LAB_INDEX + 1) + i, so each pytest-xdist worker's fleet has addresses of its own."""

import concurrent.futures
import os
import sys

import yaml

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    from tests.lab import images
else:
    from . import images

ROOT = images.ROOT
CACHE = os.environ.get("BLACKWELL_CACHE_DIR", "/var/cache/blackwell-inference")


def members(count, index):
    """[(name, veth index)] of a fleet of `count` hosts (at most 10) whose first, ct200, is at `index`: the others at
    10 * (index + 1) + i, so the fleets of the lab (index 0) and of each pytest-xdist worker never share a veth."""
    if not 1 <= int(count) <= 10:
        raise ValueError("a lab fleet has 1 to 10 hosts (got %s)" % count)
    return [("ct200", int(index))] + [("ct%d" % (200 + i), 10 * (int(index) + 1) + i) for i in range(1, int(count))]


def inventory(path, hosts, lab_dir, user="root", host_vars=None):
    """Write the fleet's inventory: the lab's ct200 variables for every host (group_vars), per-host overrides."""
    with open(os.path.join(ROOT, "inventories", "lab", "host_vars", "ct200.yml"), encoding="utf-8") as fh:
        group_vars = yaml.safe_load(fh)
    group_vars.update(
        ansible_user=user,
        ansible_ssh_private_key_file=os.path.join(lab_dir, "id_ed25519"),
        ansible_ssh_common_args="-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
        ansible_python_interpreter="/usr/bin/python3",
    )
    doc = {
        "inference": {
            "vars": group_vars,
            "hosts": {name: dict({"ansible_host": "10.251.%d.2" % idx}, **(host_vars or {}).get(name, {})) for name, idx in hosts},
        }
    }
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        yaml.safe_dump(doc, fh, sort_keys=False)
    return path


def up(hosts, image, suite="bookworm", env=None):
    """Boot the hosts (all but ct200, which the caller has) from `image`, in parallel: each boot mostly waits on its
    own systemd and boot validation."""

    def boot(member):
        name, idx = member
        res = images.labctl("up", name, str(idx), suite, image, check=False, env=env)
        if res.returncode != 0:
            raise RuntimeError("labctl up %s %s failed (rc %s):\n%s%s" % (name, idx, res.returncode, res.stdout, res.stderr))
        return res.stdout

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(hosts) - 1)) as pool:
        return list(pool.map(boot, hosts[1:]))


def down(hosts, env=None):
    """Power off and remove the hosts but ct200; what each left behind (empty = clean)."""
    left = []
    for name, idx in hosts[1:]:
        images.labctl("down", name, str(idx), check=False, env=env)
        left.append(images.labctl("leftovers", name, str(idx), check=False, env=env).stdout)
    return "".join(left)


def main(argv):
    index = os.environ.get("LAB_INDEX", "0")
    lab_dir = os.environ.get("LAB_DIR") or os.path.join(CACHE, "lab")
    env = dict(os.environ, LAB_DIR=lab_dir)
    if len(argv) in (2, 3) and argv[0] == "up":
        hosts = members(int(argv[1]), index)
        state = argv[2] if len(argv) == 3 else "converged"
        if not images.have(state):
            print("no %s image in the cache yet (make test, or a lab test, builds it)" % state, file=sys.stderr)
            return 1
        up(hosts, images.name(state), os.environ.get("LAB_SUITE", "bookworm"), env=env)
        print(inventory(os.path.join(lab_dir, "fleet", "hosts.yml"), hosts, lab_dir))
        return 0
    if len(argv) == 2 and argv[0] == "down":
        left = down(members(int(argv[1]), index), env=env)
        print(left, end="")
        return 1 if left else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
