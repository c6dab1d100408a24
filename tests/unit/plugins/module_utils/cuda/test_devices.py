"""DeviceAllow= resolved the way systemd does against /proc/devices of an R535 and an R580 host: the rules the units
render open every node CUDA needs on both; the rules they had before are denied the GPUs on R580 (issue 45)."""

import os
import re

import jinja2
import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.cuda import devices as sd
from ansible_collections.blackwell.inference.plugins.module_utils.host import measure as cuda_measure
from ansible_collections.blackwell.inference.plugins.module_utils.service import plan as service_plan

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", ".."))
TEMPLATES = [os.path.join(ROOT, "roles", "sglang_service", "templates", name) for name in ("sglang.service.j2", "validate.service.j2")]
DOUBLE_TABLE = os.path.join(ROOT, "tests", "fixtures", "bin", "proc-devices")

COMMON_CHAR = """  1 mem
  4 /dev/vc/0
  4 tty
  4 ttyS
  5 /dev/tty
  5 /dev/console
  5 /dev/ptmx
  7 vcs
 10 misc
 13 input
 29 fb
128 ptm
136 pts
180 usb
189 usb_device
226 drm
"""
BLOCK = """
Block devices:
  7 loop
  8 sd
  9 md
259 blkext
"""
# R535 (before 550.40): major 195 is "nvidia-frontend"
R535 = "Character devices:\n" + COMMON_CHAR + "195 nvidia-frontend\n234 nvidia-uvm\n235 nvidia-caps\n" + BLOCK
# R580 (ct200): major 195 is "nvidia" and "nvidiactl"; uvm and caps are dynamic
R580 = "Character devices:\n" + COMMON_CHAR + "195 nvidia\n195 nvidiactl\n509 nvidia-uvm\n510 nvidia-caps\n511 nvidia-caps-imex-channels\n" + BLOCK
R580_NO_UVM = R580.replace("509 nvidia-uvm\n", "")
LAB = "Character devices:\n" + COMMON_CHAR + BLOCK  # the lab container: this machine's kernel, no NVIDIA driver
GPUS = range(8)
REQUIRED = ["/dev/nvidia%d" % i for i in GPUS] + ["/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidiactl"]
# what both units carried before issue 45
OLD_RULES = ["char-nvidia-frontend rw", "char-nvidia-uvm rw", "char-nvidia-caps rw", "char-nvidia-nvswitch rw"]


def rendered_rules(path):
    """The DeviceAllow= values of a unit template, rendered: its DevicePolicy= line up to the next plain setting, with
    the service's plan as the preflight makes it (the rest of the template needs the role's variables)."""
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    start = lines.index("DevicePolicy=closed")
    block = []
    for line in lines[start:]:
        if block and not (line.startswith(("DeviceAllow=", "{%")) or line.startswith("DevicePolicy=")):
            break
        block.append(line)
    env = jinja2.Environment(trim_blocks=True, undefined=jinja2.StrictUndefined)  # noqa: S701 - a unit file, as Ansible renders it
    planned = service_plan.unit_plan({}, mode="unit", name="sglang")
    text = env.from_string("\n".join(block) + "\n").render(__sglang_service_plan=planned)
    return re.findall(r"^DeviceAllow=(.+)$", text, re.M)


@pytest.mark.parametrize("template", TEMPLATES, ids=os.path.basename)
def test_templates_render_the_one_list(template):
    rules = rendered_rules(template)
    assert rules == sd.allow_entries()
    assert "char-nvidia rw" in rules and "char-nvidiactl rw" in rules and "char-nvidia-frontend rw" in rules


@pytest.mark.parametrize("template", TEMPLATES, ids=os.path.basename)
@pytest.mark.parametrize("proc", [R535, R580], ids=["R535", "R580"])
def test_unit_rules_allow_every_node_cuda_opens(template, proc):
    assert sd.denied(rendered_rules(template), proc, GPUS) == []


def test_old_rules_are_denied_the_gpus_on_r580():
    # the before case: ct200's driver names major 195 "nvidia"/"nvidiactl", so char-nvidia-frontend matches nothing
    assert sd.denied(OLD_RULES, R580, GPUS) == sorted(["/dev/nvidiactl"] + ["/dev/nvidia%d" % i for i in GPUS])
    assert sd.denied(OLD_RULES, R535, GPUS) == []


def test_new_names_alone_are_denied_on_r535():
    # nixpkgs issue 331069 the other way round: char-nvidiactl without char-nvidia-frontend on a 535 driver
    assert "/dev/nvidiactl" in sd.denied(["char-nvidia rw", "char-nvidiactl rw", "char-nvidia-uvm rw"], R535, GPUS)


def test_parse_sections():
    tables = sd.parse(R580)
    assert (195, "nvidia") in tables["char"] and (195, "nvidiactl") in tables["char"]
    assert (4, "/dev/vc/0") in tables["char"]
    assert (7, "loop") in tables["block"] and (7, "loop") not in tables["char"]
    assert sd.nvidia_majors(R580) == {"nvidia": 195, "nvidiactl": 195, "nvidia-uvm": 509, "nvidia-caps": 510, "nvidia-caps-imex-channels": 511}
    assert sd.nvidia_majors(R535) == {"nvidia-frontend": 195, "nvidia-uvm": 234, "nvidia-caps": 235}
    assert sd.nvidia_majors(LAB) == {}


def test_required_nodes_use_the_registered_uvm_major():
    nodes = sd.required_nodes(R580, [0, 1])
    assert nodes == {
        "/dev/nvidiactl": ("c", 195, 255),
        "/dev/nvidia0": ("c", 195, 0),
        "/dev/nvidia1": ("c", 195, 1),
        "/dev/nvidia-uvm": ("c", 509, 0),
        "/dev/nvidia-uvm-tools": ("c", 509, 1),
    }


def test_uvm_not_registered_is_denied():
    assert sd.denied(sd.allow_entries(), R580_NO_UVM, GPUS) == ["/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"]


def test_glob_matches_like_systemd():
    assert sd.denied(["char-nvidia* rw"], R580, GPUS) == []
    assert sd.denied(["char-nvidia* rw"], R535, GPUS) == []
    # an exact name is not a prefix: char-nvidia-caps does not match nvidia-caps-imex-channels
    assert {r[1] for r in sd.resolve(["char-nvidia-caps rw"], R580)} == {510}
    assert sd.resolve(["char-nvidia-caps? rw"], R580) == []


def test_access_letters_and_block_entries():
    assert "/dev/nvidiactl" in sd.denied(["char-nvidia r", "char-nvidiactl r", "char-nvidia-uvm rw"], R580, GPUS)
    assert sd.resolve(["char-nvidia"], R580)[0][3] == "rwm"  # no access given: rwm
    assert sd.resolve(["block-loop rw"], R580) == [("b", 7, None, "rw")]
    assert not sd.allows(sd.resolve(["block-loop rw"], R580), ("c", 7, 0))


def test_paths_resolve_from_the_node_table_and_absent_ones_are_skipped():
    nodes = {"/dev/nvidiactl": ("c", 195, 255), "/dev/nvidia0": ("c", 195, 0), "/dev/nvidia-uvm": ("c", 509, 0)}
    entries = ["/dev/nvidiactl rw", "/dev/nvidia0 rw", "/dev/nvidia1 rw", "/dev/nvidia-uvm rw", "/dev/nvidia-uvm-tools rw"]
    rules = sd.resolve(entries, R580, nodes)
    assert rules == [("c", 195, 255, "rw"), ("c", 195, 0, "rw"), ("c", 509, 0, "rw")]
    # the nodes not there at unit start stay denied (a path is stat()ed once)
    assert sd.denied(entries, R580, [0, 1], nodes) == ["/dev/nvidia-uvm-tools", "/dev/nvidia1"]


def test_refusal_none_without_gpus_or_with_the_units_rules():
    assert sd.refusal(LAB, False) is None
    assert sd.refusal(R580, True) is None
    assert sd.refusal(R535, True) is None
    assert sd.refusal(sd.nvidia_majors(R580), True) is None  # the facts' {name: major}


def test_refusal_lab_case_no_nvidia_entries_while_nvidia_smi_answers():
    msg = sd.refusal(LAB, True)
    assert "no nvidia entries" in msg and "char-nvidia-frontend" in msg and "char-nvidiactl" in msg
    assert "/dev/nvidiactl" in msg and msg.count(". ") == 0
    assert sd.refusal({}, True) == msg


def test_refusal_names_what_proc_devices_has_for_rules_that_miss_it():
    msg = sd.refusal(R580, True, entries=["char-nvidia-frontend", "char-nvidia-uvm"])
    assert "195 nvidia, 195 nvidiactl, 509 nvidia-uvm" in msg and "DeviceAllow=char-nvidia-frontend, char-nvidia-uvm" in msg


def test_refusal_uvm_not_loaded():
    msg = sd.refusal(R580_NO_UVM, True, source="/proc/devices")
    assert "no nvidia-uvm" in msg and "modules-load.d" in msg and "nvidia-modprobe -u -c=0" in msg
    assert sd.refusal(R580_NO_UVM, False) is None


def test_refusal_unreadable():
    assert "cannot be read" in sd.refusal(None, True, source="/nowhere")
    assert sd.refusal(None, False) is None


def test_the_lab_doubles_table_passes_the_preflight():
    with open(DOUBLE_TABLE, encoding="utf-8") as fh:
        text = fh.read()
    assert sd.nvidia_majors(text)["nvidiactl"] == 195
    assert sd.refusal(text, True) is None
    assert sd.denied(sd.allow_entries(), text, GPUS) == []


def test_the_service_plans_refusal_reads_the_facts():
    # the service probe's plan (module_utils/service/plan.py device_refusals): as read, and once nvidia-uvm was loaded
    facts = {"gpus": [{"index": 0}], "device_majors": {}}
    assert "no nvidia entries" in service_plan.device_refusals(facts, "/proc/devices")["read"]
    assert service_plan.device_refusals(dict(facts, device_majors=sd.nvidia_majors(R580))) == {"read": "", "uvm_loaded": ""}
    assert service_plan.device_refusals({"gpus": [], "device_majors": None}) == {"read": "", "uvm_loaded": ""}
    without_uvm = {k: v for k, v in sd.nvidia_majors(R580).items() if k != "nvidia-uvm"}
    got = service_plan.device_refusals(dict(facts, device_majors=without_uvm), "/tmp/devices")
    assert got["read"].startswith("nvidia-smi answers with GPUs but /tmp/devices has no nvidia-uvm") and got["uvm_loaded"] == ""


def test_facts_read_the_table_once_from_the_given_path(tmp_path):
    table = tmp_path / "proc-devices"
    table.write_text(R580, encoding="utf-8")
    assert cuda_measure.gather_device_majors(str(table)) == (sd.nvidia_majors(R580), None)
    majors, error = cuda_measure.gather_device_majors(str(tmp_path / "missing"))
    assert majors is None and "cannot read" in error
    assert cuda_measure.FACTS_DEFAULTS["proc_devices"] == "/proc/devices"


def test_nvidia_uvm_loaded_by_the_role_since_the_read_is_not_refused():
    assert "no nvidia-uvm" in sd.refusal(R580_NO_UVM, True)
    assert sd.refusal(R580_NO_UVM, True, uvm_loaded=True) is None
    # a loaded uvm does not excuse rules that deny /dev/nvidiactl
    assert "would be denied /dev/nvidiactl" in sd.refusal(R580_NO_UVM, True, entries=["char-nvidia-frontend"], uvm_loaded=True)
