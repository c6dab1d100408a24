# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The command an existing unit runs, read from its files, and the command the role's drop-in gives it.

In drop-in mode the unit's own ExecStart (its flags: --tp, --attention-backend, speculative decoding...) is kept and
only its interpreter moves to the managed venv, unless the variables give a command. Pure: the caller reads the unit's
fragment and drop-ins (in systemd's order, the role's own drop-in left out)."""

from __future__ import annotations

import glob
import hashlib
import ipaddress
import os
import posixpath
import re

from ansible_collections.blackwell.inference.plugins.module_utils.common import secrets
from ansible_collections.blackwell.inference.plugins.module_utils.common import systemd as systemd_env
from ansible_collections.blackwell.inference.plugins.module_utils.service.settings import MANAGED_KEYS

_PREFIXES = "-@:+!|"
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\", '"': '"', "'": "'", "s": " "}
_VENV_BIN = re.compile(r"^(?P<venv>/.+)/bin/(?P<exe>[^/]+)$")
_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")
# what an environment file sets that is shown in a conflict (the rest is compared by digest: it may be a secret)
SHOWN_KEYS = frozenset(MANAGED_KEYS) | {"CUDA_PATH", "CUDA_VISIBLE_DEVICES", "FLASHINFER_NVCC", "NVCC"}


class UnitCommandError(ValueError):
    pass


def split_words(value):
    """One ExecStart= value split into words with systemd's quoting ("..." and '...', C escapes); no specifier or
    variable expansion (%% and $ stay as written)."""
    words, word, quote, i, started = [], [], None, 0, False
    while i < len(value):
        c = value[i]
        if c == "\\" and i + 1 < len(value):
            nxt = value[i + 1]
            if nxt in _ESCAPES:
                word.append(_ESCAPES[nxt])
                i += 2
                started = True
                continue
        if quote:
            if c == quote:
                quote = None
            else:
                word.append(c)
        elif c in "\"'":
            quote, started = c, True
        elif c.isspace():
            if started:
                words.append("".join(word))
                word, started = [], False
        else:
            word.append(c)
            started = True
        i += 1
    if quote:
        raise UnitCommandError("unterminated %s quote in ExecStart=%s" % (quote, value))
    if started:
        words.append("".join(word))
    return words


def settings(text):
    """(section, key, value) of each assignment in a unit file's text, continuation lines joined, comments skipped."""
    section = None
    for raw in (text or "").replace("\\\n", " ").splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            section = line.strip("[]").strip()
            continue
        key, sep, value = line.partition("=")
        if sep:
            yield section, key.strip(), value.strip()


def exec_start(files):
    """The effective ExecStart of a Type=simple service from its files [(path, text)] in systemd's order: the last
    assignment wins and an empty one resets. Returns (argv, path of the file that set it) or (None, None)."""
    argv, source = None, None
    for path, text in files:
        for section, key, value in settings(text):
            if section != "Service" or key != "ExecStart":
                continue
            if not value:
                argv, source = None, path
                continue
            words = split_words(value.lstrip(_PREFIXES))
            argv, source = (words, path) if words else (None, path)
    return argv, source


_HEX = re.compile(r"\\x([0-9a-fA-F]{2})")


def _unescape(text):
    """systemd's unit name unescaping (%I, %P, %J): \\xNN is the byte, - is /."""
    return _HEX.sub(lambda m: chr(int(m.group(1), 16)), text.replace("-", "/"))


def specifiers(unit, host=None):
    """The specifiers systemd expands in a unit's settings, from the unit's name (%n %N %p %P %i %I %j %J, %%) and,
    when given, the host's (host: {H, m, b} - hostname, machine id, boot id). A template instance `sglang@k26.service`:
    %i k26, %p sglang."""
    name = str(unit or "")
    base = name.rsplit(".", 1)[0] if "." in name else name
    prefix, _at, instance = base.partition("@")
    last = prefix.rsplit("-", 1)[-1]
    spec = {"n": name, "N": base, "p": prefix, "P": _unescape(prefix), "i": instance, "I": _unescape(instance), "j": last, "J": _unescape(last), "%": "%"}
    spec.update({k: str(v) for k, v in (host or {}).items() if k in ("H", "m", "b") and v})
    return spec


def expand(value, spec):
    """A setting's value with its specifiers expanded (spec: specifiers()); one it does not know stays as written."""
    out, i, value = [], 0, str(value)
    while i < len(value):
        if value[i] == "%" and i + 1 < len(value) and value[i + 1] in spec:
            out.append(spec[value[i + 1]])
            i += 2
            continue
        out.append(value[i])
        i += 1
    return "".join(out)


def environment_steps(files, fragment, own, spec=None):
    """What the unit's files other than the role's own drop-in do to the service's environment and command, in systemd's
    order: [{file, late, dropin, kind, key, value}]. kind: set (Environment=), reset (an empty Environment=), unset
    (UnsetEnvironment=, value None or the KEY=VALUE form's value), env_file (EnvironmentFile=: key is its path, value
    whether a missing file is ignored) or exec_start. late: the file applies after the role's drop-in (own: its path;
    systemd applies drop-ins in the order of their file names). Specifiers in Environment= and EnvironmentFile= are
    expanded as systemd does (spec: specifiers(); %% alone without one)."""
    spec = spec or {"%": "%"}
    own_name = posixpath.basename(own) if own else None
    steps = []
    for path, text in files:
        dropin = path != fragment
        late = dropin and own_name is not None and posixpath.basename(path) > own_name
        base = {"file": path, "late": late, "dropin": dropin}
        for section, key, value in settings(text):
            if section != "Service":
                continue
            if key == "Environment":
                if not value:
                    steps.append(dict(base, kind="reset", key=None, value=None))
                for word in _words(value):
                    name, sep, val = word.partition("=")
                    if sep and name:
                        steps.append(dict(base, kind="set", key=name, value=expand(val, spec)))
            elif key == "UnsetEnvironment":
                for word in _words(value):
                    name, sep, val = word.partition("=")
                    steps.append(dict(base, kind="unset", key=name, value=val if sep else None))
            elif key == "EnvironmentFile" and value:
                ignore = value.startswith("-")
                steps.append(dict(base, kind="env_file", key=expand(value.lstrip("-"), spec), value=ignore))
            elif key == "ExecStart":
                steps.append(dict(base, kind="exec_start", key=None, value=value))
    return steps


def _words(value):
    try:
        return split_words(value)
    except UnitCommandError:
        return value.split()


def environment_conflicts(steps, env, env_files=None, own_exec=None):
    """Sentences, one per setting, for what the unit's other files change of what the role sets ([] when nothing): the
    environment `env` the role's drop-in writes, and its ExecStart (own_exec: 'dropin' when the drop-in sets it, 'unit'
    when the role's unit file does, None when the role sets none). steps: environment_steps(); env_files: {path: {key:
    {value, digest}}} as read() returns them (a value read from an environment file is shown only for the keys systemd
    and FlashInfer look at, else compared by digest). systemd's rules: Environment= assignments in file order (an empty
    one resets the list), then EnvironmentFile= contents over them, then UnsetEnvironment=."""
    state = _merge(steps, env, env_files)
    out = []
    for key, value in sorted((env or {}).items()):
        got, source = state.get(key, (None, None))
        if source and _differs(got, str(value)):
            out.append("%s (the role sets %s=%s)" % (source, key, value))
    for step in steps:
        if step["kind"] == "exec_start" and ((own_exec == "dropin" and step["late"]) or (own_exec == "unit" and step["dropin"])):
            out.append(
                "%s sets ExecStart=%s (the role's %s sets the service's command)" % (step["file"], step["value"], "drop-in" if own_exec == "dropin" else "unit")
            )
    return out


def effective_environment(steps, env, env_files=None):
    """The environment the service gets from its files once the role's drop-in sets `env` (what the fingerprint
    vouches for): a value read from an environment file that is not shown (it may be a secret) as its digest, keyed
    under the host's key when the reading had one (hmac-sha256:..., read_env_file)."""
    out = {}
    for key, (got, _source) in sorted(_merge(steps, env, env_files).items()):
        if got is not None:
            out[key] = got["value"] if got["value"] is not None else got["digest"]
    return out


def _differs(got, value):
    """Whether what the unit's files set (got) is not the role's value: by value where it is shown, else by digest,
    which only a plain one (a reading without the host's key) can match."""
    if got is None:
        return True
    if got.get("value") is not None:
        return got["value"] != value
    return got.get("digest") != plain_digest(value)


def _merge(steps, env, env_files):
    """{key: ({value, digest} or None when unset, the file's sentence or None for the role's)} by systemd's rules."""
    env_files = env_files or {}
    state = {}

    def apply(step):
        if step["kind"] == "reset":
            for key in list(state):
                state[key] = (None, "%s resets Environment=" % step["file"])
        elif step["kind"] == "set":
            state[step["key"]] = (_plain(step["value"]), "%s sets %s=%s" % (step["file"], step["key"], step["value"]))

    for step in steps:
        if not step["late"]:
            apply(step)
    state.update({str(k): (_plain(v), None) for k, v in (env or {}).items()})
    for step in steps:
        if step["late"]:
            apply(step)
    for step in steps:
        if step["kind"] != "env_file":
            continue
        for key, read in sorted((env_files.get(step["key"]) or {}).items()):
            shown = read.get("value")
            what = "%s=%s" % (key, shown) if shown is not None else "%s (value not shown)" % key
            state[key] = (read, "%s (EnvironmentFile= of %s) sets %s" % (step["key"], step["file"], what))
    for step in steps:
        if step["kind"] == "unset" and step["key"] in state:
            now = state[step["key"]][0]
            if step["value"] is None or (now is not None and now.get("value") == step["value"]):
                state[step["key"]] = (None, "%s unsets %s" % (step["file"], step["key"]))
    return state


def _sha256(value):
    return hashlib.sha256(value.encode("utf-8", "surrogateescape")).hexdigest()


def plain_digest(value):
    """sha256:<hex> of a value: only for values everyone may read (the role's own, a table's); a value of an
    operator's environment file gets keyed_digest."""
    return "sha256:" + _sha256(value)


def keyed_digest(key):
    """The digest function for the values of environment files on a host with the digest key `key` (bytes;
    common/secrets.py digest_key): an HMAC under it (hmac-sha256:...), never a plain sha256 that anyone who reads the
    marker could test guesses against."""
    return lambda value: secrets.keyed(key, _sha256(value))


def _plain(value):
    return {"value": value, "digest": plain_digest(value)}


def read_env_file(text, shown=SHOWN_KEYS, digest=plain_digest):
    """An EnvironmentFile's assignments as {key: {value, digest}}: the value only for the keys in `shown` (the file may
    hold secrets), the digest of every value (digest(value): keyed_digest on a host) to tell a change by."""
    out = {}
    for key, value in systemd_env.parse_env_file(text).items():
        out[key] = {"value": value if key in shown else None, "digest": digest(value)}
    return out


def unit_venv(argv):
    """The directory whose bin/ the unit's command starts in (the caller checks it has pyvenv.cfg), or None."""
    m = _VENV_BIN.match(argv[0]) if argv else None
    return m.group("venv") if m else None


def dropin_command(unit_argv, venv, variables_argv=None, unit_in_venv=True):
    """The ExecStart the drop-in writes, and what it is made of.

    - `variables_argv` (the role's command, when sglang_service_command or sglang_service_args are set): it; source
      'variables', with the unit's own command as `old` for the summary;
    - else the unit's own command with its interpreter (a venv's bin/python* or console script) moved to the same name
      in `venv`, every flag kept; source 'unit';
    - a unit whose command does not start in a venv's bin/ (`unit_in_venv`: the caller found no pyvenv.cfg in
      unit_venv(unit_argv)) cannot be moved: UnitCommandError naming the variables.
    Returns {'argv', 'source', 'old', 'replaced'} (replaced: the variables' command differs from the unit's)."""
    if variables_argv:
        argv = list(variables_argv)
        return {"argv": argv, "source": "variables", "old": unit_argv, "replaced": bool(unit_argv) and list(unit_argv) != argv}
    if not unit_argv:
        raise UnitCommandError("the unit has no ExecStart to keep: set sglang_service_command or sglang_service_args")
    m = _VENV_BIN.match(unit_argv[0])
    if not m or not unit_in_venv:
        raise UnitCommandError(
            "the unit's ExecStart starts with %r, not a venv's bin/python or console script, so it cannot be moved to the "
            "managed venv: set sglang_service_command" % unit_argv[0]
        )
    exe = "python" if _PYTHON.match(m.group("exe")) else m.group("exe")
    argv = [posixpath.join(str(venv).rstrip("/"), "bin", exe), *unit_argv[1:]]
    return {"argv": argv, "source": "unit", "old": unit_argv, "replaced": False}


def flag_value(argv, flag):
    """The value of `--flag V` or `--flag=V` in a command line (the last one wins, as argparse does), or None."""
    value = None
    for i, word in enumerate(argv or []):
        if word == flag and i + 1 < len(argv):
            value = argv[i + 1]
        elif word.startswith(flag + "="):
            value = word[len(flag) + 1 :]
    return value


_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def resolve(word, env, spec=None, flag=""):
    """A word of a kept ExecStart as systemd will pass it: specifiers (spec) and ${VAR}/$VAR from env (the plain
    values the unit's files set). A variable that is not known here raises UnitCommandError naming it."""
    word = expand(word, spec or {"%": "%"})

    def one(m):
        name = m.group(1) or m.group(2)
        if name not in env or env[name] is None:
            raise UnitCommandError(
                "the unit's ExecStart gives %s %s, and %s is not set by an Environment= of the unit's files (or is in an "
                "EnvironmentFile= the role does not show), so the role cannot tell where it listens: give a literal %s, "
                "or set sglang_service_command" % (flag, word, name, flag or "value")
            )
        return str(env[name])

    return _VARIABLE.sub(one, word.replace("$$", "\0")).replace("\0", "$")


def listen(argv, host, port, env=None, spec=None):
    """Where a kept command serves: its own --host/--port (SGLang's flags) over the variables' host and port, with the
    unit's specifiers and variables resolved (resolve)."""
    env = env or {}
    got_host, got_port = flag_value(argv, "--host"), flag_value(argv, "--port")
    got_host = resolve(got_host, env, spec, "--host") if got_host else host
    got_port = resolve(got_port, env, spec, "--port") if got_port else port
    try:
        return {"host": got_host, "port": int(got_port)}
    except (TypeError, ValueError) as exc:
        raise UnitCommandError("the unit's ExecStart gives --port %s, not a port number" % got_port) from exc


def in_venv(unit_venv_dir, pyvenv_cfg_exists, dir_exists):
    """Whether the unit's interpreter can be moved: its directory is a venv (pyvenv.cfg), or it is gone (a venv the
    operator removed after the role took over). A directory that exists without pyvenv.cfg (/usr, /usr/local, a
    conda prefix) is not a venv, so its interpreter is not the service's to move."""
    return bool(unit_venv_dir) and (pyvenv_cfg_exists or not dir_exists)


SHOW_PROPERTIES = ("LoadState", "User", "FragmentPath", "DropInPaths", "UnitFileState", "ActiveState")


class UnitReadError(Exception):
    """A unit that cannot be read: msg, and what was read so far (rc/stdout/stderr of a failed command)."""

    def __init__(self, msg, result):
        super().__init__(msg)
        self.msg = msg
        self.result = result


def env_file_contents(pattern, glob_paths, read_text, shown=SHOWN_KEYS, digest=plain_digest):
    """({key: {value, digest}}, found, paths) of one EnvironmentFile= value as systemd loads it: a glob's matches in
    order, later files over earlier ones; found is false when no file matched or could be read; paths: those read."""
    out, found, paths = {}, False, []
    for path in glob_paths(pattern):
        try:
            out.update(read_env_file(read_text(path), shown, digest))
            found = True
            paths.append(path)
        except OSError:
            continue
    return out, found, paths


def writable_by_others(st):
    """Whether a file with this os.stat result may be written by an account other than root: owned by another user,
    writable by its group (unless that is root's group) or by everyone."""
    return st.st_uid != 0 or bool(st.st_mode & 0o002) or (bool(st.st_mode & 0o020) and st.st_gid != 0)


def _glob(pattern):
    return sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]


def read(
    run,
    unit,
    venv,
    exclude=(),
    command=(),
    host="127.0.0.1",
    port=30000,
    keep=True,
    exists=None,
    is_dir=None,
    read_text=None,
    glob_paths=None,
    host_ids=None,
    show=(),
    digest=plain_digest,
    stat=None,
):
    """The unit as systemd and its files say, and the command the role's drop-in gives it.

    run(argv) -> commands.CommandResult; exists/is_dir/read_text/glob_paths/stat default to the host's filesystem;
    host_ids: the host's %H, %m and %b ({H, m, b}), read from the host when not given. show: further keys whose values
    an environment file shows (those the role sets: its own are public in its drop-in), beside SHOWN_KEYS; digest: how
    the other values are digested (keyed_digest on a host). `writable_env_files`: the environment files that an account
    other than root may write (dropin_refusal)."""
    stat = stat or os.stat
    shown = SHOWN_KEYS | frozenset(str(k) for k in show or ())
    host_ids = host_ids if host_ids is not None else _host_ids(read_text or _read_text)
    exists = exists or os.path.exists
    is_dir = is_dir or os.path.isdir
    read_text = read_text or _read_text
    argv = ["systemctl", "show", unit]
    for prop in SHOW_PROPERTIES:
        argv += ["-p", prop]
    res = run(argv)
    if not res.ok:
        raise UnitReadError("systemctl show %s failed" % unit, res.as_dict())
    props = systemd_env.show_props(res.stdout)
    excluded = {posixpath.normpath(x) for x in exclude}
    paths = [props.get("FragmentPath", ""), *props.get("DropInPaths", "").split()]
    paths = [x for x in paths if x and posixpath.normpath(x) not in excluded]
    result = {
        "load_state": props.get("LoadState", ""),
        "unit_file_state": props.get("UnitFileState", ""),
        "active_state": props.get("ActiveState", ""),
        "user": props.get("User", ""),
        "files": paths,
    }
    variables = {"host": host, "port": port}
    if result["load_state"] != "loaded":  # nothing to read; the caller refuses a drop-in for a unit that is not there
        result.update(unit_argv=None, set_by=None, argv=list(command), source="variables" if command else "none", old=None, replaced=False)
        result.update(listen=variables, environment_steps=[], environment_files={}, missing_env_files=[], writable_env_files=[])
        return result
    files = []
    for path in paths:
        try:
            files.append((path, read_text(path)))
        except OSError as exc:
            raise UnitReadError("cannot read %s of %s: %s" % (path, unit, exc), result) from exc
    try:
        unit_argv, set_by = exec_start(files)
    except UnitCommandError as exc:
        raise UnitReadError("%s: %s" % (unit, exc), result) from exc
    result.update(unit_argv=unit_argv, set_by=set_by)
    # what the other files do to the environment and command the role's drop-in sets (environment_conflicts decides)
    steps = environment_steps(files, props.get("FragmentPath", ""), sorted(excluded)[0] if excluded else None, specifiers(unit, host_ids))
    env_files, missing, writable = {}, [], []
    for step in steps:
        if step["kind"] != "env_file" or step["key"] in env_files:
            continue
        env_files[step["key"]], found, read_paths = env_file_contents(step["key"], glob_paths or _glob, read_text, shown, digest)
        if not found and not step["value"]:
            missing.append({"path": step["key"], "file": step["file"]})
        for path in read_paths:
            try:
                if writable_by_others(stat(path)):
                    writable.append({"path": path, "file": step["file"]})
            except OSError:
                continue
    result.update(environment_steps=steps, environment_files=env_files, missing_env_files=missing, writable_env_files=writable)
    if not command and not keep:
        result.update(argv=[], source="none", old=unit_argv, replaced=False, listen=variables)
        return result
    venv_dir = unit_venv(unit_argv)
    movable = in_venv(venv_dir, bool(venv_dir) and exists(posixpath.join(venv_dir, "pyvenv.cfg")), bool(venv_dir) and is_dir(venv_dir))
    try:
        chosen = dropin_command(unit_argv, venv, list(command) or None, movable)
    except UnitCommandError as exc:
        raise UnitReadError("%s: %s" % (unit, exc), result) from exc
    result.update(chosen)
    try:
        known = {k: (got or {}).get("value") for k, (got, _src) in _merge(steps, {}, env_files).items()}
        result["listen"] = listen(chosen["argv"], host, port, known, specifiers(unit, host_ids)) if chosen["source"] == "unit" else variables
    except UnitCommandError as exc:
        raise UnitReadError("%s: %s" % (unit, exc), result) from exc
    return result


def _host_ids(read_text):
    """The host's %H %m %b: its hostname, machine id and boot id ('' when one cannot be read)."""

    def first_line(path):
        try:
            return read_text(path).strip()
        except OSError:
            return ""

    return {
        "H": first_line("/proc/sys/kernel/hostname"),
        "m": first_line("/etc/machine-id"),
        "b": first_line("/proc/sys/kernel/random/boot_id").replace("-", ""),
    }


def _read_text(path):
    with open(path, encoding="utf-8", errors="replace") as fh:
        return fh.read()


def dropin_refusal(unit, mode, name):
    """'' unless the unit cannot be started as it is, or not safely: sglang_service_mode=dropin finds no unit to go into
    (systemd's LoadState is not loaded), a file of the unit requires an EnvironmentFile= that is not there (systemd would
    refuse to start the unit: "unavailable resources", and a restart would stop the serving process for nothing), or an
    EnvironmentFile= that an account other than root may write (its loader, compiler and interpreter variables would
    reach what the role runs as root). The refusal names the unit, the file and what to do."""
    unit = unit or {}
    load_state = unit.get("load_state")
    if mode == "dropin" and load_state != "loaded":
        return (
            "sglang_service_mode=dropin needs an existing %s.service (sglang_service_name); systemd says: LoadState=%s. "
            "Use sglang_service_mode=unit to let the role own the unit." % (name, load_state)
        )
    missing = unit.get("missing_env_files") or []
    if missing:
        files, one = _env_files_named(missing)
        return (
            "%s.service requires %s, which %s not there: systemd would refuse to start it (unavailable resources), so "
            "nothing is changed or restarted. Create %s, or mark it optional with EnvironmentFile=-PATH."
            % (name, files, "is" if one else "are", "it" if one else "them")
        )
    writable = unit.get("writable_env_files") or []
    if writable:
        files, one = _env_files_named(writable)
        return (
            "%s.service takes its environment from %s, which an account other than root may write: its values reach "
            "the compiler and Python the role runs as root (LD_PRELOAD, NVCC_PREPEND_FLAGS, PYTHONPATH), so nothing is "
            "changed or restarted. Make %s root's, not group- or world-writable (chown root: and chmod go-w)." % (name, files, "it" if one else "them")
        )
    return ""


def _env_files_named(entries):
    """('EnvironmentFile=PATH (set in FILE); ...', whether there is one) of read()'s missing or writable files."""
    return "; ".join("EnvironmentFile=%s (set in %s)" % (e["path"], e["file"]) for e in entries), len(entries) == 1


def api_key_given(argv):
    """Whether the command gives SGLang an API key (--api-key KEY or --api-key=KEY; a ${VAR} from the unit's
    environment counts: systemd puts the value in)."""
    return any(str(w) == "--api-key" or str(w).startswith("--api-key=") for w in argv or [])


def loopback(host):
    """Whether an address the service binds is reachable from this host only (127.0.0.0/8, ::1, localhost)."""
    host = str(host or "").strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name: it may resolve to an address others reach


def exposure(argv, listen):
    """'' unless the service serves on an address others may reach with no API key: then why, with the fix (issue 58
    item 6; the play warns, or refuses with sglang_service_require_api_key)."""
    listen = listen or {}
    host = str(listen.get("host") or "")
    if not argv or loopback(host) or api_key_given(argv):
        return ""
    return (
        "it serves on %s:%s with no API key (no --api-key in its command): anyone who reaches that address may run the "
        "model. Give the command --api-key (its value from the vault, through sglang_service_secret_environment, e.g. "
        "--api-key ${SGLANG_API_KEY} in the unit's own ExecStart), or bind sglang_service_host to 127.0.0.1 behind a proxy; "
        "sglang_service_require_api_key: true refuses such a host." % (host, listen.get("port"))
    )
