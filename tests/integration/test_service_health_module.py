"""service_health through Ansible on this controller: its `facts` option gathers blackwell_cuda when the wait ends,
as cuda_facts does with the same options, on an answer and on no answer alike (the summary after it needs no call of
its own)."""

import http.server
import socket
import threading

import pytest

from .conftest import NVIDIA_SMI_DOUBLE, ansible_module, ansible_module_calls


class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture()
def health_url():
    server = http.server.HTTPServer(("127.0.0.1", 0), Health)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield "http://127.0.0.1:%d/health" % server.server_address[1]
    server.shutdown()


def closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


FACTS = {"nvidia_smi": NVIDIA_SMI_DOUBLE, "flashinfer_version": "0.7.2.post1"}


def test_facts_come_with_an_answer_and_with_none_as_cuda_facts_gives_them(tmp_path, health_url):
    down = "http://127.0.0.1:%d/health" % closed_port()
    answered, silent, without = ansible_module_calls(
        "service_health",
        [
            {"url": health_url, "timeout": 5, "facts": FACTS},
            {"url": down, "timeout": 0, "must_answer": False, "facts": FACTS},
            {"url": health_url, "timeout": 5},
        ],
        tmp_path,
    )
    direct = ansible_module("cuda_facts", FACTS)["ansible_facts"]["blackwell_cuda"]
    assert answered["answered"] is True and silent["answered"] is False and not silent.get("failed"), silent
    assert silent["status"] == -1  # the fault really hit: nothing listened there
    for res in (answered, silent):
        facts = res["ansible_facts"]["blackwell_cuda"]
        for key in ("gpus", "compute_capabilities", "driver", "toolkits", "default_toolkit", "flashinfer", "torch_driver"):
            assert facts[key] == direct[key], key
    assert "ansible_facts" not in without


def test_an_unknown_facts_option_is_refused_by_name(health_url):
    res = ansible_module("service_health", {"url": health_url, "timeout": 5, "facts": {"nvidia_smi": NVIDIA_SMI_DOUBLE, "probe": True}})
    assert res.get("failed") and "facts: unsupported option(s) probe" in res["msg"], res
