"""The host's own side of the lifecycle (roles/sglang_service/files/boot_validate.py) against a simulated host: its
systemctl and systemd-run calls recorded and answered from a table, its files in a temporary directory. The boot
validation with a damaged marker (issue 57 item 4), the check timer's look (item 5) and the armed rollback (what to
build, item 3): armed before a restart, disarmed by a play that confirmed it, and when it fires, the last good state
back byte for byte and the host marked not ready."""

import importlib.util
import json
import os
import pwd
import time

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.service import boot_serving, ready, snapshot_store

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SCRIPT = os.path.join(ROOT, "roles", "sglang_service", "files", "boot_validate.py")
SERVICE = "sglang-k26.service"
LOOK = boot_serving.look


def load():
    spec = importlib.util.spec_from_file_location("boot_validate_under_test", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Host:
    """systemctl and systemd-run as the script calls them: each call recorded, answered from `answers` (a function of
    the argument list; rc 0 and no output otherwise)."""

    def __init__(self, answers=None):
        self.calls = []
        self.answers = answers or (lambda argv: None)

    def run(self, argv, timeout, user=None, data=None):
        self.calls.append(list(argv))
        got = self.answers(argv)
        rc, out, err = got if got is not None else (0, "", "")
        return rc, out, err, 0.01


@pytest.fixture
def bv(monkeypatch):
    mod = load()
    host = Host()
    monkeypatch.setattr(mod, "run", host.run)
    mod.host = host
    return mod


def settings(tmp_path, **over):
    cfg = {
        "service": SERVICE,
        "marker": str(tmp_path / "facts.d" / "blackwell_inference.fact"),
        "inputs": "d1",
        "health_url": "http://127.0.0.1:30000/health",
        "textfile_dir": str(tmp_path / "textfile"),
        "rollback_after": 540,
        "snapshot_store": str(tmp_path / "last-good"),
        "state_files": [str(tmp_path / "etc" / "50-blackwell-inference.conf"), str(tmp_path / "etc" / "validate.json")],
        "venv_link": str(tmp_path / "current"),
        "secret_files": [],
        "lock": str(tmp_path / "play.lock"),
        "digest_key": str(tmp_path / "digest.key"),
    }
    cfg.update(over)
    (tmp_path / "facts.d").mkdir(exist_ok=True)
    (tmp_path / "etc").mkdir(exist_ok=True)
    path = tmp_path / "validate.json"
    path.write_text(json.dumps(cfg))
    return str(path), cfg


def read(path):
    with open(path) as fh:
        return fh.read()


def marker_of(cfg):
    return json.loads(read(cfg["marker"]))


def stamp(offset=0):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + offset))


SERVING = {"ready": True, "phase": "serving", "reason": "kernel launched", "inputs": "d1", "source": "ansible", "last_good": {"venv": "/v/a"}}


# -- the armed rollback ------------------------------------------------------------------------------------------------


def test_arm_replaces_an_earlier_timer_and_arms_one_that_runs_the_rollback(bv, tmp_path):
    path, _cfg = settings(tmp_path)
    assert bv.arm(path) == 0
    stop, reset, armed = bv.host.calls
    assert stop[:2] == ["systemctl", "stop"] and "sglang-k26-rollback.timer" in stop and reset[:2] == ["systemctl", "reset-failed"]
    assert armed[:5] == ["systemd-run", "--unit=sglang-k26-rollback", "--collect", "--on-active=540s", "--timer-property=AccuracySec=1s"]
    assert armed[-4:-1] == [SCRIPT, "--rollback", path] and abs(int(armed[-1]) - time.time()) < 5


@pytest.mark.parametrize(
    ("states", "said"),
    [("active\ninactive\n", "disarmed"), ("inactive\nactive\n", "fired already"), ("inactive\ninactive\n", "not armed")],
)
def test_disarm_stops_the_timer_and_says_what_it_found(bv, tmp_path, capsys, states, said):
    path, _cfg = settings(tmp_path)
    bv.host.answers = lambda argv: (0, states, "") if argv[1] == "show" else None
    assert bv.disarm(path) == 0
    assert ["systemctl", "stop", "sglang-k26-rollback.timer"] in bv.host.calls
    assert capsys.readouterr().out.strip() == "%s: %s" % (SERVICE, said)


def _last_good(tmp_path, cfg):
    """A last good state saved with the store's own code: the drop-in and the settings as they served, the link on A."""
    dropin, settings_file = cfg["state_files"]
    (tmp_path / "venvs" / "a").mkdir(parents=True, exist_ok=True)
    (tmp_path / "venvs" / "b").mkdir(parents=True, exist_ok=True)
    os.symlink(str(tmp_path / "venvs" / "a"), cfg["venv_link"])
    with open(dropin, "w") as fh:
        fh.write("[Service]\nEnvironment=CUDA_HOME=/usr/local/cuda-13.0\n")
    with open(settings_file, "w") as fh:
        fh.write('{"old": true}\n')
    snapshot_store.save(cfg["snapshot_store"], cfg["state_files"], cfg["venv_link"], str(tmp_path / "venvs" / "a"), "2026-12-07T09:00:00Z")
    return {p: read(p) for p in cfg["state_files"]}


def _the_new_state(tmp_path, cfg):
    """What the killed play had written before its restart: other files, the link on B."""
    dropin, settings_file = cfg["state_files"]
    with open(dropin, "w") as fh:
        fh.write("[Service]\nEnvironment=CUDA_HOME=/usr/local/cuda-13.0\nEnvironment=NCCL_DEBUG=WARN\n")
    os.unlink(settings_file)
    os.unlink(cfg["venv_link"])
    os.symlink(str(tmp_path / "venvs" / "b"), cfg["venv_link"])


def test_the_rollback_puts_the_last_good_state_back_restarts_it_and_marks_the_host_not_ready(bv, tmp_path):
    path, cfg = settings(tmp_path)
    good = _last_good(tmp_path, cfg)
    _the_new_state(tmp_path, cfg)
    validated = dict(SERVING, ready=False, phase="validated", reason="kernel launched; waiting for the restarted service to answer", time=stamp())
    bv.write_marker(cfg["marker"], validated)
    assert bv.rollback(path, int(time.time()) - 600) == 0
    assert {p: read(p) for p in cfg["state_files"]} == good  # byte for byte, the removed file too
    assert os.readlink(cfg["venv_link"]) == str(tmp_path / "venvs" / "a")
    assert bv.host.calls == [["systemctl", "daemon-reload"], ["systemctl", "restart", "--no-block", SERVICE]]
    m = marker_of(cfg)
    assert m["ready"] is False and m["phase"] == "failed" and m["source"] == "armed rollback (%s)" % SERVICE, m
    assert m["reason"].startswith("the play did not confirm the restarted service within 540 s"), m
    assert "put back the last good state of 2026-12-07T09:00:00Z (3 files and links) and restarted it" in m["reason"], m
    assert m["last_good"] == SERVING["last_good"] and m["inputs"] == "d1"  # what served and what was validated are kept
    assert "blackwell_inference_ready" in read(tmp_path / "textfile" / "blackwell_inference_sglang-k26.prom")


def test_a_rollback_the_play_confirmed_in_time_does_nothing(bv, tmp_path):
    path, cfg = settings(tmp_path)
    _last_good(tmp_path, cfg)
    _the_new_state(tmp_path, cfg)
    armed_at = int(time.time()) - 60
    bv.write_marker(cfg["marker"], dict(SERVING, time=stamp()))  # the play wrote serving after it armed
    before = read(cfg["state_files"][0])
    assert bv.rollback(path, armed_at) == 0
    assert bv.host.calls == [] and read(cfg["state_files"][0]) == before and marker_of(cfg)["phase"] == "serving"


def test_without_a_last_good_state_the_rollback_stops_the_service(bv, tmp_path):
    path, cfg = settings(tmp_path)
    bv.write_marker(cfg["marker"], dict(SERVING, ready=False, phase="validated", time=stamp(-5)))
    assert bv.rollback(path, int(time.time())) == 0
    assert bv.host.calls == [["systemctl", "stop", SERVICE]]
    m = marker_of(cfg)
    assert m["phase"] == "failed" and m["reason"].endswith("no last good state to put back: the service is stopped"), m


# -- the check timer ---------------------------------------------------------------------------------------------------


def _props(active="active", start=None):
    start = start or "@%d" % (time.time() - 30)
    text = "ActiveState=%s\nResult=success\nMainPID=812\nControlGroup=/system.slice/%s\nInvocationID=ab\nExecMainStartTimestamp=%s\n"
    return text % (active, SERVICE, start)


def test_the_check_stands_aside_while_a_play_holds_the_lock_or_the_ready_unit_waits(bv, tmp_path, capsys):
    path, cfg = settings(tmp_path)
    bv.write_marker(cfg["marker"], dict(SERVING, time=stamp()))
    with open(cfg["lock"], "w") as fh:
        fh.write("{}")
    assert bv.check(path) == 0 and bv.host.calls == [] and "a play holds" in capsys.readouterr().out
    os.unlink(cfg["lock"])
    bv.host.answers = lambda argv: (0, "running\n", "") if "SubState" in argv else None
    assert bv.check(path) == 0 and "still waits for the answer" in capsys.readouterr().out
    assert marker_of(cfg)["phase"] == "serving"


@pytest.mark.parametrize(
    ("marker", "active", "status", "phase", "is_ready"),
    [
        (SERVING, "active", -1, "not serving", False),  # a hang or a crash after READY
        (SERVING, "failed", 200, "not serving", False),  # the unit failed (whatever answers the port)
        (SERVING, "active", 200, "serving", True),  # nothing changed: left as it is
        (dict(SERVING, ready=False, phase="not serving", reason="the service did not answer after boot"), "active", 200, "serving", True),
        (dict(SERVING, ready=False, phase="failed"), "active", 200, "failed", False),  # the play's to revalidate
    ],
)
def test_the_checks_look_turns_the_marker(bv, tmp_path, monkeypatch, marker, active, status, phase, is_ready):
    path, cfg = settings(tmp_path)
    written = dict(marker, time=stamp(-120), validated_at=stamp(-120))
    bv.write_marker(cfg["marker"], written)
    bv.host.answers = lambda argv: (0, _props(active), "") if "ActiveState" in argv else (0, "exited\n", "")
    monkeypatch.setattr(bv.boot_serving, "look", lambda cfg_, props, asker=None, owners=None, sample=False: _look(cfg_, props, status, sample))
    assert bv.check(path) == 0
    m = marker_of(cfg)
    assert m["phase"] == phase and m["ready"] is is_ready, m
    changed = (m["phase"], m["ready"]) != (written["phase"], written["ready"])
    assert (m["source"] == ready.CHECK_SOURCE % SERVICE) is changed
    assert "last_check_timestamp_seconds" in read(tmp_path / "textfile" / "blackwell_inference_sglang-k26.prom")


SAMPLED = (200, json.dumps({"text": " Paris", "meta_info": {"id": "x"}}))


def _look(cfg, props, status, sample=False, sampled=SAMPLED):
    """boot_serving's own look, its HTTP answers and the port's owner (the unit's process) from the table."""
    mine = [{"pid": 812, "cgroups": ["/system.slice/" + SERVICE]}]
    cfg = dict(cfg, sample_url="http://127.0.0.1:30000/generate", sample_body={"text": "x"})
    return LOOK(cfg, props, lambda url, timeout, body=None: sampled if body is not None else (status, ""), lambda port, host=None: mine, sample)


def test_the_check_marks_a_service_ready_only_when_its_sampled_request_succeeds(bv, tmp_path, monkeypatch):
    path, cfg = settings(tmp_path)
    slow = dict(SERVING, ready=False, phase="not serving", reason="the service did not answer after boot", time=stamp(-120))
    bv.write_marker(cfg["marker"], slow)
    bv.host.answers = lambda argv: (0, _props(), "") if "ActiveState" in argv else (0, "exited\n", "")
    failing = (500, json.dumps({"error": {"message": "sampling kernel failed"}}))
    monkeypatch.setattr(bv.boot_serving, "look", lambda cfg_, props, asker=None, owners=None, sample=False: _look(cfg_, props, 200, sample, failing))
    assert bv.check(path) == 0
    m = marker_of(cfg)
    assert m["phase"] == "not serving" and m["ready"] is False and m["source"] == "ansible", m  # /health alone is not READY


def test_the_check_names_a_vouched_file_that_changed(bv, tmp_path, monkeypatch):
    path, cfg = settings(tmp_path)
    dropin = cfg["state_files"][0]
    with open(dropin, "w") as fh:
        fh.write("[Service]\nEnvironment=CUDA_HOME=/usr/local/cuda-12.8\n")
    vouched = {"files": {dropin: "0" * 64}}
    bv.write_marker(cfg["marker"], dict(SERVING, time=stamp(-120), vouched=vouched))
    bv.host.answers = lambda argv: (0, _props(), "") if "ActiveState" in argv else (0, "exited\n", "")
    monkeypatch.setattr(bv.boot_serving, "look", lambda cfg_, props, asker=None, owners=None, sample=False: _look(cfg_, props, 200, sample))
    assert bv.check(path) == 0
    m = marker_of(cfg)
    assert m["phase"] == "overridden" and m["ready"] is False and m["reason"] == dropin + " changed since the validation", m


# -- the boot validation with a damaged marker (issue 57 item 4) -------------------------------------------------------


@pytest.mark.parametrize("damage", ["[]", '{\n    "archs": "12.0f",\n', ""])
def test_a_damaged_marker_does_not_stop_the_boot_validation(bv, tmp_path, monkeypatch, damage):
    path, cfg = settings(tmp_path, warm=[], ready_without_launch=True, user="root", venv=str(tmp_path / "current"), timeout=60)
    cfg.update(toolkit={"cuda_home": "/usr/local/cuda-13.0"}, archs="12.0f", vouched={})
    with open(path, "w") as fh:
        json.dump(cfg, fh)
    with open(cfg["marker"], "w") as fh:
        fh.write(damage)
    steps = {"compile": {"ok": True}, "launch": {"launched": False, "reason": "no GPU device node (/dev/nvidia0)"}}
    monkeypatch.setattr(bv, "smoke", lambda cfg_, user: (None, steps))
    assert bv.main(path) == 0
    m = marker_of(cfg)
    assert m["phase"] == "validated" and m["ready"] is False and m["source"] == ready.BOOT_SOURCE % SERVICE, m


@pytest.mark.parametrize(
    ("answered", "started_offset", "phase", "reason"),
    [
        (True, 30, "serving", "answered after boot (sampled request answered 25 characters)"),
        # an answer from a process that runs from before this boot's validation is not the validated state's
        (True, -600, "not serving", "but the process that answers runs from before it"),
        (False, 30, "not serving", "the service did not answer after boot: no answer after 600 s"),
    ],
)
def test_the_boots_answer_check_is_the_judges(bv, tmp_path, monkeypatch, answered, started_offset, phase, reason):
    path, cfg = settings(tmp_path)
    validated = stamp(-60)
    boot = dict(SERVING, ready=False, phase="validated", reason="kernel launched; waiting for the service to answer", time=validated)
    bv.write_marker(cfg["marker"], dict(boot, source=ready.BOOT_SOURCE % SERVICE, validated_at=validated))
    why = "sampled request answered 25 characters" if answered else "no answer after 600 s"
    monkeypatch.setattr(bv.boot_serving, "wait", lambda cfg_, props: (answered, why))
    start = "@%d" % (time.time() - 60 + started_offset)
    bv.host.answers = lambda argv: (0, _props(start=start), "") if "ActiveState" in argv else None
    assert bv.serving(path) == (0 if phase == "serving" else 1)
    m = marker_of(cfg)
    assert m["phase"] == phase and m["ready"] is (phase == "serving") and reason in m["reason"], m


def test_the_boot_smoke_compiles_and_launches_as_the_service_user(bv, monkeypatch, tmp_path):
    """Issue 58 item 1: at boot as in the play, nvcc runs as the service's account, in a work directory of its own;
    root never compiles with the unit's environment."""
    account = pwd.getpwnam("nobody")
    seen = []

    def run(argv, timeout, user=None, data=None):
        seen.append((argv[0], user, os.stat(os.path.dirname(argv[-1])).st_uid))
        return 0, "", "", 0.01

    monkeypatch.setattr(bv, "run", run)
    monkeypatch.setattr(bv, "GPU_DEVICE", str(tmp_path / "nvidia0"))  # no GPU: compile only
    monkeypatch.setenv("CUDA_HOME", "/usr/local/cuda-13.0")
    failure, steps = bv.smoke({"archs": "12.0a", "warm": [], "venv": "/opt/sglang/current", "timeout": 60}, account)
    assert failure is None and steps["compile"]["ok"], (failure, steps)
    assert seen == [("/usr/local/cuda-13.0/bin/nvcc", account, account.pw_uid)]
