# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A unit's environment as systemd gives it to the service (`systemctl show`)."""

from __future__ import annotations

import glob
import re

# systemd's built-in PATH for services (split-usr build, as on Debian 12 / Ubuntu 24.04): what a unit without
# Environment=PATH=... sees, and what the role's PATH ends with. Its one home: every module reads it from here.
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
SHOW_PROPERTIES = ("LoadState", "Environment", "EnvironmentFiles")


# a variable name as systemd accepts it in an environment file (env_name_is_valid: letters, digits, _, no digit first)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def show_argv(unit):
    return ["systemctl", "show", "--no-pager"] + ["--property=%s" % p for p in SHOW_PROPERTIES] + ["--", unit]


def parse_show(stdout):
    """`systemctl show` KEY=VALUE lines -> dict (a property may repeat: EnvironmentFiles)."""
    props = {}
    for line in stdout.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            props.setdefault(key, []).append(value)
    return props


def show_props(stdout):
    """`systemctl show` KEY=VALUE lines -> {key: value}, one value each (the last), stripped (parse_show)."""
    return {key.strip(): values[-1].strip() for key, values in parse_show(stdout).items()}


_C_ESCAPES = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11}


def show_words(value):
    """The words of a string list as `systemctl show` prints it (Environment=, ReadWritePaths=): systemd's
    shell_maybe_quote(word, 0), a word as it is or in double quotes, with \\, \\", \\$ and \\` escaped by a backslash
    and control characters as C escapes (\\t, \\ooo). shlex.split reads the quotes but not those escapes ($HOME would
    come back as \\$HOME, a tab as \\t)."""
    data, words, word, quoted, i, started = (value or "").encode("utf-8", "surrogateescape"), [], bytearray(), False, 0, False
    while i < len(data):
        c = data[i : i + 1]
        if c == b"\\" and i + 1 < len(data):
            nxt = chr(data[i + 1])
            if nxt in _C_ESCAPES:
                word.append(_C_ESCAPES[nxt])
                i += 2
            elif nxt.isdigit():
                word.append(int(data[i + 1 : i + 4], 8) & 0xFF)
                i += 4
            else:
                word.append(data[i + 1])
                i += 2
            started = True
            continue
        if c == b'"':
            quoted, started = not quoted, True
        elif c == b" " and not quoted:
            if started:
                words.append(word.decode("utf-8", "surrogateescape"))
            word, started = bytearray(), False
        else:
            word += c
            started = True
        i += 1
    if started:
        words.append(word.decode("utf-8", "surrogateescape"))
    return words


def parse_environment(value):
    """systemd's Environment property ("A=1 "B=x y"") -> {"A": "1", "B": "x y"}; later wins."""
    env = {}
    for item in show_words(value or ""):
        key, sep, val = item.partition("=")
        if sep and key:
            env[key] = val
    return env


def environment_files(values):
    """EnvironmentFiles lines ("/etc/x (ignore_errors=yes)") -> [(path, ignore_errors)]."""
    files = []
    for value in values or []:
        path, _sep, rest = value.partition(" (ignore_errors=")
        if path:
            files.append((path, rest.startswith("yes")))
    return files


def parse_env_file(text):
    """KEY=VALUE lines of an EnvironmentFile (comments, blank lines, optional quotes), as systemd loads them: a line
    whose name is not a variable's (`export KEY=value`: the name is `export KEY`) is ignored, as systemd ignores it
    ("Ignoring invalid environment assignment")."""
    env = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        key, sep, val = line.partition("=")
        if not sep or not _ENV_NAME.match(key.rstrip()):
            continue
        val = val.strip()
        if len(val) >= 2 and val[0] == val[-1] and val[0] in "'\"":
            val = val[1:-1]
        env[key.strip()] = val
    return env


def unit_environment(props, read_file):
    """Environment= of the unit, overridden by its EnvironmentFile= entries (systemd: "settings
    from these files override settings made with Environment=")."""
    env = parse_environment(" ".join(props.get("Environment", [])))
    notes = []
    for pattern, ignore in environment_files(props.get("EnvironmentFiles")):
        # systemd reads a glob's matches in order (and a pattern that matches nothing as missing)
        paths = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        if not paths and not ignore:
            notes.append("EnvironmentFile %s matches no file" % pattern)
        for path in paths:
            try:
                env.update(parse_env_file(read_file(path)))
            except OSError as exc:
                if not ignore:
                    notes.append("EnvironmentFile %s unreadable: %s" % (path, exc))
    return env, notes


def read_text(path):
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.read()


def service_environment(module, run, unit, environment):
    """The environment a service process gets: its unit's (if given), then `environment` over it,
    systemd's default PATH when none. Fails the module when the unit cannot be read."""
    env, notes = {}, []
    if unit:
        res = run(show_argv(unit))
        if not res.ok:
            module.fail_json(msg="cannot read the environment of unit %s" % unit, **res.as_dict())
        props = parse_show(res.stdout)
        state = props.get("LoadState", ["?"])[0]
        if state != "loaded":
            module.fail_json(msg="unit %s is not loaded (LoadState=%s)" % (unit, state), **res.as_dict())
        env, notes = unit_environment(props, read_text)
    env.update({str(k): str(v) for k, v in (environment or {}).items()})
    env.setdefault("PATH", SYSTEM_PATH)
    return env, notes
