"""One service's summary at the end of its run (service_plan.summary): which health and smoke count, and the reason."""

import copy

from ansible_collections.blackwell.inference.plugins.module_utils.service import plan as sp

# the ready marker and the preflight's look on the converged lab host (ct200), as a no-op reads them
MARKER = {
    "ready": True,
    "reason": "compiled, JIT cache warm (sampling); not launched (no GPU device node (/dev/nvidia0)), allowed by policy",
    "time": "2026-12-05T20:57:14Z",
    "smoke": {"compile": {"ok": True, "seconds": 1.04, "archs": ["sm_120a"]}, "launch": {"launched": False, "reason": "no GPU device node"}},
    "last_good": {"venv": "/opt/sglang/venvs/119f0a510a34ff5f", "time": "2026-12-05T20:16:05Z"},
}
LOOK = {"stands": True, "answered": True, "status": 200, "sample": {"ok": True, "url": "http://127.0.0.1:30000/generate", "detail": "answered 25 characters"}}
NOOP = {
    "unit": "sglang-k26.service",
    "mode": "dropin",
    "environment": {"CUDA_HOME": "/usr/local/cuda-13.0", "FLASHINFER_CUDA_ARCH_LIST": "12.0a"},
    "need": {"needed": False, "why": ""},
    "probe_health": LOOK,
    "health_now": {"skipped": True, "skip_reason": "Conditional result was False"},
    "live_smoke": None,
    "ready_without_launch": True,
    "verdict": None,
    "smoke": None,
    "unit_show": {"source": "unit", "replaced": True, "old": ["/usr/bin/python3", "-m", "sglang.launch_server"]},
    "command": ["/opt/sglang/current/bin/python", "-m", "sglang.launch_server"],
}


def test_a_no_op_reports_the_marker_and_the_look_that_stood():
    got = sp.summary(MARKER, NOOP)
    assert (got["ready"], got["state"], got["reason"]) == (True, "validated and serving", MARKER["reason"])
    assert got["smoke"] == MARKER["smoke"] and got["smoke_source"] == "ready marker of 2026-12-05T20:57:14Z"
    assert got["health"] == 200 and got["sample"] == LOOK["sample"] and got["causes"] == []
    assert got["command"] == {"source": "unit", "argv": NOOP["command"], "old": NOOP["unit_show"]["old"]}
    assert got["last_good"] == MARKER["last_good"] and got["unit"] == "sglang-k26.service" and got["mode"] == "dropin"


def test_the_health_check_counts_when_it_ran_and_a_service_that_does_not_answer_is_not_ready():
    down = dict(NOOP, health_now={"status": -1, "msg": "does not answer on port 30000", "causes": [{"cause": "oom"}], "changed": False})
    got = sp.summary(MARKER, down)
    assert got["ready"] is False and got["health"] == -1 and got["causes"] == [{"cause": "oom"}]
    assert got["reason"] == "the service does not answer on port 30000"


def test_a_live_smoke_and_this_runs_validation_are_the_smoke_reported():
    live = {"failed": False, "steps": {"compile": {"ok": True}, "launch": {"launched": True, "detail": "8 GPUs"}}, "changed": False}
    got = sp.summary(MARKER, dict(NOOP, live_smoke=live))
    assert got["smoke_source"] == "live (--tags verify)" and got["smoke"] == live["steps"] and got["ready"] is True
    failed = sp.summary(MARKER, dict(NOOP, live_smoke={"failed": True, "msg": "nvcc: not found", "steps": {}}))
    assert failed["ready"] is False and failed["reason"].startswith("smoke failed: nvcc: not found")
    # a skipped live smoke (a run without --tags verify) is no live smoke
    assert sp.summary(MARKER, dict(NOOP, live_smoke={"skipped": True}))["smoke_source"].startswith("ready marker of")
    validated = sp.summary(MARKER, dict(NOOP, verdict={"ready": True}, smoke={"steps": {"compile": {"ok": True, "seconds": 2}}}))
    assert validated["smoke_source"] == "this run" and validated["smoke"] == {"compile": {"ok": True, "seconds": 2}}


def test_inputs_changed_since_the_validation_and_no_marker():
    changed = sp.summary(MARKER, dict(NOOP, need={"needed": True, "why": "the venv changed"}))
    assert changed["ready"] is False and "the venv changed; a converge revalidates" in changed["reason"]
    nothing = sp.summary({}, dict(NOOP, unit_show={"source": "variables", "replaced": False}))
    assert nothing["ready"] is False and nothing["reason"] == "no ready marker" and nothing["smoke"] == {}
    assert nothing["smoke_source"] == "ready marker of never" and "old" not in nothing["command"] and nothing["last_good"] is None
    assert sp.summary(copy.deepcopy(MARKER), NOOP) == sp.summary(MARKER, NOOP)
