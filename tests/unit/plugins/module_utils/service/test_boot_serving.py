"""The ready marker after a boot validation (issue 45 item 4): ready only once the unit's own process answered (what the
marker holds: ready.pending and ready.after_answer; the wait: boot_serving)."""

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.service import boot_serving, ready

SERVICE = "sglang-k26.service"
CG = "/system.slice/sglang-k26.service"
VALIDATED = {
    "ready": False,
    "phase": "validated",
    "reason": "compiled, JIT cache warm (sampling); not launched (no GPU device node (/dev/nvidia0)), allowed by policy; waiting for the service to answer",
    "source": "boot validation (sglang-k26.service)",
    "inputs": "2c26817414e442ed",
    "last_good": {"venv": "/opt/sglang/venvs/a", "inputs": "2c26817414e442ed", "time": "2026-12-01T00:00:00Z"},
}
CFG = {
    "health_url": "http://127.0.0.1:30000/health",
    "health_timeout": 10,
    "sample_url": "http://127.0.0.1:30000/generate",
    "sample_body": {"text": "x"},
    "sample_timeout": 30,
}
MINE = [{"pid": 812, "user": "root", "command": "python -m sglang.launch_server", "cgroups": [CG]}]
NOBODY = [{"pid": 4242, "user": "nobody", "command": "python3 hand.py", "cgroups": ["/user.slice/user-0.slice/session-3.scope"]}]


@pytest.mark.parametrize(
    ("marker", "inputs", "why"),
    [
        (VALIDATED, "2c26817414e442ed", None),
        (dict(VALIDATED, source="ansible"), "2c26817414e442ed", "the marker was written by ansible, which judges the answer itself"),
        (dict(VALIDATED, phase="failed"), "2c26817414e442ed", "the boot validation did not pass (phase failed)"),
        (dict(VALIDATED, phase="serving", ready=True), "2c26817414e442ed", "the boot validation did not pass (phase serving)"),
        (VALIDATED, "other", "the marker is for other inputs than these settings'"),
        ({}, "2c26817414e442ed", "the marker was written by nobody, which judges the answer itself"),
    ],
)
def test_only_this_boots_validated_marker_is_the_checks_to_decide(marker, inputs, why):
    assert ready.pending(marker, inputs, SERVICE) == why


def test_after_the_answer_serving_and_ready_else_not_serving_with_the_cause_and_last_good_kept():
    up = ready.after_answer(VALIDATED, True, "sampled request answered 25 characters", "2026-12-06T10:00:00Z", SERVICE)
    assert up["ready"] is True and up["phase"] == "serving" and up["last_good"] == VALIDATED["last_good"]
    assert up["reason"].startswith("compiled, JIT cache warm (sampling)") and "waiting for" not in up["reason"]
    down = ready.after_answer(VALIDATED, False, "the unit is failed (exit-code)", "2026-12-06T10:00:00Z", SERVICE)
    assert (
        down["ready"] is False and down["phase"] == "not serving" and down["reason"] == "the service did not answer after boot: the unit is failed (exit-code)"
    )
    assert VALIDATED["ready"] is False and VALIDATED["phase"] == "validated"  # the input is not changed


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, secs):
        self.now += secs


def _wait(answers, owners=None, props=None, cfg=None):
    clock, asked = Clock(), []
    owners = MINE if owners is None else owners
    cfg = cfg or CFG

    def asker(url, timeout, body=None):
        asked.append(url)
        return answers.pop(0) if answers else (-1, "connection refused")

    props = props or {"ActiveState": "active", "ControlGroup": CG, "MainPID": "812"}
    got = boot_serving.wait(cfg, lambda: props, clock, clock.sleep, asker, lambda port, host=None: owners)
    return got, asked, clock.now


def test_wait_counts_the_units_answer_and_its_sampled_request():
    (ok, why), asked, _t = _wait([(-1, "refused"), (503, ""), (200, "ok"), (200, '{"text": "hello", "meta_info": {}}')])
    assert ok is True and why == "sampled request answered 5 characters"
    assert asked[-1] == CFG["sample_url"] and asked.count(CFG["health_url"]) == 3


def test_wait_refuses_an_answer_from_another_process_at_once():
    (ok, why), asked, _t = _wait([(200, "ok")], owners=NOBODY)
    assert ok is False and "pid 4242 (user nobody: python3 hand.py)" in why and asked == [CFG["health_url"]]


def test_wait_ends_on_a_failed_unit_or_the_timeout_and_names_a_failed_sample():
    (ok, why), _asked, _t = _wait([], props={"ActiveState": "failed", "Result": "exit-code"})
    assert ok is False and why == "the unit is failed (exit-code)"
    (ok, why), _asked, waited = _wait([])
    assert ok is False and why == "http://127.0.0.1:30000/health: no answer after 10 s" and waited == 10
    (ok, why), _asked, _t = _wait([(200, "ok"), (500, '{"error": {"message": "CUDA error"}}')])
    assert ok is False and why == "its sampled request failed: answered HTTP 500: CUDA error"
    (ok, why), _asked, _t = _wait([(200, "ok")], cfg=dict(CFG, sample_url=""))
    assert ok is True and why == "http://127.0.0.1:30000/health answered"


def test_ask_gets_and_posts_over_http_and_says_when_nothing_answers():
    import http.server
    import json
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()
            self.wfile.write(b"ok")

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            self.send_response(200)
            self.end_headers()
            self.wfile.write(json.dumps({"text": body["text"] * 2}).encode())

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = "http://127.0.0.1:%d" % server.server_port
    try:
        assert boot_serving.ask(base + "/health", 5) == (200, "ok")
        assert boot_serving.ask(base + "/other?x=1", 5)[0] == 404
        assert boot_serving.ask(base + "/generate", 5, {"text": "ab"}) == (200, '{"text": "abab"}')
    finally:
        server.shutdown()
        server.server_close()
    assert boot_serving.ask(base + "/health", 2)[0] == -1  # closed: nothing answers
    assert boot_serving.ask("file:///etc/passwd", 2) == (-1, "not an http URL: file:///etc/passwd")


@pytest.mark.parametrize(
    ("props", "answer", "owners", "answered", "msg"),
    [
        ({"ActiveState": "active", "ControlGroup": "/system.slice/sglang-k26.service", "MainPID": "812"}, (200, "ok"), "mine", True, ""),
        ({"ActiveState": "active", "ControlGroup": "/system.slice/sglang-k26.service", "MainPID": "812"}, (-1, "timed out"), "mine", False, "no answer"),
        ({"ActiveState": "inactive", "Result": "success"}, (200, "ok"), "nobody", False, "is inactive (success)"),  # never asked
        (
            {"ActiveState": "active", "ControlGroup": "/system.slice/sglang-k26.service", "MainPID": "812"},
            (200, "ok"),
            "nobody",
            False,
            "the port is held by pid",
        ),
    ],
)
def test_the_check_timers_one_look(props, answer, owners, answered, msg):
    asked = []

    def asker(url, timeout):
        asked.append((url, timeout))
        return answer

    got = boot_serving.look(CFG, props, asker, lambda port, host=None: MINE if owners == "mine" else NOBODY)
    assert got["answered"] is answered and msg in got["msg"], got
    assert asked == ([] if props["ActiveState"] != "active" else [(CFG["health_url"], 10)])


def test_the_boot_and_timer_sampled_request_carries_the_units_key(monkeypatch):
    """issue 58 item 6: the key from the unit's MainPID's command line, only after the answer is the unit's own."""
    monkeypatch.setattr(boot_serving.socket_owner, "cmdline", lambda pid: ["python", "--api-key", "sk-1"] if str(pid) == "812" else [])
    asked = []

    def asker(url, timeout, body=None, **kw):
        asked.append((url, kw))
        return (200, "ok") if body is None else (200, '{"text": "x", "meta_info": {}}')

    props = {"ActiveState": "active", "ControlGroup": "/system.slice/sglang-k26.service", "MainPID": "812"}
    got = boot_serving.look(CFG, props, asker, lambda port, host=None: MINE, sample=True)
    assert got["answered"] and got["sample"]["ok"], got
    assert asked == [(CFG["health_url"], {}), (CFG["sample_url"], {"api_key": "sk-1"})]  # /health without it
    asked.clear()
    boot_serving.look(CFG, dict(props, MainPID="9"), asker, lambda port, host=None: MINE, sample=True)
    assert asked[-1] == (CFG["sample_url"], {})  # a process without --api-key: none sent
