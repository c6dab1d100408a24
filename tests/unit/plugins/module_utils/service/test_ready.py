"""READY in one place (module_utils/service/ready.py): the smoke's verdict, when a host needs a validation and why a
run validates again, whether the preflight's look stands, the marker each step writes, a host's state and reason, the
host's verdict over its services, and the words."""

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.service import ready

# jit_smoke module results as the role registers them (failed smoke: ignore_errors keeps failed=true)
LAUNCHED = {
    "changed": False,
    "launched": True,
    "steps": {
        "compile": {"ok": True, "seconds": 1.9, "archs": ["sm_120f"]},
        "launch": {"launched": True, "ok": True, "detail": "max_error=0", "seconds": 0.4},
        "warm": {"modules": [{"name": "sampling", "compiled": False, "seconds": 0.01}]},
    },
}
NO_GPU = {
    "changed": True,
    "launched": False,
    "steps": {
        "compile": {"ok": True, "seconds": 0.7, "archs": ["sm_120f"]},
        "launch": {"launched": False, "ok": None, "reason": "no GPU device node (/dev/nvidia0)"},
        "warm": {"modules": [{"name": "sampling", "compiled": True, "seconds": 64.2}]},
    },
}
NO_CURAND = {  # as the lab's smoke reported it, with curand.h removed from CUDA 13.0 (output shortened)
    "failed": True,
    "msg": "FlashInfer's JIT warm-up failed in the service environment: RuntimeError: Ninja build failed. Ninja output:\n"
    "ninja: Entering directory `/var/cache/sglang/.cache/flashinfer/0.7.4/120f/cached_ops/sampling'\n"
    "[1/3]  /usr/local/cuda-13.0/bin/nvcc --generate-dependencies-with-compile -MF x.d -c sampling.cu\n"
    "FAILED: [code=1] /var/cache/sglang/.cache/flashinfer/0.7.4/120f/cached_ops/sampling/csrc_sampling.cuda.o\n"
    "/opt/sglang/venvs/2c26817414e442ed/lib/python3.11/site-packages/flashinfer/data/include/flashinfer/sampling.cuh:21:10: "
    "fatal error: curand.h: No such file or directory\n"
    "compilation terminated.",
    "steps": {"compile": {"ok": True}, "launch": {"launched": False, "reason": "no GPU device node (/dev/nvidia0)"}},
}


@pytest.mark.parametrize(
    "smoke,policy,is_ready,reason",
    [
        (LAUNCHED, False, True, "kernel launched (max_error=0), JIT cache warm (sampling)"),
        (NO_GPU, False, False, "no kernel launched (no GPU device node (/dev/nvidia0)) and sglang_service_ready_without_launch is false"),
        (NO_GPU, True, True, "compiled, JIT cache warm (sampling); not launched (no GPU device node (/dev/nvidia0)), allowed by policy"),
        (
            NO_CURAND,
            True,
            False,
            "smoke failed: FlashInfer's JIT warm-up failed in the service environment: RuntimeError: Ninja build failed. Ninja output:"
            " (fatal error: curand.h: No such file or directory)",
        ),
        ({}, False, False, "no kernel launched (no launch step) and sglang_service_ready_without_launch is false"),
    ],
)
def test_verdict(smoke, policy, is_ready, reason):
    assert ready.verdict(bool(smoke.get("failed")), smoke, policy) == (is_ready, reason)
    assert ready.smoke_verdict(smoke, policy) == {"ready": is_ready, "reason": reason}  # the filter's form


@pytest.mark.parametrize(
    "marker,needed,why",
    [
        (None, True, "no ready marker"),
        ({}, True, "no ready marker"),
        ({"ready": False, "reason": "smoke failed: x", "inputs": "d1"}, True, "marked not ready: smoke failed: x"),
        ({"ready": True, "inputs": "d0"}, True, "validated inputs differ from the current ones"),
        ({"ready": True, "inputs": "d1"}, False, "ready for the current inputs"),
    ],
)
def test_needs_validation(marker, needed, why):
    assert ready.needs_validation(marker, "d1") == (needed, why)


def test_marker_keeps_last_good_until_a_state_serves():
    validated = ready.marker(True, "r", "2026-11-29T09:00:00Z", "d1", "/opt/sglang/venvs/a", {}, "12.0f", {}, NO_GPU, phase="validated")
    assert validated["ready"] and validated["phase"] == "validated" and validated["last_good"] is None  # not serving yet
    ok = ready.marker(
        True,
        "r",
        "2026-11-29T10:00:00Z",
        "d1",
        "/opt/sglang/venvs/a",
        {"cuda_version": "13.0"},
        "12.0f",
        {"torch": "2.13.0"},
        NO_GPU,
        validated,
        phase="serving",
        promote=True,
    )
    assert ok["ready"] and ok["phase"] == "serving" and not ok["launched"] and ok["smoke"]["warm"]["modules"][0]["compiled"]
    assert ok["last_good"] == {"venv": "/opt/sglang/venvs/a", "inputs": "d1", "time": "2026-11-29T10:00:00Z"}
    bad = ready.marker(False, "smoke failed", "2026-11-29T11:00:00Z", "d2", "/opt/sglang/venvs/b", {}, "12.0f", {}, NO_CURAND, ok)
    assert not bad["ready"] and bad["venv"] == "/opt/sglang/venvs/b"
    assert bad["last_good"] == ok["last_good"]
    assert bad["phase"] == "failed"
    boot = ready.marker(True, "boot", "2026-11-29T12:00:00Z", "d1", "/opt/sglang/venvs/a", {}, "12.0f", {}, NO_GPU, bad, source="boot validation (x)")
    assert boot["phase"] == "validated" and boot["last_good"] == ok["last_good"]  # a boot validation alone proves no serving
    assert ready.marker(False, "x", "t", "d", "/v", {}, "", {}, None)["last_good"] is None
    with pytest.raises(ValueError):
        ready.marker(False, "x", "t", "d", "/v", {}, "", {}, None, phase="serving", promote=True)
    with pytest.raises(ValueError):
        ready.marker(True, "x", "t", "d", "/v", {}, "", {}, None, phase="ready")


MARKED = {"ready": True, "reason": "compiled, JIT cache warm (sampling); not launched (no GPU device node (/dev/nvidia0)), allowed by policy"}
ROLLED_BACK = {"ready": False, "reason": "the restarted service did not answer: the unit is failed; restored the last good state of 2026-12-01T02:00:52Z"}
CURRENT = {"needed": False, "why": ""}
STALE = {"needed": True, "why": "the environment changed since the validation (FLASHINFER_CUDA_ARCH_LIST)"}
ANSWERS = {"status": 200, "msg": "answered 200 in 0.0 s", "answered": True}
SILENT = {"status": -1, "msg": "did not answer http://127.0.0.1:30000/health: the unit is failed", "answered": False}
LIVE_OK = {"ready": True, "reason": "compiled, JIT cache warm (sampling) (live)"}
LIVE_BAD = {"ready": False, "reason": "the JIT smoke failed: nvcc fatal: Unsupported gpu architecture 'compute_120f'"}


@pytest.mark.parametrize(
    ("marker", "need", "health", "live", "expected"),
    [
        (MARKED, CURRENT, ANSWERS, None, (True, "validated and serving", MARKED["reason"])),
        (MARKED, CURRENT, ANSWERS, LIVE_OK, (True, "validated and serving", LIVE_OK["reason"])),  # --tags verify: the live smoke's words
        (MARKED, CURRENT, ANSWERS, LIVE_BAD, (False, "not validated", LIVE_BAD["reason"])),
        (MARKED, CURRENT, SILENT, None, (False, "validated but not serving", "the service " + SILENT["msg"])),
        (MARKED, CURRENT, {"status": 503}, None, (False, "validated but not serving", "the service does not answer")),
        (MARKED, STALE, ANSWERS, None, (False, "not validated", STALE["why"] + "; a converge revalidates")),
        (ROLLED_BACK, CURRENT, ANSWERS, None, (False, "not validated", ROLLED_BACK["reason"])),  # the old state serves
        ({}, STALE, SILENT, None, (False, "not validated", "no ready marker")),  # first contact: the first reason wins
        (None, None, None, None, (False, "not validated", "no ready marker")),
        ({"ready": True}, CURRENT, {"status": "200"}, None, (True, "validated and serving", "")),
    ],
)
def test_readiness_and_its_first_reason(marker, need, health, live, expected):
    got = ready.readiness(marker, need, health, live)
    assert (got["ready"], got["state"], got["reason"]) == expected


# service_probe's look at the service (service_http.look) as the role registers it
LOOK_OK = {
    "stands": True,
    "answered": True,
    "status": 200,
    "seconds": 0.1,
    "unit_state": {"ActiveState": "active"},
    "gave_up": None,
    "sample": {"ok": True, "status": 200},
}
LOOK_SAMPLE_FAILED = dict(LOOK_OK, stands=False, status=404, sample={"ok": False, "status": 404})
LOOK_DOWN = dict(LOOK_OK, stands=False, answered=False, status=-1, sample=None)


@pytest.mark.parametrize(
    ("look", "revalidated", "enable_changed", "further", "stands"),
    [
        (LOOK_OK, False, False, False, True),  # a no-op run: the look is the health check
        (dict(LOOK_OK, sample=None), False, False, False, True),  # no sampled request asked (sglang_service_sample_request: {})
        (LOOK_OK, True, False, False, False),  # a validation restarted it since
        (LOOK_OK, False, True, False, False),  # the enable task started it (or changed its unit)
        (LOOK_OK, False, False, True, False),  # further services follow: the summary's facts come after the last
        (LOOK_SAMPLE_FAILED, False, False, False, False),  # answered /health only: service_health explains
        (LOOK_DOWN, False, False, False, False),
        (None, False, False, False, False),  # the probe did not look (an older run's registration)
        ({}, False, False, False, False),
    ],
)
def test_health_stands(look, revalidated, enable_changed, further, stands):
    assert ready.health_stands(look, revalidated, enable_changed, further) is stands


NEED = {"needed": True, "why": "validated inputs differ from the current ones (venv)"}
CURRENT_NEED = {"needed": False, "why": "ready for the current inputs"}


@pytest.mark.parametrize(
    "need,changes,why",
    [
        (CURRENT_NEED, {}, ""),
        (None, {}, ""),
        # an install comes first: the marker may still vouch for the same versions (a reinstall after a removal)
        (CURRENT_NEED, {"toolkit_installed": True}, "the toolkit changed in this run"),
        (NEED, {"toolkit_installed": True, "venv_switched": True}, "the toolkit changed in this run"),
        # the marker names what changed; a switch alone says so when the marker still vouches for the inputs
        (NEED, {"venv_switched": True}, NEED["why"]),
        (CURRENT_NEED, {"venv_switched": True, "units_changed": True}, "the venv changed in this run"),
        (CURRENT_NEED, {"units_changed": True, "runtime_changed": True}, "its units changed in this run"),
        # the topic was notified while the run's tags skipped the roles' results
        (CURRENT_NEED, {"runtime_changed": True}, "the toolkit or the venv changed in this run"),
        ({"needed": True, "why": ""}, {}, "not ready for the current inputs"),
    ],
)
def test_revalidation(need, changes, why):
    assert ready.revalidation(need, **changes) == why


def test_an_overridden_unit_marks_a_ready_marker_not_ready_once():
    marked = {"ready": True, "phase": "serving", "reason": "kernel launched", "source": "boot validation (x)", "last_good": {"venv": "/v"}}
    got = ready.overridden(marked, "90-local.conf sets CUDA_HOME=/usr/local/cuda-12.8", "2026-12-06T12:00:00Z")
    assert got["ready"] is False and got["phase"] == "overridden" and got["reason"].startswith("90-local.conf sets")
    assert got["last_good"] == {"venv": "/v"} and got["source"] == "ansible" and marked["ready"] is True
    assert ready.overridden(got, "again", "2026-12-06T12:01:00Z") is None  # already not ready: nothing to write
    assert ready.overridden({}, "x", "t") is None


SUMMARY = {"unit": "sglang-k26.service", "ready": True, "state": "serving", "reason": "compiled, JIT cache warm"}


@pytest.mark.parametrize(
    "summaries, is_ready, msg",
    [
        ([SUMMARY], True, "ct200 is ready (serving): compiled, JIT cache warm"),
        ([dict(SUMMARY, ready=False, state="failed", reason="not answering")], False, "ct200 is NOT READY (failed): not answering"),
        ([SUMMARY, dict(SUMMARY, unit="sglang-eagle3.service")], True, "ct200 is ready: sglang-k26.service (serving); sglang-eagle3.service (serving)"),
        (
            [SUMMARY, dict(SUMMARY, unit="sglang-eagle3.service", ready="False", state="not validated", reason="never validated")],
            False,
            "ct200 is NOT READY (1 of 2 services): sglang-eagle3.service (not validated): never validated",
        ),
        ([], False, "ct200 is NOT READY: no service summary"),
    ],
)
def test_the_host_is_ready_only_when_every_service_is(summaries, is_ready, msg):
    assert ready.host_verdict("ct200", summaries) == {"ready": is_ready, "msg": msg}


# every state a host can be reported in, with what makes it so (readiness: the marker, the need, the health, a live
# smoke's verdict, another file of the unit)
@pytest.mark.parametrize(
    ("marker", "need", "health", "live", "foreign", "state", "is_ready"),
    [
        (MARKED, CURRENT, ANSWERS, None, None, ready.SERVING, True),
        (MARKED, CURRENT, SILENT, None, None, ready.NOT_SERVING, False),
        (MARKED, STALE, ANSWERS, None, None, ready.NOT_VALIDATED, False),
        (ROLLED_BACK, CURRENT, ANSWERS, None, None, ready.NOT_VALIDATED, False),
        (MARKED, CURRENT, ANSWERS, LIVE_BAD, None, ready.NOT_VALIDATED, False),
        (MARKED, CURRENT, ANSWERS, LIVE_OK, "90-local.conf sets CUDA_HOME", ready.NOT_AS_VALIDATED, False),
    ],
)
def test_each_state_and_what_makes_it(marker, need, health, live, foreign, state, is_ready):
    got = ready.readiness(marker, need, health, live, foreign)
    assert (got["state"], got["ready"]) == (state, is_ready) and state in ready.STATES
    assert got["reason"] == foreign if foreign else got["reason"]


@pytest.mark.parametrize(
    ("value", "word"), [(True, "READY"), ("True", "READY"), ("true", "READY"), (False, "NOT READY"), (None, "NOT READY"), ("no", "NOT READY")]
)
def test_the_words(value, word):
    assert ready.word(value) == word


STATE = {
    "inputs": "d1",
    "venv": "/opt/sglang/venvs/a",
    "toolkit": {"cuda_home": "/usr/local/cuda-13.0", "cuda_version": "13.0"},
    "archs": "12.0f",
    "versions": {"torch": "2.13.0"},
    "vouched": {"policy": {"warm": ["sampling"]}},
    "smoke": NO_GPU,
    "restart": True,
}
PREVIOUS = {"ready": True, "phase": "serving", "reason": "old", "last_good": {"venv": "/opt/sglang/venvs/0", "inputs": "d0", "time": "t0"}}


@pytest.mark.parametrize(
    ("step", "state", "is_ready", "reason", "last_good"),
    [
        # what the role's rollout, rollback and validate tasks wrote with their positional calls, step by step
        ("validated", STATE, False, "r; waiting for the restarted service to answer", PREVIOUS["last_good"]),
        # sglang_service_restart false: validated, never ready before the service answers on it (issue 57 item 6)
        ("validated", dict(STATE, restart=False), False, "r; " + ready.NOT_RESTARTED, PREVIOUS["last_good"]),
        ("validated", dict(STATE, restart="False"), False, "r; " + ready.NOT_RESTARTED, PREVIOUS["last_good"]),
        ("serving", STATE, True, "r", {"venv": "/opt/sglang/venvs/a", "inputs": "d1", "time": "2026-12-06T12:00:00Z"}),
        ("failed", STATE, False, "r", PREVIOUS["last_good"]),
    ],
)
def test_next_marker_is_the_marker_each_step_wrote(step, state, is_ready, reason, last_good):
    got = ready.next_marker(PREVIOUS, step, "r", "2026-12-06T12:00:00Z", state)
    promote = step == "serving"
    want = ready.marker(
        is_ready, reason, "2026-12-06T12:00:00Z", "d1", "/opt/sglang/venvs/a", STATE["toolkit"], "12.0f", STATE["versions"], NO_GPU, PREVIOUS,
        phase=step, vouched=STATE["vouched"], promote=promote, restart=ready.is_true(state["restart"]),
    )  # fmt: skip
    assert got == want and got["ready"] is is_ready and got["phase"] == step and got["reason"] == reason and got["last_good"] == last_good


def test_next_marker_overridden_and_refusals():
    got = ready.next_marker(PREVIOUS, "overridden", "90-local.conf sets CUDA_HOME", "t")
    assert got == ready.overridden(PREVIOUS, "90-local.conf sets CUDA_HOME", "t") and got["phase"] == "overridden"
    assert ready.next_marker(got, "overridden", "again", "t") is None
    with pytest.raises(ValueError, match="step 'ready'"):
        ready.next_marker(PREVIOUS, "ready", "r", "t", STATE)
    with pytest.raises(ValueError, match="unknown keys digest"):
        ready.next_marker(PREVIOUS, "failed", "r", "t", dict(STATE, digest="d1"))


# The judge (issue 57 item 2): one reading, one verdict, for the play's summary, --tags verify, the boot validator's
# answer check and the check timer. Each row is one case of the issue on a simulated reading.
VALIDATED_AT = "2026-12-07T10:00:00Z"  # 1796637600
SERVING_MARKER = {"ready": True, "phase": "serving", "reason": "kernel launched (max_error=0)", "inputs": "d1", "validated_at": VALIDATED_AT}
BOOT_MARKER = {  # the boot validator's, waiting for the unit's answer
    "ready": False,
    "phase": "validated",
    "reason": "kernel launched (max_error=0); waiting for the service to answer",
    "inputs": "d1",
    "validated_at": VALIDATED_AT,
    "source": "boot validation (sglang-k26.service)",
}
NOT_RESTARTED_MARKER = dict(BOOT_MARKER, reason="kernel launched (max_error=0); " + ready.NOT_RESTARTED, restart=False, source="ansible")
SLOW_BOOT_MARKER = dict(BOOT_MARKER, phase="not serving", reason="the service did not answer after boot: no answer after 600 s")
OWN = {"answered": True, "status": 200, "sample": {"ok": True, "status": 200}, "unit_state": {"ExecMainStartTimestamp": "@1796637660.5"}}
OTHER = {  # service_health with must_answer false, the unit stopped and a hand-started server on the port (item 1)
    "answered": False,
    "status": 200,
    "msg": "answered on http://127.0.0.1:30000/health, but not from sglang-k26.service: the port is held by pid 4242 (user nobody: python3 x)",
    "not_the_unit": "the port is held by pid 4242 (user nobody: python3 x), not by a process of the unit (MainPID 0)",
}
OLD_PROCESS = dict(OWN, unit_state={"ExecMainStartTimestamp": "@1796637000"})  # started before the validation
SAMPLE_FAILED = dict(OWN, answered=True, stands=False, sample={"ok": False, "status": 500, "detail": "answered HTTP 500: boom"})


@pytest.mark.parametrize(
    ("reading", "state", "reason"),
    [
        ({"marker": SERVING_MARKER, "current": True, "answer": OWN}, ready.SERVING, SERVING_MARKER["reason"]),
        # 1: the unit stopped, another process answers the port: no answer of the unit's
        ({"marker": SERVING_MARKER, "current": True, "answer": OTHER}, ready.NOT_SERVING, "the service does not answer: the answer on its port is not its own"),
        # an answer without the unit's own (an older result with only the status): still judged by its status
        ({"marker": SERVING_MARKER, "current": True, "answer": {"status": 200}}, ready.SERVING, SERVING_MARKER["reason"]),
        ({"marker": SERVING_MARKER, "current": True, "answer": {"status": 503}}, ready.NOT_SERVING, "the service does not answer"),
        ({"marker": SERVING_MARKER, "current": True, "answer": SAMPLE_FAILED}, ready.NOT_SERVING, "the service answered, but its sampled request failed"),
        ({"marker": SERVING_MARKER, "current": True, "answer": None}, ready.NOT_SERVING, "the service does not answer"),
        # 4: a damaged marker vouches for nothing, and is said to be damaged
        ({"marker": None, "marker_damage": "a JSON list, not an object", "answer": OWN}, ready.NOT_VALIDATED, "the ready marker is damaged (a JSON list"),
        ({"marker": None, "answer": OWN}, ready.NOT_VALIDATED, "no ready marker"),
        # 6: right after a boot, the validation passed and the unit's own process, started after it, answers: READY
        ({"marker": BOOT_MARKER, "current": True, "answer": OWN}, ready.SERVING, "kernel launched (max_error=0)"),
        # 5: a slow load at boot marked not serving; it answers now: READY (the timer writes it)
        ({"marker": SLOW_BOOT_MARKER, "current": True, "answer": OWN}, ready.SERVING, SLOW_BOOT_MARKER["reason"]),
        # 6: sglang_service_restart false, the service still runs what it started with before the validation
        ({"marker": NOT_RESTARTED_MARKER, "current": True, "answer": OLD_PROCESS}, ready.NOT_SERVING, "but the process that answers runs from before it"),
        ({"marker": NOT_RESTARTED_MARKER, "current": True, "answer": OLD_PROCESS}, ready.NOT_SERVING, "restart the service to serve it"),
        ({"marker": NOT_RESTARTED_MARKER, "current": True, "answer": OWN}, ready.SERVING, "kernel launched (max_error=0)"),
        ({"marker": BOOT_MARKER, "current": True, "answer": dict(OWN, unit_state={})}, ready.NOT_SERVING, "start time unknown"),
        # a failed validation, or one for other inputs: the old state may answer, it is not what was validated
        (
            {"marker": dict(SERVING_MARKER, phase="failed", ready=False, reason="smoke failed: x"), "current": True, "answer": OWN},
            ready.NOT_VALIDATED,
            "smoke failed: x",
        ),
        (
            {"marker": SERVING_MARKER, "current": False, "stale": "validated inputs differ (toolkit)", "answer": OWN},
            ready.NOT_VALIDATED,
            "validated inputs differ (toolkit); a converge",
        ),
        ({"marker": SERVING_MARKER, "current": True, "answer": OWN, "live": {"ready": False, "reason": "nvcc fatal"}}, ready.NOT_VALIDATED, "nvcc fatal"),
        ({"marker": SERVING_MARKER, "current": True, "answer": OWN, "live": {"ready": True, "reason": "live ok"}}, ready.SERVING, "live ok"),
        ({"marker": SERVING_MARKER, "current": True, "answer": OWN, "foreign": "90-x.conf sets CUDA_HOME"}, ready.NOT_AS_VALIDATED, "90-x.conf sets CUDA_HOME"),
        # the look was refused (the venv link moved since the validation)
        ({"marker": SERVING_MARKER, "current": True, "answer": {"not_looked": "the venv link points at b"}}, ready.NOT_SERVING, "was not asked: the venv link"),
    ],
)
def test_the_judge(reading, state, reason):
    got = ready.judge(reading)
    assert got["state"] == state and got["ready"] is (state == ready.SERVING) and reason in got["reason"], got


def test_readiness_is_the_judge_over_the_plays_registrations():
    need = {"needed": True, "why": "marked not ready: x; waiting for the service to answer", "current": True, "stale": ""}
    got = ready.readiness(BOOT_MARKER, need, OWN)  # the boot's marker: needed by the play, READY by the answer
    assert got["ready"] is True and got["state"] == ready.SERVING
    got = ready.readiness(SERVING_MARKER, {"needed": False}, OTHER)
    assert got["ready"] is False and "not its own" in got["reason"]
    assert ready.readiness(None, None, None, marker_damage="not JSON (x)")["reason"].startswith("the ready marker is damaged")


@pytest.mark.parametrize(
    ("marker", "needed", "why"),
    [
        (NOT_RESTARTED_MARKER, False, "validated for the current inputs, not restarted"),  # a second converge: 0 changed
        (dict(NOT_RESTARTED_MARKER, inputs="d0"), True, "validated inputs differ from the current ones"),
        (BOOT_MARKER, True, "marked not ready: kernel launched (max_error=0); waiting for the service to answer"),
    ],
)
def test_an_unrestarted_validation_needs_none(marker, needed, why):
    assert ready.needs_validation(marker, "d1") == (needed, why)


@pytest.mark.parametrize(
    ("text", "marker", "damage"),
    [
        (None, None, None),
        ('{"ready": true}', {"ready": True}, None),
        ("[]", None, "a JSON list, not an object"),
        ('{\n    "archs": "12.0f",\n', None, "not JSON"),
        ("", None, "not JSON"),
    ],
)
def test_parse_marker(text, marker, damage):
    got = ready.parse_marker(text)
    assert got[0] == marker and (got[1] or "").startswith(damage or "") and (got[1] is None) is (damage is None)


# The check timer (issue 57 item 5): what it writes from the judge's verdict over its own look
NOW = "2026-12-07T11:00:00Z"


@pytest.mark.parametrize(
    ("marker", "answer", "drift", "phase", "is_ready", "reason"),
    [
        # a crash (or a hang) after READY: not serving, with the cause
        (
            SERVING_MARKER,
            {"answered": False, "status": -1, "msg": "does not answer http://127.0.0.1:30000/health (no answer)"},
            None,
            "not serving",
            False,
            "the service does not answer http",
        ),
        # another process on the port while the unit is stopped
        (SERVING_MARKER, OTHER, None, "not serving", False, "not its own"),
        # a vouched file changed since the validation
        (
            SERVING_MARKER,
            OWN,
            "/etc/systemd/system/sglang-k26.service.d/50-blackwell-inference.conf changed since the validation",
            "overridden",
            False,
            "50-blackwell-inference.conf changed",
        ),
        # a slow boot marked not serving, answering now; the boot's validated marker; a restart by hand after restart false
        (SLOW_BOOT_MARKER, OWN, None, "serving", True, "the service did not answer after boot: no answer after 600 s; answered (check timer)"),
        (BOOT_MARKER, OWN, None, "serving", True, "kernel launched (max_error=0); answered (check timer)"),
        (NOT_RESTARTED_MARKER, OWN, None, "serving", True, "kernel launched (max_error=0); answered (check timer)"),
        # nothing to write: serving and answering; not ready and not answering; no marker; a failed validation
        (SERVING_MARKER, OWN, None, None, None, None),
        (SLOW_BOOT_MARKER, {"answered": False, "msg": "x"}, None, None, None, None),
        (NOT_RESTARTED_MARKER, OLD_PROCESS, None, None, None, None),
        (None, OWN, None, None, None, None),
        (dict(SERVING_MARKER, ready=False, phase="failed", reason="smoke failed"), OWN, None, None, None, None),
    ],
)
def test_what_the_check_timer_writes(marker, answer, drift, phase, is_ready, reason):
    verdict = ready.judge({"marker": marker, "current": True, "answer": answer, "foreign": drift})
    got = ready.after_check(marker, verdict, NOW, "sglang-k26.service")
    if phase is None:
        assert got is None, got
        return
    assert got["phase"] == phase and got["ready"] is is_ready and reason in got["reason"], got
    assert got["source"] == "check timer (sglang-k26.service)" and got["time"] == NOW and got["inputs"] == marker["inputs"]
    assert got.get("answered_at") == (NOW if is_ready else marker.get("answered_at"))


def test_file_drift_names_the_first_file_that_changed():
    import hashlib
    import hmac

    key = b"k" * 32
    unit, dropin, secrets, gone = "/etc/systemd/system/a.service", "/etc/systemd/system/a.service.d/50.conf", "/etc/bi/a.secrets.env", "/etc/none"
    holds = {unit: "1" * 64, dropin: "2" * 64, secrets: "3" * 64}
    keyed = "hmac-sha256:" + hmac.new(key, ("3" * 64).encode(), hashlib.sha256).hexdigest()
    files = {unit: "1" * 64, dropin: "2" * 64, secrets: keyed, gone: None}
    assert ready.file_drift(files, holds.get, key) is None
    assert ready.file_drift(files, dict(holds, **{dropin: "9" * 64}).get, key) == dropin + " changed since the validation"
    assert ready.file_drift(files, dict(holds, **{secrets: "9" * 64}).get, key) == secrets + " changed since the validation"
    assert ready.file_drift(files, dict(holds, **{secrets: "9" * 64}).get, None) is None  # no key: the keyed one is not judged
    assert ready.file_drift(files, {k: v for k, v in holds.items() if k != unit}.get, key) == unit + " is gone since the validation"
    assert ready.file_drift(files, dict(holds, **{gone: "0" * 64}).get, key) == gone + " appeared since the validation"
    assert ready.file_drift(None, holds.get) is None


def test_the_armed_rollback_does_nothing_once_the_play_confirmed_and_otherwise_marks_not_ready():
    armed_at = ready.epoch("2026-12-07T10:00:00Z")
    assert ready.confirmed(dict(SERVING_MARKER, time="2026-12-07T10:03:00Z"), armed_at) is True
    assert ready.confirmed(dict(SERVING_MARKER, time="2026-12-07T09:59:00Z"), armed_at) is False  # serving from before the restart
    assert ready.confirmed(dict(BOOT_MARKER, time="2026-12-07T10:03:00Z"), armed_at) is False  # validated, never confirmed
    assert ready.confirmed(None, armed_at) is False
    got = ready.rolled_back(dict(BOOT_MARKER, last_good={"venv": "/v/a"}), "put back", NOW, "sglang-k26.service")
    assert (got["ready"], got["phase"], got["reason"], got["source"]) == (False, "failed", "put back", "armed rollback (sglang-k26.service)")
    assert got["last_good"] == {"venv": "/v/a"} and got["inputs"] == "d1"
    assert ready.needs_validation(got, "d1")[0] is True  # the next run validates again


# issue 57 item 5: a validation the play never saw serve, which the preflight's look finds served, is confirmed by the
# next run instead of validated again (no restart of a healthy service)
LOOK_OWN = dict(OWN, stands=True)


@pytest.mark.parametrize(
    ("marker", "current", "look", "resume"),
    [
        (BOOT_MARKER, True, LOOK_OWN, True),  # a boot's validation, answered before its answer check wrote it
        (SLOW_BOOT_MARKER, True, LOOK_OWN, True),  # a slow boot's, answering now
        (dict(BOOT_MARKER, source="ansible"), True, LOOK_OWN, True),  # a run killed in its health wait, the service up
        (dict(BOOT_MARKER, source="ansible"), True, dict(LOOK_OWN, unit_state={"ExecMainStartTimestamp": "@1796637000"}), False),  # killed before its restart
        (BOOT_MARKER, False, LOOK_OWN, False),  # other inputs now: validate again
        (BOOT_MARKER, True, dict(LOOK_OWN, stands=False), False),  # its sampled request failed
        (BOOT_MARKER, True, {"stands": False, "not_looked": "the venv link points at b"}, False),
        (BOOT_MARKER, True, None, False),
        (SERVING_MARKER, True, LOOK_OWN, False),  # nothing to confirm
        (dict(SERVING_MARKER, ready=False, phase="failed"), True, LOOK_OWN, False),  # a failed validation is redone
    ],
)
def test_a_run_confirms_a_validation_its_service_serves(marker, current, look, resume):
    assert ready.resumable(marker, current, look) is resume
    if resume:
        assert ready.confirmed_reason(marker) == "kernel launched (max_error=0); answered (confirmed by a run)" or "did not answer" in ready.confirmed_reason(
            marker
        )
