"""The round trip decides (issue 45 item 5): each nasty value, escaped by the same functions the role's templates use
(module_utils/service/settings.py, through the systemd_escape filter), is written into scratch units on the
lab host, systemd loads them (daemon-reload), and what systemd holds is read back and compared with the value.

- Scratch units bi-roundtrip-<n>.service (Type=oneshot, ExecStart=/bin/true, never started) and a drop-in each:
  Description=, Environment=, ExecStart= and, for the paths, ReadWritePaths= and EnvironmentFile=, read back with
  `systemctl show` (the project's systemd_env.parse_show and environment_files; the string lists Environment= and
  ReadWritePaths= with systemd_env.show_words, the inverse of systemd's own quoting, which parse_environment uses),
  ExecStart='s argv over D-Bus (`busctl --json`: systemd 252's
  `systemctl show` joins argv with spaces, unquoted).
- One unit that runs (bi-roundtrip-run.service, a python3 that writes its argv and environment to /run): a value
  in ExecStart= gets its $ back only when the command starts ($$ -> $), and an EnvironmentFile= is read only then.
  Its environment file is written as roles/sglang_service/tasks/units.yml writes the secrets file (KEY=to_json).
- The issue's value: refused by the escaping function and the variable check; written the old way, systemd reads
  the drop-in with a root ExecStartPre= (loaded only, never started).
"""

import base64
import json
import shlex

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.common import systemd as systemd_env
from ansible_collections.blackwell.inference.plugins.module_utils.service import plan as service_plan
from ansible_collections.blackwell.inference.plugins.module_utils.service import settings as ss

ATTACK = "x\rExecStartPre=+/bin/touch /var/tmp/p\r#"
# values systemd must read back exactly, in every setting that takes them
NASTY = ["%h", "%%", "$HOME", "${X}", "a b", '"q"', "'s'", "back\\slash", "semi;colon", "\u00fc", "trailing\\", "=x=y", "100% $$ 50%"]
TAB = "a\tb"  # kept inside the quotes of Environment= and ExecStart= words; refused elsewhere
# paths for ReadWritePaths= and EnvironmentFile=: a space and a % (and quotes, a backslash, beyond ASCII)
PATHS = ["/run/bi-roundtrip/a b/100%", "/run/bi-roundtrip/%h 's' \"q\"", "/run/bi-roundtrip/back\\slash/\u00fc"]
UNIT = "bi-roundtrip-%d.service"
RUN_UNIT = "bi-roundtrip-run.service"
DROPIN = "/etc/systemd/system/%s.d/50-values.conf"
OUT = "/run/bi-roundtrip.json"
ENV_FILE = PATHS[0] + "/secrets.env"
# what the running unit reports: its argv and the environment the test set
DUMP = (
    "import json, os, sys; "
    "json.dump({'argv': sys.argv[1:], 'env': {k: v for k, v in os.environ.items() if k.startswith(('V_', 'S_'))}}, "
    "open('" + OUT + "', 'w'))"
)


def _write(host, path, text):
    """A file on the lab host, byte for byte (base64 over SSH: no shell reads the nasty values)."""
    data = base64.b64encode(text.encode()).decode()
    res = host.run("mkdir -p %s && echo %s | base64 -d > %s" % (shlex.quote(path.rsplit("/", 1)[0]), data, shlex.quote(path)))
    assert res.rc == 0, res.stderr


def _environment(props):
    return dict(w.split("=", 1) for w in systemd_env.show_words(" ".join(props["Environment"])))


def _bus_path(unit):
    """systemd's D-Bus object path of a unit (bus_label_escape: [A-Za-z0-9] kept, every other byte _xx)."""
    return "/org/freedesktop/systemd1/unit/" + "".join(c if c.isascii() and c.isalnum() else "_%02x" % ord(c) for c in unit)


def _exec_argv(host, unit):
    """ExecStart='s argv of each command, as systemd holds it (before the $ expansion at start)."""
    res = host.run("busctl --json=short get-property org.freedesktop.systemd1 %s org.freedesktop.systemd1.Service ExecStart" % _bus_path(unit))
    assert res.rc == 0, res.stderr
    return [cmd[1] for cmd in json.loads(res.stdout)["data"]]


def _show(host, unit):
    res = host.run("systemctl show --no-pager -p Environment -p ExecStart -p Description -p ReadWritePaths -p EnvironmentFiles -p LoadState -- %s" % unit)
    assert res.rc == 0, res.stderr
    return systemd_env.parse_show(res.stdout)


def _dropin(values, paths=(), env_file=None, argv=None):
    lines = ["[Service]"]
    lines += ["Environment=" + ss.systemd_environment("V_%d" % i, v) for i, v in enumerate(values)]
    if paths:
        lines.append("ReadWritePaths=" + " ".join(ss.systemd_path(p) for p in paths))
    if env_file:
        lines.append("EnvironmentFile=" + ss.systemd_env_file_path(env_file))
    lines += ["ExecStart=", "ExecStart=" + ss.systemd_exec(argv or ["/bin/true", *values])]
    return "\n".join(lines) + "\n"


def _unit(description):
    return "[Unit]\nDescription=%s\n\n[Service]\nType=oneshot\nExecStart=/bin/true\n" % ss.systemd_description(description)


@pytest.fixture(scope="module")
def scratch(host):
    """The scratch units, loaded (daemon-reload) and removed at the end."""
    units = []

    def _add(unit, description, dropin):
        _write(host, "/etc/systemd/system/" + unit, _unit(description))
        _write(host, DROPIN % unit, dropin)
        units.append(unit)

    yield _add
    for unit in units:
        host.run("systemctl stop %s; rm -rf /etc/systemd/system/%s /etc/systemd/system/%s.d" % (unit, unit, unit))
    host.run("rm -rf /run/bi-roundtrip %s; systemctl daemon-reload" % OUT)


def _reload(host):
    res = host.run("systemctl daemon-reload")
    assert res.rc == 0, res.stderr


def test_the_attack_value_is_refused():
    with pytest.raises(ValueError, match=r"\(\\r at 1\), which systemd would read as a new line"):
        ss.systemd_environment("NCCL_DEBUG", ATTACK)
    with pytest.raises(ValueError, match="control character"):
        ss.systemd_quote("NCCL_DEBUG=" + ATTACK)
    (msg,) = service_plan.unit_value_refusals({"sglang_service_environment": {"NCCL_DEBUG": ATTACK}})
    assert msg.startswith("sglang_service_environment: NCCL_DEBUG holds a control character (\\r at 1)"), msg


def test_the_attack_value_written_the_old_way_gives_a_root_exec_start_pre(host, scratch):
    # what the role wrote before: the value quoted, \r left in (never started: loaded and shown only)
    old = '"NCCL_DEBUG=%s"' % ATTACK
    scratch("bi-roundtrip-attack.service", "attack", "[Service]\nEnvironment=%s\n" % old)
    _reload(host)
    shown = host.run("systemctl show --no-pager -p ExecStartPre -- bi-roundtrip-attack.service").stdout
    assert "/bin/touch" in shown and "/var/tmp/p" in shown, shown


@pytest.fixture(scope="module")
def loaded(host, scratch):
    """One unit per nasty value (Description=, Environment=, ExecStart=), one per path (also ReadWritePaths= and
    EnvironmentFile=), loaded."""
    for i, value in enumerate(NASTY):
        scratch(UNIT % i, "SGLang server (%s)" % value, _dropin([value]))
    scratch(UNIT % len(NASTY), "tab", _dropin([TAB]))
    for j, path in enumerate(PATHS):
        scratch(UNIT % (100 + j), "SGLang server (%s)" % path, _dropin([path], paths=[path, "/var/cache/sglang"], env_file=path + "/x.env"))
    _reload(host)
    return host


@pytest.mark.parametrize("i", range(len(NASTY)), ids=[repr(v) for v in NASTY])
def test_a_value_comes_back_exactly(loaded, i):
    value, unit = NASTY[i], UNIT % i
    props = _show(loaded, unit)
    assert props["LoadState"] == ["loaded"], props
    assert props["Description"] == ["SGLang server (%s)" % value]
    assert _environment(props) == {"V_0": value}
    # systemd holds $ doubled until the command starts (the running unit below shows the $ back)
    assert _exec_argv(loaded, unit) == [["/bin/true", value.replace("$", "$$")]]


def test_a_tab_comes_back_in_environment_and_exec_start(loaded):
    unit = UNIT % len(NASTY)
    assert _environment(_show(loaded, unit)) == {"V_0": TAB}
    assert _exec_argv(loaded, unit) == [["/bin/true", TAB]]
    for refuse in (ss.systemd_description, ss.systemd_path, ss.systemd_env_file_path):
        with pytest.raises(ValueError, match="control character"):
            refuse("/x" + TAB)


@pytest.mark.parametrize("j", range(len(PATHS)), ids=[repr(p) for p in PATHS])
def test_a_path_comes_back_exactly(loaded, j):
    path, unit = PATHS[j], UNIT % (100 + j)
    props = _show(loaded, unit)
    assert props["LoadState"] == ["loaded"], props
    assert props["Description"] == ["SGLang server (%s)" % path]
    assert systemd_env.show_words(" ".join(props["ReadWritePaths"])) == [path, "/var/cache/sglang"]
    assert systemd_env.environment_files(props["EnvironmentFiles"]) == [(path + "/x.env", False)]
    assert _environment(props) == {"V_0": path}
    assert _exec_argv(loaded, unit) == [["/bin/true", path]]


def test_what_systemd_would_change_is_refused():
    for refuse, value in [
        (ss.systemd_description, "SGLang server trailing\\"),  # joins the next line
        (ss.systemd_description, "trailing space "),  # stripped
        (ss.systemd_env_file_path, "/etc/x.env\\"),
        (ss.systemd_path, "/srv/../etc"),  # systemd refuses .. in a path
        (ss.systemd_exec, ["+/bin/sh"]),  # + runs it as root
    ]:
        with pytest.raises(ValueError):
            refuse(value)


def test_the_running_unit_gets_every_value_back(host, scratch):
    """The $ in ExecStart= and the environment file are only read when the command starts: one unit runs."""
    secrets = {"S_%d" % i: v for i, v in enumerate(NASTY)}
    # as roles/sglang_service/tasks/units.yml writes the secrets file: KEY={{ value | string | to_json }}
    # (Ansible's to_json: json.dumps, ASCII only)
    _write(host, ENV_FILE, "".join("%s=%s\n" % (k, json.dumps(v)) for k, v in sorted(secrets.items())))
    values = [*NASTY, TAB]
    scratch(RUN_UNIT, "run", _dropin(values, env_file=ENV_FILE, argv=["/usr/bin/python3", "-c", DUMP, *values]))
    _reload(host)
    res = host.run("systemctl start %s" % RUN_UNIT)
    assert res.rc == 0, res.stderr + host.run("journalctl -u %s --no-pager -n 20" % RUN_UNIT).stdout
    got = json.loads(host.file(OUT).content_string)
    assert got["argv"] == values
    assert {k: v for k, v in got["env"].items() if k.startswith("V_")} == {"V_%d" % i: v for i, v in enumerate(values)}
    ascii_only = {k: v for k, v in secrets.items() if v.isascii()}
    assert {k: v for k, v in got["env"].items() if k in ascii_only} == ascii_only
    # beyond ASCII, to_json writes \u00fc and systemd keeps it as written: that is why the variable check refuses it
    wide = {k: v for k, v in secrets.items() if not v.isascii()}
    assert wide and all(got["env"][k] == json.dumps(v)[1:-1] != v for k, v in wide.items())
    assert service_plan.unit_value_refusals({"sglang_service_secret_environment": wide})
