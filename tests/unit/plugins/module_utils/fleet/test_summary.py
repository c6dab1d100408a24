"""The end-of-run table across hosts: rows from the facts and results a run saw (shapes of cuda_facts' blackwell_cuda
and the service role's sglang_service_summary on the lab's ct200), the table and the JSON document."""

import json

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.fleet import summary as fs

GPU = {"index": 0, "name": "NVIDIA RTX PRO 6000 Blackwell Server Edition", "uuid": "GPU-0", "compute_capability": "12.0", "memory_mib": 97887}
HOPPER = {"index": 8, "name": "NVIDIA H200", "uuid": "GPU-8", "compute_capability": "9.0", "memory_mib": 143771}
CONVERGED = {
    "gpus": [dict(GPU, index=i, uuid="GPU-%d" % i) for i in range(8)],
    "compute_capabilities": ["12.0"],
    "driver": {"present": True, "version": "580.95.05", "cuda_version": "13.0", "error": None},
    "flashinfer": {
        "version": "0.7.4",
        "cuda_home": "/usr/local/cuda-13.0",
        "cuda_home_source": "CUDA_HOME",
        "cuda_version": "13.0",
        "cuda_version_source": "nvcc",
        "target_archs": ["120a"],
        "accepted": True,
        "error": None,
    },
    "sglang": None,
}
# the seeds' ct200: 12.8's nvcc won FlashInfer's lookup
INCIDENT = dict(
    CONVERGED,
    flashinfer=dict(
        CONVERGED["flashinfer"],
        version="0.7.0",
        cuda_home="/usr/local",
        cuda_version="12.8",
        target_archs=[],
        accepted=False,
        error="SM 12.x requires CUDA >= 12.9",
    ),
)
NO_DRIVER = dict(
    CONVERGED,
    gpus=[],
    compute_capabilities=[],
    driver={"present": False, "error": "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver"},
)
READY = {
    "unit": "sglang-k26.service",
    "mode": "dropin",
    "ready": True,
    "state": "validated and serving",
    "reason": "compiled, JIT cache warm (sampling); not launched (no GPU device node (/dev/nvidia0)), allowed by policy",
    "health": "200",
}
NOT_READY = dict(
    READY, ready=False, state="failed", health="-1", reason="the restarted service did not answer http://127.0.0.1:30000/health: the unit is failed"
)


def test_gpus_one_part_per_compute_capability():
    assert fs.gpus(CONVERGED) == "8x NVIDIA RTX PRO 6000 Blackwell Server Edition (CC 12.0)"
    mixed = dict(CONVERGED, gpus=[*CONVERGED["gpus"][:2], HOPPER], compute_capabilities=["9.0", "12.0"])
    assert fs.gpus(mixed) == "1x NVIDIA H200 (CC 9.0), 2x NVIDIA RTX PRO 6000 Blackwell Server Edition (CC 12.0)"
    assert fs.gpus(NO_DRIVER) == "none (NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver)"
    assert fs.gpus(None) == "-"


def test_toolkit_and_flashinfer_verdict():
    assert fs.toolkit(CONVERGED) == "13.0 (/usr/local/cuda-13.0)" and fs.flashinfer(CONVERGED) == "0.7.4 ACCEPTED (120a)"
    assert fs.toolkit(INCIDENT) == "12.8 (/usr/local)" and fs.flashinfer(INCIDENT) == "0.7.0 REFUSED: SM 12.x requires CUDA >= 12.9"
    assert fs.toolkit(None) == "-" and fs.flashinfer({}) == "-"


def test_a_refusal_inside_sglangs_workers_is_the_services():
    workers = [{"compute_capability": "12.0", "arch_list": "12.0a", "accepted": False, "error": "no CUDA >= 12.9 for 120a"}]
    facts = dict(CONVERGED, sglang={"version": "0.5.23", "workers": workers})
    assert fs.flashinfer(facts) == "0.7.4 REFUSED in SGLang's workers (CC 12.0): no CUDA >= 12.9 for 120a"
    facts["sglang"]["workers"][0]["accepted"] = True
    assert fs.flashinfer(facts) == "0.7.4 ACCEPTED (120a)"


@pytest.mark.parametrize(
    "kwargs, status, ready, why",
    [
        (dict(cuda=CONVERGED, summary=READY), "READY", True, READY["reason"]),
        # the service role's own verdict; the play's last task fails such a host with the same reason
        (dict(cuda=CONVERGED, summary=NOT_READY, failure=("Fail hosts that are not ready", "ct200 is NOT READY")), "NOT READY", False, NOT_READY["reason"]),
        # failed before the service role's verdict: the task and its message
        (
            dict(cuda=INCIDENT, failure=("Refuse what cannot be served", "cuda_toolkit_versions:\n  13.0.9 has no pinned packages")),
            "NOT READY",
            False,
            "failed at 'Refuse what cannot be served': cuda_toolkit_versions: 13.0.9 has no pinned packages",
        ),
        (dict(summary=READY, failure=("Give the host's lock back", "boom")), "NOT READY", False, 'failed at "Give the host\'s lock back": boom'),
        (
            dict(unreachable="Failed to connect to the host via ssh: ssh: connect to host 10.251.0.3 port 22: No route to host"),
            "UNREACHABLE",
            False,
            "Failed to connect to the host via ssh: ssh: connect to host 10.251.0.3 port 22: No route to host",
        ),
        (dict(reached=False, stopped="the roll stopped before its batch (after ct201)"), "NOT RUN", False, "the roll stopped before its batch (after ct201)"),
        # refused by site.yml's check play: the roll never started, the refusal is the reason (not NOT RUN)
        (
            dict(
                cuda=CONVERGED, failure=("Check the variables", "Refused before any change. sglang_venv_keep: >= 2"), reached=False, stopped="the roll stopped"
            ),
            "NOT READY",
            False,
            "failed at 'Check the variables': Refused before any change. sglang_venv_keep: >= 2",
        ),
        # checked, then the roll stopped before its batch: its measured GPUs are shown, the status is NOT RUN
        (
            dict(cuda=CONVERGED, reached=False, stopped="the roll stopped before its batch (after ct201)"),
            "NOT RUN",
            False,
            "the roll stopped before its batch (after ct201)",
        ),
        (dict(cuda=CONVERGED), "NOT READY", False, "no service summary (the tags chosen skip it, or check mode)"),
        (dict(cuda=CONVERGED, summary=dict(READY, ready="True")), "READY", True, READY["reason"]),
    ],
)
def test_row_status_and_why(kwargs, status, ready, why):
    r = fs.row("ct200", **kwargs)
    assert (r["status"], r["ready"], r["why"]) == (status, ready, why)
    assert set(r) == {"host", "gpus", "toolkit", "flashinfer", "service", "status", "ready", "why", "refused_services"}


def test_service_column():
    assert fs.service(READY) == "sglang-k26.service answering"
    assert fs.service(NOT_READY) == "sglang-k26.service not answering (-1)"
    assert fs.service(None) == "-"
    failed = dict(READY, health=404, sample={"url": "http://127.0.0.1:30000/generate", "status": 404, "ok": False, "detail": "answered HTTP 404: {}"})
    assert fs.service(failed) == "sglang-k26.service answering, sampled request failed (404)"
    assert fs.service(dict(READY, sample={"ok": True, "status": 200})) == "sglang-k26.service answering"


def test_a_refused_service_beside_the_managed_one_is_named_and_leaves_the_verdict_alone():
    services = [
        {"unit": "sglang-k26.service", "managed": True, "accepted": True},
        {"unit": "sglang-dflash.service", "managed": False, "accepted": True},
        {"unit": "sglang-eagle3.service", "managed": False, "accepted": False, "error": "SM 12.x requires CUDA >= 12.9"},
    ]
    r = fs.row("ct200", cuda=dict(CONVERGED, services=services), summary=READY)
    assert (r["status"], r["ready"]) == ("READY", True)  # READY is the managed service's
    assert r["refused_services"] == ["sglang-eagle3.service"]
    assert r["service"] == "sglang-k26.service answering; REFUSED beside it: sglang-eagle3.service"
    # a refused managed service is the FlashInfer column's, not this one's
    r = fs.row("ct200", cuda=dict(CONVERGED, services=[dict(services[0], accepted=False)]), summary=READY)
    assert r["refused_services"] == [] and r["service"] == "sglang-k26.service answering"


def test_long_reasons_stay_on_one_line():
    r = fs.row("ct200", failure=("t", "line one\n" + "x" * 400))
    assert "\n" not in r["why"] and len(r["why"]) <= 320 and r["why"].endswith("...")


def test_the_why_cell_is_one_bounded_line_with_every_journal_cause():
    causes = [{"cause": "cause %d:\n%s" % (i, "y" * 250)} for i in range(4)]
    r = fs.row("ct200", summary={"ready": False, "reason": "x" * 290 + "\nsecond line", "causes": causes})
    assert "\n" not in r["why"] and len(r["why"]) == fs.WHY_LIMIT and r["why"].startswith("x" * 290) and r["why"].endswith("...")


def test_table_lines_up_the_columns_and_the_document_counts():
    rows = [
        fs.row("ct200", cuda=CONVERGED, summary=READY),
        fs.row("ct201", cuda=INCIDENT, failure=("Check the toolkit", "nvcc 13.0 does not run")),
        fs.row("ct202", reached=False, stopped="the roll stopped before its batch (after ct201)"),
    ]
    lines = fs.table(rows)
    assert lines[0].split() == ["host", "GPUs", "toolkit", "FlashInfer", "service", "status", "why"]
    assert lines[1].startswith("ct200  8x NVIDIA RTX PRO 6000 Blackwell Server Edition (CC 12.0)  13.0 (/usr/local/cuda-13.0)  0.7.4 ACCEPTED (120a)")
    # every row's status starts in the same column
    col = lines[0].index("status")
    assert [line[col:].split("  ")[0] for line in lines[1:]] == ["READY", "NOT READY", "NOT RUN"]
    doc = json.loads(json.dumps(fs.document(rows, playbook="site.yml", started="2026-12-02T00:00:00Z", ended="2026-12-02T00:10:00Z")))
    assert doc["hosts"] == 3 and doc["ready"] == 1 and doc["counts"] == {"READY": 1, "NOT READY": 1, "NOT RUN": 1}
    assert [r["host"] for r in doc["rows"]] == ["ct200", "ct201", "ct202"] and doc["playbook"] == "site.yml"


@pytest.mark.parametrize(
    ("result", "msg"),
    [
        ({"msg": "Refused before any change. sglang_service_port: 1-65535 (got 0)."}, "Refused before any change. sglang_service_port: 1-65535 (got 0)."),
        ({"rc": 1, "stderr": "nvcc fatal"}, "nvcc fatal"),
        ({}, "failed"),
        # a loop (the toolkit's verify, one item per release): Ansible says only "One or more items failed"
        (
            {
                "msg": "One or more items failed",
                "results": [
                    {"failed": False, "item": {"version": "12.8"}, "_ansible_item_label": "12.8"},
                    {
                        "failed": True,
                        "msg": "/usr/local/cuda-13.0: nvcc reports 13.0, curand headers: False, lib64/stubs/libcuda.so: True",
                        "_ansible_item_label": "13.0",
                    },
                ],
            },
            "13.0: /usr/local/cuda-13.0: nvcc reports 13.0, curand headers: False, lib64/stubs/libcuda.so: True",
        ),
        ({"msg": "One or more items failed", "results": [{"failed": True, "rc": 2, "stderr": "boom", "item": ["13.0", "sm_120a"]}]}, "boom"),
    ],
)
def test_failure_message_of_a_task_and_of_a_loop(result, msg):
    assert fs.failure_message(result) == msg


def test_a_loops_failed_item_as_the_callback_sees_it():
    # what a callback gets for the toolkit verify's failed item: no "failed" flag, the assert's message and the label
    item = {
        "changed": False,
        "msg": "/usr/local/cuda-13.0: nvcc reports 13.0, curand headers: False, lib64/stubs/libcuda.so: True",
        "ansible_loop_var": "item",
        "_ansible_item_label": "13.0",
        "item": {"version": "13.0"},
        "evaluated_to": False,
    }
    assert fs.item_failure(item) == "13.0: /usr/local/cuda-13.0: nvcc reports 13.0, curand headers: False, lib64/stubs/libcuda.so: True"
    loop = {"changed": False, "msg": "One or more items failed", "results": [dict(item, msg="All assertions passed", _ansible_item_label="12.8"), item]}
    assert fs.failure_message(loop, fs.item_failure(item)) == fs.item_failure(item)
    assert fs.failure_message(loop) == "One or more items failed"  # without the callback's item: Ansible's words


def test_flashinfer_column_without_a_venv_is_not_a_refusal():
    no_venv = dict(
        CONVERGED, flashinfer={"version": None, "accepted": False, "error": "no venv given (set venv or flashinfer_version)", "error_stage": "version"}
    )
    assert fs.flashinfer(no_venv) == "-"
    missing = dict(CONVERGED, flashinfer=dict(no_venv["flashinfer"], error="flashinfer-python is not installed in venv=/opt/sglang/current"))
    assert fs.flashinfer(missing) == "not installed"


def test_a_failed_service_row_says_what_its_journal_says():
    summary = dict(
        NOT_READY,
        causes=[
            {
                "name": "flashinfer_no_arch",
                "cause": "FlashInfer found no target arch: its GPU detection failed behind a CUDA version lookup that found CUDA 12.8",
                "fix": "point the unit at CUDA >= 12.9",
                "line": "RuntimeError: FlashInfer requires GPUs with sm75 or higher",
            }
        ],
    )
    got = fs.row("ct200", cuda=CONVERGED, summary=summary, failure=("Fail hosts that are not ready", "ct200 is NOT READY"))
    assert got["status"] == "NOT READY"
    assert (
        got["why"]
        == NOT_READY["reason"] + "; journal: FlashInfer found no target arch: its GPU detection failed behind a CUDA version lookup that found CUDA 12.8"
    )
    assert fs.row("ct200", cuda=CONVERGED, summary=dict(READY, causes=summary["causes"]))["why"] == READY["reason"]  # answering: no blame


@pytest.mark.parametrize(
    ("playbook", "stdout", "quiet"),
    [
        ("__adhoc_playbook__", "ansible.builtin.minimal", True),
        ("site.yml", "ansible.builtin.json", True),
        ("site.yml", "json", True),
        ("site.yml", "ansible.builtin.default", False),
        ("site.yml", None, False),
    ],
)
def test_the_callbacks_stay_quiet_where_stdout_is_machine_read(playbook, stdout, quiet):
    assert fs.quiet(playbook, stdout) is quiet
