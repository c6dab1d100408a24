"""service_http: one look at a service over real HTTP (a server on 127.0.0.1 answering as SGLang does)."""

import http.server
import json
import socket
import threading

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.service import http as service_http

KEY = "sk-lab-key"
BODY = {"text": "The capital of France is", "sampling_params": {"temperature": 0.7, "top_p": 0.9, "top_k": 20, "max_new_tokens": 4}}


class Handler(http.server.BaseHTTPRequestHandler):
    asked = []

    def log_message(self, *args):
        pass

    def _answer(self, status, doc):
        data = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.asked.append(("GET", self.path, None))
        self._answer(200 if self.path == "/health" else 503, {})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.asked.append(("POST", self.path, body))
        if self.path == "/keyed/generate" and self.headers.get("Authorization") != "Bearer " + KEY:
            self._answer(401, {"error": "Unauthorized"})  # SGLang's api-key middleware
        elif self.path in ("/generate", "/keyed/generate"):
            self._answer(200, {"text": " Paris.", "meta_info": {"sampled": True}})
        else:
            self._answer(404, {"error": {"message": "no such route"}})


@pytest.fixture(name="server")
def fixture_server():
    Handler.asked = []
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield "http://127.0.0.1:%d" % srv.server_address[1]
    srv.shutdown()
    srv.server_close()


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_ready_service_stands(server):
    res = service_http.look(server + "/health", server + "/generate", BODY, unit_state=lambda: {"ActiveState": "active"})
    assert res["stands"] and res["answered"] and res["status"] == 200 and res["gave_up"] is None
    assert res["sample"]["ok"] and res["sample"]["detail"] == "answered 7 characters" and res["sample"]["meta_info"] == {"sampled": True}
    assert res["unit_state"] == {"ActiveState": "active"}
    assert Handler.asked == [("GET", "/health", None), ("POST", "/generate", BODY)]


def test_without_a_sampled_request_health_alone_stands(server):
    res = service_http.look(server + "/health")
    assert res["stands"] and res["sample"] is None and res["unit_state"] == {}
    assert Handler.asked == [("GET", "/health", None)]


def test_a_failed_sampled_request_does_not_stand(server):
    res = service_http.look(server + "/health", server + "/v1/none", BODY)
    assert not res["stands"] and res["answered"] and res["status"] == 404
    assert res["sample"]["detail"] == "answered HTTP 404: no such route"


def test_health_that_does_not_answer_200_sends_no_sampled_request(server):
    res = service_http.look(server + "/loading", server + "/generate", BODY)
    assert not res["stands"] and not res["answered"] and res["status"] == 503 and res["sample"] is None
    assert [a[0] for a in Handler.asked] == ["GET"]


def test_nothing_listening_reads_as_minus_one():
    res = service_http.look("http://127.0.0.1:%d/health" % free_port(), request_timeout=2)
    assert not res["stands"] and res["status"] == -1 and res["sample"] is None


@pytest.mark.parametrize(
    ("listen", "url"),
    [
        ({"host": "0.0.0.0", "port": 30000}, "http://127.0.0.1:30000"),  # noqa: S104
        ({"host": "::", "port": 30001}, "http://127.0.0.1:30001"),
        ({"host": "", "port": 8000}, "http://127.0.0.1:8000"),
        ({"host": "10.0.0.7", "port": 30000}, "http://10.0.0.7:30000"),
        ({"host": "fd00::7", "port": 30000}, "http://[fd00::7]:30000"),
        ({"host": "localhost", "port": 30000}, "http://localhost:30000"),
    ],
)
def test_base_url(listen, url):
    assert service_http.base_url(listen) == url


def test_the_sampled_request_carries_the_key_the_units_own_process_was_given(server, monkeypatch):
    """issue 58 item 6: SGLang's /generate wants `Authorization: Bearer KEY` once --api-key is set (/health stays open).
    The key is read from the unit's MainPID's command line, and only once the answer is known to be the unit's own."""
    cmdlines = {"812": ["/opt/sglang/current/bin/python", "-m", "sglang.launch_server", "--api-key", KEY], "9": ["python3", "hand.py"]}
    monkeypatch.setattr(service_http.socket_owner, "cmdline", lambda pid: cmdlines.get(str(pid), []))
    state = {"ActiveState": "active", "MainPID": "812"}
    res = service_http.look(server + "/health", server + "/keyed/generate", BODY, unit_state=lambda: state, owner=lambda props: (True, ""))
    assert res["stands"] and res["sample"]["ok"], res
    # without the key (another MainPID's command line, or no owner check to vouch for the process): 401, not ready
    res = service_http.look(server + "/health", server + "/keyed/generate", BODY, unit_state=lambda: dict(state, MainPID="9"), owner=lambda props: (True, ""))
    assert not res["stands"] and res["sample"]["status"] == 401
    res = service_http.look(server + "/health", server + "/keyed/generate", BODY, unit_state=lambda: state)
    assert not res["stands"] and res["sample"]["status"] == 401
