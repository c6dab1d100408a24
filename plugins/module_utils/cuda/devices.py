# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""DeviceAllow= as systemd resolves it (systemd.resource-control(5)) against /proc/devices, the nodes CUDA opens, and
the preflight's refusal of a host whose GPUs the units would deny. Pure: the caller reads /proc/devices and the nodes.
Facts and sources: docs/systemd-gpu-facts.md of the shared docs."""

from __future__ import annotations

import fnmatch

PROC_DEVICES = "/proc/devices"
NVIDIA_MAJOR = 195  # fixed: nvidia-modprobe hard-codes it (NV_MAJOR_DEVICE_NUMBER)
CTL_MINOR = 255
UVM = "nvidia-uvm"
ACCESS = "rw"
# The GPU rules of both units (sglang.service.j2 and validate.service.j2 render them from the service's preflight
# plan, module_utils/service/plan.py unit_plan; this is their one home). Major 195 has two spellings: "nvidia-frontend" before driver
# 550.40 (R535), "nvidia" and "nvidiactl" from 550.40 on (R580, ct200). A unit that names one spelling only is denied
# /dev/nvidiactl and /dev/nvidiaN under the other, so both are listed; a name that matches nothing allows nothing.
# Names, not a glob: char-nvidia* would also allow nvidia-caps-imex-channels (IMEX), which a single host does not need.
# Names, not /dev paths: a path is stat()ed at unit start and skipped when the node is not there yet.
DEVICE_ALLOW = (
    "char-nvidia-frontend",
    "char-nvidia",
    "char-nvidiactl",
    "char-nvidia-uvm",
    "char-nvidia-caps",
    "char-nvidia-nvswitch",
)


def parse(text):
    """/proc/devices text -> {"char": [(major, name)], "block": [(major, name)]}, in file order."""
    out = {"char": [], "block": []}
    section = None
    for raw in (text or "").splitlines():
        line = raw.strip()
        if line.lower().startswith("character devices"):
            section = "char"
        elif line.lower().startswith("block devices"):
            section = "block"
        elif line and section:
            major, _sep, name = line.partition(" ")
            if major.isdigit() and name.strip():
                out[section].append((int(major), name.strip()))
    return out


def nvidia_majors(text):
    """{name: major} of the character devices named nvidia* in /proc/devices text (what the facts report)."""
    return {name: major for major, name in parse(text)["char"] if fnmatch.fnmatchcase(name, "nvidia*")}


def _tables(proc):
    """parse()'s tables from /proc/devices text or from a {name: major} mapping of character devices (the facts')."""
    if isinstance(proc, dict):
        return {"char": [(int(major), str(name)) for name, major in proc.items()], "block": []}
    return parse(proc)


def allow_entries(access=ACCESS):
    """The units' DeviceAllow= values, e.g. ["char-nvidia-frontend rw", ...]."""
    return ["%s %s" % (entry, access) for entry in DEVICE_ALLOW]


def resolve(entries, proc, nodes=None):
    """The rules systemd makes of DeviceAllow= entries at unit start: a list of (kind, major, minor, access), kind "c"
    or "b", minor None for all minors. char-NAME/block-NAME: NAME is a shell glob matched against every name of that
    section of /proc/devices; /dev/PATH: the node's (kind, major, minor) from `nodes` ({path: (kind, major, minor)}),
    skipped when it is absent. An entry without access means rwm. proc: /proc/devices text or {name: major}."""
    tables = _tables(proc)
    rules = []
    for entry in entries:
        spec, _sep, access = str(entry).strip().partition(" ")
        access = access.strip() or "rwm"
        for prefix, kind, section in (("char-", "c", "char"), ("block-", "b", "block")):
            if spec.startswith(prefix):
                pattern = spec[len(prefix) :]
                rules += [(kind, major, None, access) for major, name in tables[section] if fnmatch.fnmatchcase(name, pattern)]
                break
        else:
            node = (nodes or {}).get(spec)
            if node is not None:
                rules.append((node[0], int(node[1]), int(node[2]), access))
    return rules


def allows(rules, node, access=ACCESS):
    """Whether the rules let a process open node (kind, major, minor) with every letter of access."""
    kind, major, minor = node
    granted = set()
    for r_kind, r_major, r_minor, r_access in rules:
        if r_kind == kind and r_major == major and r_minor in (None, minor):
            granted |= set(r_access)
    return set(access) <= granted


def required_nodes(proc, gpu_minors):
    """{path: (kind, major, minor)} of the nodes CUDA opens: /dev/nvidiactl, /dev/nvidiaN for each GPU minor,
    /dev/nvidia-uvm and /dev/nvidia-uvm-tools (major None when nvidia-uvm is not registered)."""
    uvm = {name: major for major, name in _tables(proc)["char"]}.get(UVM)
    nodes = {"/dev/nvidiactl": ("c", NVIDIA_MAJOR, CTL_MINOR)}
    nodes.update(("/dev/nvidia%d" % m, ("c", NVIDIA_MAJOR, int(m))) for m in gpu_minors)
    nodes["/dev/nvidia-uvm"] = ("c", uvm, 0)
    nodes["/dev/nvidia-uvm-tools"] = ("c", uvm, 1)
    return nodes


def denied(entries, proc, gpu_minors, nodes=None):
    """The required nodes (required_nodes) the entries deny, sorted by path. nodes: as in resolve()."""
    rules = resolve(entries, proc, nodes)
    return sorted(path for path, node in required_nodes(proc, gpu_minors).items() if node[1] is None or not allows(rules, node))


def refusal(proc, gpus_answer, entries=DEVICE_ALLOW, source=PROC_DEVICES, uvm_loaded=False):
    """One sentence refusing the host, or None: nvidia-smi answers with GPUs but the units' rules match no major
    /proc/devices registers for /dev/nvidiactl (the sandbox would deny every GPU), or nvidia-uvm is not registered
    (CUDA needs it, and the sandbox cannot load it) and was not loaded since it was read (uvm_loaded).
    proc: /proc/devices text, {name: major}, or None (unreadable)."""
    if not gpus_answer:
        return None
    if proc is None:
        return "nvidia-smi answers with GPUs but %s cannot be read, so the units' DeviceAllow= (%s) cannot be checked against it." % (
            source,
            ", ".join(entries),
        )
    tables = _tables(proc)
    names = [(major, name) for major, name in tables["char"] if fnmatch.fnmatchcase(name, "nvidia*")]
    has = ", ".join("%d %s" % pair for pair in names) or "no nvidia entries"
    rules = resolve(entries, proc)
    if not rules or not allows(rules, ("c", NVIDIA_MAJOR, CTL_MINOR)):
        return (
            "nvidia-smi answers with GPUs but %s has %s and the units' DevicePolicy=closed rules (DeviceAllow=%s) match no"
            " name there for major %d, so the service and its boot validator would be denied /dev/nvidiactl and every /dev/nvidiaN."
            % (source, has, ", ".join(entries), NVIDIA_MAJOR)
        )
    if UVM not in [name for _major, name in names] and not uvm_loaded:
        return (
            "nvidia-smi answers with GPUs but %s has no %s (it has %s): CUDA needs /dev/nvidia-uvm and the units' sandbox"
            " cannot load kernel modules, so load it before the units start (nvidia-uvm in /etc/modules-load.d/, or"
            " `nvidia-modprobe -u -c=0` as root)." % (source, UVM, has)
        )
    return None
