# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A module failure in one screen: the line that says why (picked from the output), what stays in place, and the
path of a log on the host with the full output (commands, stdout, stderr). Pure except write_log; stdlib only.

The result a failing module returns keeps rc/stdout/stderr, bounded (attach): the last MAX_LINES lines and
MAX_CHARS characters of each, with a note naming the log, and a command whose long arguments (a script passed
with `python -c`) are replaced by their length.
"""

from __future__ import annotations

import datetime
import os
import re
import shlex
import stat

LOG_DIR = "/var/log/blackwell-inference"
# the logs kept under LOG_DIR: the newest KEEP_LOGS, and no more than KEEP_BYTES in all (prune, after each new one)
KEEP_LOGS = 200
KEEP_BYTES = 64 * 1024 * 1024
MAX_LINES = 40
MAX_CHARS = 4096
CAUSE_CHARS = 300
ARG_CHARS = 200
# what stays in place after a read-only module failed
READ_ONLY = "nothing was changed (it only reads the host)"

# What a full disk, a quota, a read-only or out-of-memory system says, wherever in the output: the build's other
# errors follow from it (ninja, the compiler and Python each report the same write failing).
_RESOURCE = re.compile(r"No space left on device|Disk quota exceeded|Read-only file system|Cannot allocate memory|Out of memory")
# a compiler's or a tool's error line: gcc/nvcc `file:12: error: ...`, `fatal error: curand.h: ...`, `nvcc fatal   : ...`,
# `ninja: error: ...`, `/usr/bin/ld: cannot find -lcuda` is not one (no such prefix); Python's `RuntimeError:` is not one
_ERROR = re.compile(r"(?:^|[\s:(])(?:fatal error|error|fatal)\s*:\s*\S")
# pip's own failure lines
_PIP = re.compile(r"^ERROR: \S")
# the last line of a Python traceback: `OSError: [Errno 28] ...`, `subprocess.CalledProcessError: ...`, `KeyboardInterrupt`
_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)(?::\s.*)?$")
# lines that say only that something before them failed
_NOISE = re.compile(r"^(?:ninja: build stopped|FAILED: |Traceback \(most recent call last\)|\[\d+/\d+\] )")


def _lines(texts):
    return [[ln.strip() for ln in str(t or "").splitlines() if ln.strip()] for t in texts]


def _clip(line, match=None, limit=CAUSE_CHARS):
    """The line, or a window of it around the match when it is longer than limit (one JSON line, say)."""
    if len(line) <= limit:
        return line
    start = 0 if match is None else max(0, min(match.start() - limit // 2, len(line) - limit))
    return ("..." if start else "") + line[start : start + limit - 6] + "..."


def cause(*texts):
    """The one line that says why, from a failure's texts in the order given (the failure's own text, stderr,
    stdout): a full disk or another resource error first, then a compiler's or tool's first `error:` line, pip's
    first `ERROR:` line, a Python exception's last line, else the last line that is not noise. '' when all are empty."""
    per_text = _lines(texts)
    for pattern, last in ((_RESOURCE, False), (_ERROR, False), (_PIP, False), (_EXCEPTION, True)):
        for lines in per_text:
            found = [(ln, m) for ln, m in ((ln, pattern.search(ln)) for ln in lines) if m and not (pattern is _ERROR and _NOISE.match(ln))]
            if found:
                line, match = found[-1] if last else found[0]
                return _clip(line, match)
    for lines in per_text:
        kept = [ln for ln in lines if not _NOISE.match(ln)]
        if kept:
            return _clip(kept[-1])
    return ""


def one_line(text):
    """A step's error or detail as the result keeps it: the text when it is one short line, else its cause."""
    text = str(text or "").strip()
    return text if "\n" not in text and len(text) <= CAUSE_CHARS else cause(text)


def bound(text, log=None, max_lines=MAX_LINES, max_chars=MAX_CHARS):
    """The end of a text (its last max_lines lines, at most max_chars characters), after a note of what was cut and
    where the whole is. The text itself when it fits."""
    text = str(text or "")
    lines = text.splitlines(True)
    kept = "".join(lines[-max_lines:])[-max_chars:]
    if kept == text:
        return text
    where = "; the full text is in %s" % log if log else ""
    return "[... %d of %d characters cut%s]\n%s" % (len(text) - len(kept), len(text), where, kept)


def short_argv(argv, log=None, limit=ARG_CHARS):
    """The command with each argument longer than limit, or of several lines (a script), replaced by its length."""
    where = "; in %s" % log if log else ""
    return [a if len(str(a)) <= limit and "\n" not in str(a) else "<%d characters%s>" % (len(str(a)), where) for a in argv or []]


def attach(output, log=None):
    """The failed command's fields for the module's result (CommandResult.as_dict()), bounded: cmd, rc, os_error,
    stdout, stderr."""
    output = output or {}
    res = {k: output[k] for k in ("rc", "os_error") if k in output}
    if "cmd" in output:
        res["cmd"] = short_argv(output["cmd"], log)
    for key in ("stdout", "stderr"):
        if key in output:
            res[key] = bound(output[key], log)
    return res


def message(what, why, kept=None, log=None, log_error=None):
    """At most three lines: `<what failed>: <the cause>`, what stays in place, where the full output is."""
    what = " ".join(str(what or "failed").split())
    first = what if not why or why in what else why if why.startswith(what) else "%s: %s" % (what, why)
    lines = [_clip(first, limit=2 * CAUSE_CHARS)]
    if kept:
        lines.append(kept)
    if log:
        lines.append("full output (commands, stdout, stderr): %s" % log)
    elif log_error:
        lines.append("the full output could not be logged: %s" % log_error)
    return "\n".join(lines)


def headline(text):
    """What failed, from a failure's text: its first line up to the detail after the first ': ' when that detail
    is the start of an output (the cause is picked from the output instead)."""
    first = (str(text or "").strip().splitlines() or ["failed"])[0]
    return first.split(": ", 1)[0] if len(first) > CAUSE_CHARS or str(text or "").strip() != first else first


def log_name(module, step, unit=None, now=None):
    """`<module>-<unit>-<step>-<UTC time>.log`, each part safe as a file name."""
    now = now or datetime.datetime.now(datetime.UTC)
    parts = [module] + ([unit] if unit else []) + [step, now.strftime("%Y%m%dT%H%M%SZ")]
    return "-".join(re.sub(r"[^A-Za-z0-9_.@-]+", "_", str(p)) for p in parts) + ".log"


def log_text(summary, commands, now=None):
    """The log's content: the failure's whole text, then each command with its rc, stdout and stderr, unbounded."""
    now = now or datetime.datetime.now(datetime.UTC)
    out = ["time: %s" % now.strftime("%Y-%m-%dT%H:%M:%SZ"), "failure:", str(summary or "").rstrip(), ""]
    for cmd in commands:
        out += [
            "$ %s" % " ".join(shlex.quote(str(a)) for a in cmd.get("cmd") or []),
            "rc: %s%s" % (cmd.get("rc"), " (%s)" % cmd["os_error"] if cmd.get("os_error") else ""),
            "--- stdout ---",
            str(cmd.get("stdout") or "").rstrip(),
            "--- stderr ---",
            str(cmd.get("stderr") or "").rstrip(),
            "",
        ]
    return "\n".join(out) + "\n"


def write_log(name, text, log_dir=LOG_DIR):
    """Write a new log file (0640) under log_dir (made 0750 when missing); its path. Never overwrites: a second
    failure in the same second gets a suffix. Raises OSError (a full disk, a log_dir it may not write)."""
    if not os.path.isdir(log_dir):
        os.makedirs(log_dir, mode=0o750, exist_ok=True)
        os.chmod(log_dir, 0o750)  # noqa: S103 - root and its group read the logs, no one else
    base, ext = os.path.splitext(os.path.join(log_dir, name))
    for n in range(100):
        path = base + ("-%d" % n if n else "") + ext
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o640)
        except FileExistsError:
            continue
        with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as fh:
            os.fchmod(fd, 0o640)
            fh.write(text)
        prune(log_dir, keep=path)
        return path
    raise FileExistsError("no free log name for %s in %s" % (name, log_dir))


def prune(log_dir, keep=None, max_logs=None, max_bytes=None):
    """Remove the oldest logs of log_dir (plain *.log files, by modification time) beyond the newest max_logs, and
    beyond max_bytes in all; never `keep` (the one just written). The removed paths; a file that vanishes or cannot be
    removed meanwhile is left to the next call. Caps: KEEP_LOGS and KEEP_BYTES unless given."""
    max_logs = KEEP_LOGS if max_logs is None else max_logs
    max_bytes = KEEP_BYTES if max_bytes is None else max_bytes
    found = []
    try:
        names = os.listdir(log_dir)
    except OSError:
        return []
    for name in names:
        path = os.path.join(log_dir, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if name.endswith(".log") and stat.S_ISREG(st.st_mode):
            found.append((st.st_mtime, path, st.st_size))
    found.sort(reverse=True)  # newest first
    removed, total = [], 0
    for n, (_mtime, path, size) in enumerate(found):
        total += size
        if path == keep or (n < max_logs and total <= max_bytes):
            continue
        try:
            os.unlink(path)
            removed.append(path)
        except OSError:
            continue
    return removed


def report(module, step, failure, output=None, kept=None, unit=None, log_dir=LOG_DIR, now=None):
    """The failure of a module's step in one screen: (msg, the result's bounded command fields with `log`). The log
    (log_dir) holds the failure's whole text and the command's full output; when it cannot be written the message
    says why, and the fields stay bounded."""
    output = output or {}
    why = cause(failure, output.get("stderr"), output.get("stdout"))
    log = log_error = None
    try:
        log = write_log(log_name(module, step, unit, now), log_text(failure, [output] if output else [], now), log_dir)
    except OSError as exc:
        log_error = "%s: %s" % (log_dir, exc.strerror or exc)
    fields = attach(output, log)
    fields["log"] = log
    return message(headline(failure), why, kept, log, log_error), fields


def result(module, step, msg, fields=None, kept=None, unit=None, log_dir=LOG_DIR, now=None):
    """fail_json's arguments for a failure whose result may carry a command (cmd, rc, stdout, stderr): as they are
    when the message is a short line or two and the command's fields fit the bounds; else report()'s message (the
    full text and output go to a log) and the command's fields bounded, the other fields as they were."""
    fields, msg = dict(fields or {}), str(msg or "failed")
    texts = [str(fields.get(k) or "") for k in ("stdout", "stderr")]
    fits = (
        len(msg) <= 2 * CAUSE_CHARS
        and msg.count("\n") < 3
        and all(len(t) <= MAX_CHARS and t.count("\n") < MAX_LINES for t in texts)
        and short_argv(fields.get("cmd") or []) == list(fields.get("cmd") or [])
    )
    if fits:
        return dict(fields, msg=msg)
    output = {k: fields.pop(k) for k in ("cmd", "rc", "stdout", "stderr", "os_error") if k in fields}
    text, bounded = report(module, step, msg, output, kept, unit, log_dir, now)
    return dict(fields, msg=text, **bounded)
