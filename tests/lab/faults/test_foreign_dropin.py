"""An operator's later drop-in puts CUDA 12.8 back under the managed service (issue 45 item 1), on the converged ct200:
`sglang-k26.service.d/90-local.conf` with 12.8's PATH and CUDA_HOME, daemon-reloaded, as an operator would leave it.

The fault hits: `systemctl show -p Environment` of the unit has 12.8. Every kind of run then says NOT READY and names the
file with what it sets and what the role sets: a plain run and `--tags verify` fail the host, and `--check` says so
in its table. The role changes nothing of
the service meanwhile (no restart, the file left as it is: the operator decides), and the plain run marks the host not
ready (phase overridden) for what consumers read. With the file gone, the next plain run validates again and is READY.
The file leaves ct200 as it found it (the drop-in removed), but it restarts nothing, so the next file may share it only
after a fresh image: it is not LAB_READ_ONLY.
"""

import hashlib
import json
import shlex

from ..conftest import playbook
from .test_faults import no_traceback

UNIT = "sglang-k26.service"
LOCAL = "/etc/systemd/system/sglang-k26.service.d/90-local.conf"
CUDA128 = "/usr/local/cuda-12.8"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DROPIN = "[Service]\nEnvironment=PATH=%s/bin:/opt/sglang/current/bin:%s\nEnvironment=CUDA_HOME=%s\n" % (CUDA128, SYSTEM_PATH, CUDA128)
NAMED = "%s sets CUDA_HOME=%s (the role sets CUDA_HOME=/usr/local/cuda-13.0)" % (LOCAL, CUDA128)
MARKER = "/etc/ansible/facts.d/blackwell_inference.fact"

SITE_DROPIN = "/etc/systemd/system/sglang-k26.service.d/70-site-token.conf"
SITE_ENV_FILE = "/etc/sglang/k26-token.env"
TOKEN = "hf_planted_operator_token_5c1f0e9a"  # noqa: S105 - a made-up token the test looks for
API_KEY = "sk-planted-api-key-0b7d41c3"  # a made-up key: the unit's --api-key ${SGLANG_API_KEY}
UNIT_FILE = "/etc/systemd/system/sglang-k26.service"
OPEN = "ct200: sglang-k26.service: it serves on 0.0.0.0:30000 with no API key"
# where others may read: every world-readable file there is searched for the token and its plain digests
READABLE = "/etc /var/lib /var/log /run /usr/local/libexec"


def _table_row(out):
    """The fleet table's row of ct200 (the callback's end-of-run table)."""
    rows = [line for line in out.splitlines() if line.startswith("ct200 ")]
    assert rows, out[-3000:]
    return rows[-1]


def test_an_operators_later_drop_in_is_not_ready_on_every_run_and_named(run):
    pid = run("systemctl show -p MainPID --value %s" % UNIT).strip()
    assert pid != "0" and json.loads(run("cat %s" % MARKER))["ready"] is True  # serving and ready before the fault
    run("printf '%%s' '%s' > %s && systemctl daemon-reload" % (DROPIN, LOCAL))
    try:
        # the fault hit: what systemd runs the unit with has 12.8
        assert "CUDA_HOME=%s" % CUDA128 in run("systemctl show -p Environment --value %s" % UNIT)
        for args in ((), ("--tags", "verify"), ("--check",)):
            rc, out, recap = playbook(*args)
            no_traceback(out)
            assert rc != 0 or args == ("--check",), (args, out[-4000:])  # a check run fails no host for not being ready
            assert NAMED in out, (args, out[-4000:])
            assert "NOT READY" in _table_row(out), (args, _table_row(out))
            # the plain run marks the host not ready (ansible_local, and the lab's node_exporter textfile beside it),
            # once; nothing else changes
            changed, task = [], None
            for line in out.splitlines():
                task = line if line.startswith("TASK [") else task
                if line.startswith("changed:"):
                    changed.append(task)
            assert recap.get("changed", 0) == (2 if args == () else 0) or args == ("--tags", "verify"), (args, recap, changed)
            if args == ():
                assert [t.split(" : ", 1)[1].split("]", 1)[0] for t in changed] == ["Record the ready marker", "The service's textfile"], changed
                # issue 58 item 6: the lab's unit serves on 0.0.0.0 with no --api-key: warned of on every run
                assert OPEN in " ".join(out.split()), out[-4000:]
            assert "needs a validation" not in out, (args, out[-4000:])
            marker = json.loads(run("cat %s" % MARKER))
            assert marker["ready"] is False and marker["phase"] == "overridden" and NAMED in marker["reason"], (args, marker)
            # nothing of the service moved, and the operator's file is theirs
            assert run("systemctl show -p MainPID --value %s" % UNIT).strip() == pid, args
            assert run("cat %s" % LOCAL) == DROPIN, args
    finally:
        run("rm -f %s && systemctl daemon-reload" % LOCAL)
    # without it, the next run validates the unit as it is again (the marker said not ready) and is READY. The operator
    # has meanwhile added a drop-in that takes HF_TOKEN from a root-only EnvironmentFile= (issue 58 items 1 and 2): the
    # same run vouches for it, and no one else may read the token or a plain digest of it anywhere
    _operators_token_is_vouched_for_unseen_and_a_file_others_may_write_is_refused(run)


def _operators_token_is_vouched_for_unseen_and_a_file_others_may_write_is_refused(run):
    """After the plain run: no world-readable file under /etc, /var/lib, /var/log, /run or /usr/local/libexec, nor the
    play's output, holds the token, its sha256, the sha256 of the line KEY=value or of the file's bytes. The operator's
    unit also gives SGLang --api-key ${SGLANG_API_KEY} from that file (issue 58 item 6): the run's sampled request
    carries the key (the stand-in, as SGLang, answers /generate 401 without it), and the warning is gone. The same file
    made writable by others is then refused before any change, naming it; the service keeps serving."""
    run(
        "mkdir -p /etc/sglang && umask 077 && printf 'HF_TOKEN=%s\\nSGLANG_API_KEY=%s\\n' > %s && printf '%%s' %s > %s"
        " && cp %s /root/sglang-k26.service.orig && sed -i 's/--port 30000$/--port 30000 --api-key ${SGLANG_API_KEY}/' %s && systemctl daemon-reload"
        % (TOKEN, API_KEY, SITE_ENV_FILE, shlex.quote("[Service]\nEnvironmentFile=%s\n" % SITE_ENV_FILE), SITE_DROPIN, UNIT_FILE, UNIT_FILE)
    )
    try:
        # the fault hit: systemd runs the unit with the file, which only root may read, and the key from it
        assert "%s (ignore_errors=no)" % SITE_ENV_FILE in run("systemctl show -p EnvironmentFiles --value %s" % UNIT)
        assert run("stat -c '%%a %%U' %s" % SITE_ENV_FILE).strip() == "600 root"
        assert "--port 30000 --api-key ${SGLANG_API_KEY}" in run("cat %s" % UNIT_FILE)  # the role's drop-in still has the old one
        rc, out, _recap = playbook()
        no_traceback(out)
        # the role's drop-in keeps the unit's new command verbatim, the variable left for systemd to expand
        assert "--api-key ${SGLANG_API_KEY}" in run("systemctl show -p ExecStart --value %s" % UNIT)
        assert rc == 0 and "needs a validation of %s: marked not ready" % UNIT in out, out[-4000:]
        assert "READY" in _table_row(out) and "NOT READY" not in _table_row(out), out[-4000:]
        marker = json.loads(run("cat %s" % MARKER))
        assert marker["ready"] is True and marker["vouched"]["env"]["HF_TOKEN"].startswith("hmac-sha256:"), marker["vouched"]["env"]
        # the key reached the service and guards /generate; the run's own sampled request carried it; no warning now
        assert "with no API key" not in " ".join(out.split()), out[-4000:]
        ask = (
            "import urllib.request as u, urllib.error as e\n"
            "try: u.urlopen(u.Request('http://127.0.0.1:30000/generate', b'{}'), timeout=10)\n"
            "except e.HTTPError as x: print(x.code)"
        )
        assert run("python3 -c %s" % shlex.quote(ask)).strip() == "401"
        plain = [TOKEN, API_KEY] + [
            hashlib.sha256(t.encode()).hexdigest()
            for t in (TOKEN, API_KEY, "HF_TOKEN=" + TOKEN, "SGLANG_API_KEY=" + API_KEY, "HF_TOKEN=%s\nSGLANG_API_KEY=%s\n" % (TOKEN, API_KEY))
        ]
        assert not [p for p in plain if p in out], "the play's output shows the token or a plain digest of it"
        found = run("find %s -xdev -type f -perm -o=r -print0 2>/dev/null | xargs -0 -r grep -lsF %s || true" % (READABLE, " ".join("-e " + p for p in plain)))
        assert found.strip() == "", "world-readable files hold the token or a plain digest of it: %s" % found
        # the same file, writable by the service's group and everyone: refused before any change, naming it
        run("chmod 0666 %s" % SITE_ENV_FILE)
        _refused_before_any_change(run, "sglang-k26.service takes its environment from EnvironmentFile=%s (set in %s)" % (SITE_ENV_FILE, SITE_DROPIN))
    finally:
        run("cp /root/sglang-k26.service.orig %s && rm -f %s %s && systemctl daemon-reload" % (UNIT_FILE, SITE_DROPIN, SITE_ENV_FILE))


def _refused_before_any_change(run, named, **extra_vars):
    """A run with a change that would restart the service is refused naming `named`, changes nothing, and the service
    keeps serving (the same MainPID)."""
    pid = run("systemctl show -p MainPID --value %s" % UNIT).strip()
    assert pid != "0"
    rc, out, recap = playbook(extra_vars=dict(extra_vars, sglang_service_environment={"NCCL_DEBUG": "WARN"}))
    no_traceback(out)
    flat = " ".join(out.split())
    assert rc != 0 and named in flat, out[-4000:]
    assert recap.get("changed", 0) == 0 and "needs a validation" not in out, out[-4000:]
    assert run("systemctl show -p MainPID --value %s" % UNIT).strip() == pid
    return flat


MISSING = "/etc/systemd/system/sglang-k26.service.d/80-site-env.conf"


def test_a_required_environment_file_that_is_gone_is_refused_before_any_change(run):
    """Issue 57 item 2: an operator's drop-in requires an EnvironmentFile= named through a specifier (%n) that is not
    there. systemd would refuse to start the unit ("unavailable resources"), so a run with a change that would restart
    it is refused before anything, naming the file; the service keeps serving."""
    run("printf '%%s' %s > %s && systemctl daemon-reload" % (shlex.quote("[Service]\nEnvironmentFile=/etc/sglang/%n.env\n"), MISSING))
    try:
        # the fault hit: systemd itself lists the file, its specifier expanded, as required, and it is not there
        wanted = "/etc/sglang/sglang-k26.service.env"
        assert "%s (ignore_errors=no)" % wanted in run("systemctl show -p EnvironmentFiles --value %s" % UNIT)
        assert run("test -e %s || echo gone" % wanted).strip() == "gone"
        _refused_before_any_change(run, "sglang-k26.service requires EnvironmentFile=%s (set in %s), which is not there" % (wanted, MISSING))
        assert json.loads(run("cat %s" % MARKER))["ready"] is True
    finally:
        run("rm -f %s && systemctl daemon-reload" % MISSING)


def test_an_open_port_with_no_api_key_is_refused_when_a_key_is_required(run):
    """Issue 58 item 6: with sglang_service_require_api_key, the lab's unit (0.0.0.0, no --api-key) is refused by the
    check play, before the first role changes anything, naming the address and the fix; the service keeps serving."""
    assert "--host 0.0.0.0" in run("systemctl show -p ExecStart --value %s" % UNIT)  # the fault: it is open
    flat = _refused_before_any_change(run, "sglang-k26.service: it serves on 0.0.0.0:30000 with no API key", sglang_service_require_api_key=True)
    assert "--api-key" in flat and "blackwell.inference.cuda_toolkit :" not in flat  # refused under the lock, before the first role
