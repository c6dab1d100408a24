"""Only the unit's own process answers for it (issue 45 item 3), on the converged ct200.

A server started by hand as `nobody` (as an old manual SGLang would be) holds 0.0.0.0:30000 and answers /health and the
sampled /generate. A change then restarts the unit into a process that never answers (sglang_service_command: a
sleeping python). Before, the hand-started server's answer made the host READY, wrote `ready: true` and moved the last
good snapshot onto the broken state. Now the wait ends at once naming the other process (pid, user, command), the last
good state is put back, the host fails NOT READY, the marker says not ready and the last good snapshot has not moved.
The file leaves ct200 changed (a failed rollback): the next file starts from a fresh image.
"""

import json
import shlex

from ..conftest import on_host_until, playbook
from .test_faults import no_traceback

UNIT = "sglang-k26.service"
MARKER = "/etc/ansible/facts.d/blackwell_inference.fact"
MANIFEST = "/var/lib/blackwell-inference/sglang-k26/last-good/manifest.json"
HAND_SERVER = "/usr/local/lib/hand_server.py"  # readable by nobody (not under /root)
# an HTTP server that answers like SGLang: /health 200, /generate with a generated text
HAND_SERVER_CODE = """import http.server, json
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"ok")
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.dumps({"text": "from a hand-started server", "meta_info": {"id": "x"}}).encode()
        self.send_response(200); self.send_header("Content-Type", "application/json"); self.end_headers(); self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(("0.0.0.0", 30000), H).serve_forever()
"""
ASKS = "python3 -c 'import urllib.request; urllib.request.urlopen(\"http://127.0.0.1:30000/health\", timeout=2)' 2>/dev/null"
SLEEPER = ["/opt/sglang/current/bin/python", "-c", "import time; time.sleep(86400)"]


def test_a_hand_started_server_on_the_port_is_not_the_service(run):
    assert json.loads(run("cat %s" % MARKER))["ready"] is True
    last_good = run("cat %s" % MANIFEST)
    run("systemctl stop %s" % UNIT)  # the port free for the hand-started server
    run("printf '%%s' %s > %s && chmod 0644 %s" % (shlex.quote(HAND_SERVER_CODE), HAND_SERVER, HAND_SERVER))
    run("setsid -f setpriv --reuid=nobody --regid=nogroup --clear-groups python3 %s >/dev/null 2>&1 </dev/null" % HAND_SERVER)
    try:
        on_host_until(run, ASKS, "the hand-started server answering")
        hand_pid = run("pgrep -u nobody -f [h]and_server.py").split()[0]
        rc, out, _recap = playbook(extra_vars={"sglang_service_command": SLEEPER})
        no_traceback(out)
        # the fault hit: the unit was restarted into the sleeper and the hand-started server answered (the owner is only
        # judged on an HTTP 200)
        assert "needs a validation of %s" % UNIT in out, out[-6000:]
        named = "the port is held by pid %s (user nobody: python3 %s)" % (hand_pid, HAND_SERVER)
        assert named in out, out[-6000:]
        assert rc != 0 and "ct200 is NOT READY" in out, out[-6000:]
        marker = json.loads(run("cat %s" % MARKER))
        assert marker["ready"] is False, marker
        assert run("cat %s" % MANIFEST) == last_good  # the last good state did not move onto the broken one
    finally:
        run("pkill -u nobody -f [h]and_server.py || true; rm -f %s" % HAND_SERVER)
