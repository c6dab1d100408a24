# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Boot-time revalidation of an SGLang service (installed by blackwell.inference.sglang_service).

Run by <service>-validate.service, a oneshot the service requires and starts after, with the service's
environment. Same steps and verdict as the jit_smoke module (its kernel and warm-up script are the
collection's module_utils, installed next to this file): compile saxpy for FLASHINFER_CUDA_ARCH_LIST with
$CUDA_HOME/bin/nvcc, launch it as the service user when a GPU device node exists, build FlashInfer's JIT
modules into the cache as the service user. Writes the ready marker `phase: validated, ready: false` (nobody has
seen the service answer yet); exits 1 when the smoke fails, so systemd does not start the service on a state that
would fail.
With --serving (run by <service>-ready.service, after the service started): waits for the unit's own answer and
turns this boot's validated marker into `serving, ready: true` or `not serving` (module_utils/service/boot_serving.py
waits for the answer; module_utils/service/ready.py holds the verdict and what the marker says).
With --check (run by <service>-check.timer, every sglang_service_check_interval seconds): one look at the unit's own
answer and at the files the marker vouches for; the judge (ready.judge) decides, and the marker turns serving or not
serving when that changed (ready.after_check). Read-only otherwise; it never touches the service, and it stands aside
while a play holds the host's lock.
Each marker it writes also goes to node_exporter's textfile collector when the settings name its directory
(textfile_dir; module_utils/service/textfile.py).
With --arm (the play, right before it restarts the service on a validated state): a transient timer,
<service>-rollback.timer, fires after rollback_after seconds unless --disarm (the play, once the restarted service
answered and its state is kept) stopped it first. When it fires (--rollback: the play was killed, or lost its host),
the host puts the last good state back by itself (its files and the venv link, byte for byte), restarts it and marks
the host not ready; with no last good state it stops the service. The dead-man switch of linux-system-roles network's
checkpoint.
Usage: boot_validate.py SETTINGS.json | boot_validate.py --serving SETTINGS.json | boot_validate.py --check SETTINGS.json
       | boot_validate.py --arm SETTINGS.json | boot_validate.py --disarm SETTINGS.json
"""

import datetime
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time

# the role puts the collection's module_utils it needs in a package tree beside this file (a regular package first on
# the path: an ansible_collections elsewhere on the host does not shadow it)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ansible_collections.blackwell.inference.plugins.module_utils.common import secrets
from ansible_collections.blackwell.inference.plugins.module_utils.flashinfer import jit_smoke
from ansible_collections.blackwell.inference.plugins.module_utils.service import boot_serving, ready, snapshot, snapshot_store, textfile

GPU_DEVICE = jit_smoke.GPU_DEVICE
# At boot the driver may still be loading (nvidia-persistenced, udev): wait this long for the device node
# before a host that must launch a kernel is judged without one.
DEVICE_WAIT = 120


def run(argv, timeout, user=None, data=None):
    if user:
        argv = ["setpriv", "--reuid=%d" % user.pw_uid, "--regid=%d" % user.pw_gid, "--init-groups", "--", *argv]
    start = time.monotonic()
    try:
        res = subprocess.run(argv, input=data, capture_output=True, text=True, timeout=timeout, check=False)
        rc, out, err = res.returncode, res.stdout, res.stderr
    except (OSError, subprocess.TimeoutExpired) as exc:
        rc, out, err = -1, "", str(exc)
    return rc, out, err, round(time.monotonic() - start, 2)


def start(argv, user=None, data=""):
    """A command started now, its stdin written at once, collected by finish() (the warm-up runs beside the saxpy
    steps)."""
    if user:
        argv = ["setpriv", "--reuid=%d" % user.pw_uid, "--regid=%d" % user.pw_gid, "--init-groups", "--", *argv]
    begun = time.monotonic()
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError as exc:
        return None, begun, str(exc)
    try:
        proc.stdin.write(data)
    except BrokenPipeError:
        pass  # it exited without reading: its status says why
    finally:
        proc.stdin.close()
        proc.stdin = None  # written and closed: communicate() only reads
    return proc, begun, None


def finish(started, timeout):
    proc, begun, error = started
    if proc is None:
        return -1, "", error, 0.0
    try:
        out, err = proc.communicate(timeout=max(1, timeout - (time.monotonic() - begun)))
        rc = proc.returncode
    except subprocess.TimeoutExpired as exc:
        proc.kill()
        out, err = proc.communicate()
        rc, err = -1, "%s\n%s" % (err, exc)
    return rc, out, err, round(time.monotonic() - begun, 2)


def smoke(cfg, user):
    """(failure message or None, steps): jit_smoke.run_steps, the jit_smoke module's sequence."""
    cuda_home = os.environ.get("CUDA_HOME", "")
    nvcc = os.path.join(cuda_home, "bin", "nvcc")
    try:
        archs = jit_smoke.archs_for(os.environ, cfg.get("archs", "").split())
    except ValueError as exc:
        return "archs: %s" % exc, {}
    # the service's account compiles and launches (issue 58 item 1): root never runs nvcc with the unit's environment
    work = tempfile.mkdtemp(prefix="blackwell-boot-smoke-")
    if user is not None:
        os.chown(work, user.pw_uid, user.pw_gid)
    src, binary = os.path.join(work, "saxpy.cu"), os.path.join(work, "saxpy")
    warm_job = None
    if cfg["warm"]:
        warm_job = start([os.path.join(cfg["venv"], "bin", "python"), "-c", jit_smoke.WARM_SCRIPT, *cfg["warm"]], user, data="{}")

    def output(rc, out, err):
        return {"rc": rc, "stdout": out, "stderr": err}

    def compile_saxpy():
        with open(src, "w") as fh:
            fh.write(jit_smoke.SAXPY_CU)
        rc, out, err, secs = run(jit_smoke.saxpy_compile_argv(nvcc, archs, src, binary), cfg["timeout"], user)
        return rc == 0, {"ok": rc == 0, "seconds": secs, "archs": archs, "nvcc": nvcc, "cuda_home": cuda_home}, output(rc, out, err)

    def launch_saxpy():
        rc, out, err, secs = run([binary], cfg["timeout"], user)
        ok, detail = jit_smoke.launch_result(rc, out, err)
        return ok, {"launched": True, "ok": ok, "detail": detail, "seconds": secs}, output(rc, out, err)

    def warm():
        rc, out, err, secs = finish(warm_job, cfg["timeout"])
        ok, step = jit_smoke.warm_result(rc, out, err, secs)
        return ok, step, output(rc, out, err)

    try:
        failure, steps, failed = jit_smoke.run_steps(compile_saxpy, launch_saxpy, warm if warm_job else None, "auto", os.path.exists(GPU_DEVICE))
    finally:
        if warm_job and warm_job[0] is not None and warm_job[0].poll() is None:  # a saxpy step failed first
            warm_job[0].kill()
            warm_job[0].communicate()
        shutil.rmtree(work, ignore_errors=True)
    if failure and failed and failure.startswith("the saxpy kernel does not compile"):
        failure += ": " + (failed["stderr"] or failed["stdout"]).strip()[-2000:]
    return failure, steps


def wait_for_device(seconds):
    deadline = time.monotonic() + seconds
    while not os.path.exists(GPU_DEVICE) and time.monotonic() < deadline:
        time.sleep(1)
    return os.path.exists(GPU_DEVICE)


def main(path):
    with open(path) as fh:
        cfg = json.load(fh)
    if not cfg["ready_without_launch"] and not wait_for_device(DEVICE_WAIT):
        print("%s: no %s after %d s; the driver is not loaded" % (cfg["service"], GPU_DEVICE, DEVICE_WAIT), flush=True)
    user = None
    if cfg.get("user") and cfg["user"] != "root":
        user = pwd.getpwnam(cfg["user"])
        os.environ.setdefault("HOME", user.pw_dir)
    failure, steps = smoke(cfg, user)
    passed, reason = ready.verdict(failure is not None, {"steps": steps, "msg": failure}, cfg["ready_without_launch"])
    previous, damage = read_marker_text(cfg["marker"])
    if damage:  # a damaged marker vouches for nothing; this validation writes a whole one
        print("%s: the ready marker %s is damaged (%s); written anew" % (cfg["service"], cfg["marker"], damage), flush=True)
    previous = previous or {}
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    marker = ready.marker(
        False,  # ready only once the service answered (--serving)
        reason + "; waiting for the service to answer" if passed else reason,
        now,
        cfg["inputs"],
        os.path.realpath(cfg["venv"]),
        cfg["toolkit"],
        cfg["archs"],
        previous.get("versions"),
        {"steps": steps},
        previous,
        source=ready.BOOT_SOURCE % cfg["service"],
        phase="validated" if passed else "failed",
        vouched=cfg.get("vouched"),
    )
    write_marker(cfg["marker"], marker)
    write_textfile(cfg, marker)
    print("%s: %s (%s)" % (cfg["service"], "VALIDATED, waiting for its answer" if passed else ready.NOT_READY, reason), flush=True)
    return 0 if passed else 1


def write_marker(path, marker):
    """The marker, replaced whole (a reader never sees half of it), durable before the rename."""
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    with os.fdopen(fd, "w") as fh:
        json.dump(marker, fh, indent=4, sort_keys=True)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def write_textfile(cfg, marker, checked=None):
    """The marker for node_exporter's textfile collector (textfile_dir; off when empty), with the check timer's last
    look (checked). A failure is said, never fatal: the marker is the verdict, the textfile only shows it."""
    target = textfile.path(cfg.get("textfile_dir"), cfg["service"])
    if not target:
        return
    try:
        textfile.write(target, textfile.render(marker, cfg["service"], checked))
    except OSError as exc:
        print("%s: textfile %s not written: %s" % (cfg["service"], target, exc), flush=True)


def read_marker_text(path):
    """(marker or None, damage or None): ready.parse_marker of the file; a file that cannot be read is damage too."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, str(exc)
    return ready.parse_marker(text)


def read_marker(path):
    """The marker as a dict; {} when there is none or it is damaged."""
    return read_marker_text(path)[0] or {}


def unit_props(unit):
    argv = ["systemctl", "show", unit, "--timestamp=unix"]
    for prop in ("ActiveState", "Result", "MainPID", "ControlGroup", "InvocationID", "ExecMainStartTimestamp"):
        argv += ["-p", prop]
    rc, out, _err, _secs = run(argv, 30)
    props = {}
    for line in out.splitlines() if rc == 0 else []:
        key, _sep, value = line.partition("=")
        props[key] = value
    return props


def serving(path):
    """After the service started: this boot's validated marker becomes serving (ready) once the unit's own process
    answered and the judge (ready.judge) says READY, or not serving with the cause. Exits 1 when it is not; the service
    itself is never touched."""
    with open(path) as fh:
        cfg = json.load(fh)
    service = cfg["service"]
    why_not = ready.pending(read_marker(cfg["marker"]), cfg["inputs"], service)
    if why_not:
        print("%s: marker left as it is: %s" % (service, why_not), flush=True)
        return 0
    answered, why = boot_serving.wait(cfg, lambda: unit_props(service))
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    current = read_marker(cfg["marker"])
    if ready.pending(current, cfg["inputs"], service):  # a play wrote it meanwhile: the play's word stands
        print("%s: marker rewritten meanwhile; left as it is" % service, flush=True)
        return 0
    # the play's judge decides, over what the wait saw and when the answering process started
    reading = {"marker": current, "current": current.get("inputs") == cfg["inputs"], "answer": {"answered": answered, "msg": why}}
    verdict = ready.judge(dict(reading, started=ready.started_at(unit_props(service))))
    ok = verdict["ready"]
    why = why if ok or not answered else verdict["reason"]
    marker = ready.after_answer(current, ok, why, now, service)
    write_marker(cfg["marker"], marker)
    write_textfile(cfg, marker)
    print("%s: %s: %s (%s)" % (service, ready.word(ok), "serving" if ok else "not serving", why), flush=True)
    return 0 if ok else 1


LOCK = "/run/blackwell-inference/play.lock"
# a play's lock whose heartbeat is older than this is not a play at work (host/lock.py STALE_AFTER)
LOCK_STALE_AFTER = 7200


def sha256_of(path):
    """What a vouched file holds now (the snapshot store's own reading), None when it is absent."""
    try:
        return snapshot_store.file_state(path).get("sha256")
    except (OSError, ValueError):
        return "unreadable"


def digest_key(path):
    """The host's key for the secrets file's keyed digest (common/secrets.py), None when it cannot be had."""
    try:
        return secrets.digest_key(path)
    except (OSError, ValueError):
        return None


def unit_sub_state(unit):
    rc, out, _err, _secs = run(["systemctl", "show", unit, "-p", "SubState", "--value"], 30)
    return out.strip() if rc == 0 else ""


def check(path):
    """The check timer's look: the judge over the marker, the unit's own answer now and the vouched files; the marker
    turns serving or not serving when that changed (ready.after_check), the textfile says when it last looked."""
    with open(path) as fh:
        cfg = json.load(fh)
    service = cfg["service"]
    lock = cfg.get("lock") or LOCK
    try:
        if time.time() - os.stat(lock).st_mtime < LOCK_STALE_AFTER:
            print("%s: a play holds %s; not checked" % (service, lock), flush=True)
            return 0
    except OSError:
        pass  # no play at work
    ready_unit = sibling(service, "-ready.service")
    if unit_sub_state(ready_unit) == "running":
        print("%s: %s still waits for the answer after a start; not checked" % (service, ready_unit), flush=True)
        return 0
    marker, damage = read_marker_text(cfg["marker"])
    props = unit_props(service)
    # the sampled request too when this look may mark the service ready (a passed validation not marked so yet)
    promoting = bool(marker) and marker.get("ready") is not True and ready.validation_passed(marker)
    answer = boot_serving.look(cfg, props, sample=promoting)
    vouched = (marker or {}).get("vouched") or {}
    drift = ready.file_drift(vouched.get("files"), sha256_of, digest_key(cfg["digest_key"]) if cfg.get("digest_key") else None) if marker else None
    current = bool(marker) and marker.get("inputs") == cfg["inputs"]
    verdict = ready.judge(
        {
            "marker": marker,
            "marker_damage": damage,
            "current": current,
            "stale": "the marker is for other inputs than the validator's settings",
            "answer": answer,
            "started": ready.started_at(props),
            "foreign": drift,
        }
    )
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    new = ready.after_check(marker, verdict, now, service)
    if new is not None:
        write_marker(cfg["marker"], new)
    write_textfile(cfg, new or marker or {}, {"time": now, "answered": answer.get("answered") is True})
    print("%s: %s (%s): %s%s" % (service, ready.word(verdict["ready"]), verdict["state"], verdict["reason"], "; marker updated" if new else ""), flush=True)
    return 0


def sibling(service, suffix):
    """The name of one of the role's units beside the service's: sglang-k26.service -> sglang-k26<suffix>."""
    return (service[: -len(".service")] if service.endswith(".service") else service) + suffix


def arm(path):
    """The transient timer that puts the last good state back unless the play disarms it in time (a timer already
    armed by an earlier play is replaced)."""
    with open(path) as fh:
        cfg = json.load(fh)
    unit = sibling(cfg["service"], "-rollback")
    for argv in (["systemctl", "stop", unit + ".timer", unit + ".service"], ["systemctl", "reset-failed", unit + ".timer", unit + ".service"]):
        run(argv, 60)  # none there: nothing to stop
    armed_at = int(time.time())
    after = int(cfg["rollback_after"])
    argv = [
        "systemd-run",
        "--unit=" + unit,
        "--collect",
        "--on-active=%ds" % after,
        "--timer-property=AccuracySec=1s",
        "--description=Put %s's last good state back unless the play confirms its restart (blackwell.inference)" % cfg["service"],
        sys.executable,
        os.path.abspath(__file__),
        "--rollback",
        os.path.abspath(path),
        str(armed_at),
    ]
    rc, out, err, _secs = run(argv, 60)
    print(
        "%s: %s"
        % (cfg["service"], "armed: the last good state goes back in %d s unless disarmed" % after if rc == 0 else "not armed: " + (err or out).strip()),
        flush=True,
    )
    return 0 if rc == 0 else 1


def disarm(path):
    """The timer stopped: the play confirmed the restart. Says whether it was still armed, or had fired already."""
    with open(path) as fh:
        cfg = json.load(fh)
    unit = sibling(cfg["service"], "-rollback")
    rc, out, _err, _secs = run(["systemctl", "show", unit + ".timer", unit + ".service", "-p", "ActiveState", "--value"], 30)
    states = out.split() if rc == 0 else []
    run(["systemctl", "stop", unit + ".timer"], 60)
    fired = len(states) > 1 and states[1] in ("active", "activating", "deactivating")
    print("%s: %s" % (cfg["service"], "disarmed" if states[:1] == ["active"] else "fired already" if fired else "not armed"), flush=True)
    return 0


def rollback(path, armed_at):
    """The armed timer fired: the play did not confirm the restart in time. Unless the marker says it did, the last
    good state goes back (service_snapshot's own code), systemd reads it, the service restarts on it, and the marker
    says not ready with what was done. No last good state: the service is stopped (a state nobody confirmed does not
    keep running)."""
    with open(path) as fh:
        cfg = json.load(fh)
    service = cfg["service"]
    marker, _damage = read_marker_text(cfg["marker"])
    if ready.confirmed(marker, armed_at):
        print("%s: the play confirmed the restart; nothing to put back" % service, flush=True)
        return 0
    late = "the play did not confirm the restarted service within %d s (killed, or cut off from the host)" % int(cfg["rollback_after"])
    try:
        manifest = snapshot_store.read_snapshot(cfg["snapshot_store"])
    except (OSError, ValueError) as exc:
        manifest, late = None, "%s; the last good snapshot cannot be read: %s" % (late, exc)
    errors = []
    if manifest is None:
        rc, out, err, _secs = run(["systemctl", "stop", service], 300)
        what = "no last good state to put back: the service is stopped" + ("" if rc == 0 else " (systemctl stop failed: %s)" % (err or out).strip())
    else:
        current = snapshot_store.host_state(cfg["state_files"], cfg.get("venv_link"))
        steps = snapshot.restore_plan(current, manifest)
        _done, errors = snapshot_store.restore(manifest, steps, cfg.get("secret_files") or ())
        run(["systemctl", "daemon-reload"], 120)
        rc, out, err, _secs = run(["systemctl", "restart", "--no-block", service], 120)
        what = "the host put back the last good state of %s (%d files and links) and restarted it" % (manifest.get("time"), len(steps))
        if errors:
            what += "; not put back: " + "; ".join(errors)
        if rc != 0:
            what += "; systemctl restart failed: %s" % (err or out).strip()
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    new = ready.rolled_back(marker, "%s: %s" % (late, what), now, service)
    write_marker(cfg["marker"], new)
    write_textfile(cfg, new)
    print("%s: %s: %s" % (service, ready.NOT_READY, new["reason"]), flush=True)
    return 1 if errors else 0


if __name__ == "__main__":
    ACTIONS = {"--serving": serving, "--check": check, "--arm": arm, "--disarm": disarm}
    if sys.argv[1] == "--rollback":
        sys.exit(rollback(sys.argv[2], int(sys.argv[3])))
    sys.exit(ACTIONS[sys.argv[1]](sys.argv[2]) if sys.argv[1] in ACTIONS else main(sys.argv[1]))
