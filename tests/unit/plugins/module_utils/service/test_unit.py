"""The unit's own command, read from its files, and the drop-in's command (flags kept, interpreter moved)."""

import hashlib
import json
import os

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.service import unit as uc

# ct200's unit as the seeds found it (molecule/default/templates/sglang-k26.service.j2 is the lab's copy)
CT200 = """# ct200's unit before blackwell.inference
[Unit]
Description=SGLang serving Kimi-K2.6
After=network-online.target

[Service]
Type=simple
Environment=PATH=/usr/local/cuda/bin:/root/venv_sglang211/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ExecStart=/root/venv_sglang211/bin/python -m sglang.launch_server --model-path /models/Kimi-K2.6 \\
    --tp 8 --attention-backend triton --sampling-backend flashinfer --host 0.0.0.0 --port 30000
Restart=no

[Install]
WantedBy=multi-user.target
"""
CT200_ARGV = [
    "/root/venv_sglang211/bin/python",
    "-m",
    "sglang.launch_server",
    "--model-path",
    "/models/Kimi-K2.6",
    "--tp",
    "8",
    "--attention-backend",
    "triton",
    "--sampling-backend",
    "flashinfer",
    "--host",
    "0.0.0.0",  # noqa: S104 - ct200's unit as written
    "--port",
    "30000",
]
# a drop-in that resets ExecStart and sets an EAGLE-3 one, quoted the way the role's own drop-in quotes
EAGLE = """[Service]
ExecStart=
ExecStart="/opt/eagle/bin/python" "-m" "sglang.launch_server" "--speculative-algorithm" "EAGLE3" "--chat-template" "a b\\"c"
"""


def test_exec_start_of_ct200_unit_with_a_continuation_line():
    assert uc.exec_start([("/etc/systemd/system/sglang-k26.service", CT200)]) == (CT200_ARGV, "/etc/systemd/system/sglang-k26.service")


def test_a_later_drop_in_resets_and_wins():
    argv, src = uc.exec_start([("/u", CT200), ("/u.d/10-eagle.conf", EAGLE)])
    assert src == "/u.d/10-eagle.conf"
    assert argv == ["/opt/eagle/bin/python", "-m", "sglang.launch_server", "--speculative-algorithm", "EAGLE3", "--chat-template", 'a b"c']


def test_reset_alone_leaves_none_and_other_sections_are_ignored():
    assert uc.exec_start([("/u", CT200), ("/d", "[Service]\nExecStart=\n")]) == (None, "/d")
    assert uc.exec_start([("/u", "[Unit]\nExecStart=/bin/false\n")]) == (None, None)


@pytest.mark.parametrize(
    "value,words",
    [
        ("-/usr/bin/python3 -m x", ["/usr/bin/python3", "-m", "x"]),  # prefixes are not part of the path
        ("/bin/sh -c 'echo $$HOME %%h'", ["/bin/sh", "-c", "echo $$HOME %%h"]),  # no expansion here
        ('/x "" y', ["/x", "", "y"]),
        ("/x a\\ttab", ["/x", "a\ttab"]),
    ],
)
def test_split_words(value, words):
    assert uc.split_words(value.lstrip(uc._PREFIXES)) == words


def test_unterminated_quote_is_an_error():
    with pytest.raises(uc.UnitCommandError, match="unterminated"):
        uc.split_words('/x "open')


def test_dropin_keeps_the_units_flags_and_moves_the_interpreter():
    out = uc.dropin_command(CT200_ARGV, "/opt/sglang/current")
    assert out == {"argv": ["/opt/sglang/current/bin/python", *CT200_ARGV[1:]], "source": "unit", "old": CT200_ARGV, "replaced": False}
    # python3.11 and a console script move by name
    assert uc.dropin_command(["/srv/v/bin/python3.11", "-m", "sglang.launch_server"], "/opt/sglang/current")["argv"][0] == "/opt/sglang/current/bin/python"
    assert uc.dropin_command(["/srv/v/bin/sglang", "serve"], "/opt/sglang/current/")["argv"] == ["/opt/sglang/current/bin/sglang", "serve"]


def test_the_variables_command_wins_and_says_it_replaced_the_units():
    mine = ["/opt/sglang/current/bin/python", "-m", "sglang.launch_server", "--model-path", "/models/K", "--tp", "4"]
    out = uc.dropin_command(CT200_ARGV, "/opt/sglang/current", mine)
    assert out == {"argv": mine, "source": "variables", "old": CT200_ARGV, "replaced": True}
    assert uc.dropin_command(mine, "/opt/sglang/current", mine)["replaced"] is False  # the unit already runs it
    assert uc.dropin_command(None, "/opt/sglang/current", mine)["replaced"] is False


@pytest.mark.parametrize(
    "argv,match",
    [
        (None, "no ExecStart to keep: set sglang_service_command or sglang_service_args"),
        (["run-sglang"], "not a venv's bin/python"),
        (["/usr/local/bin/run-sglang.sh"], "not a venv's bin/python"),  # /usr/local has no pyvenv.cfg
    ],
)
def test_a_command_that_cannot_be_kept_names_the_variable(argv, match):
    with pytest.raises(uc.UnitCommandError, match=match):
        uc.dropin_command(argv, "/opt/sglang/current", unit_in_venv=uc.unit_venv(argv) not in (None, "/usr/local"))


def test_unit_venv():
    assert uc.unit_venv(CT200_ARGV) == "/root/venv_sglang211"
    assert uc.unit_venv(["python3", "-m", "x"]) is None and uc.unit_venv(None) is None


SEED_ARGV = [
    "/root/venv_sglang211/bin/python",
    "-m",
    "sglang.launch_server",
    "--model-path",
    "/models/Kimi-K2.6",
    "--tp",
    "8",
    "--host",
    "0.0.0.0",  # noqa: S104 - the seeds' unit as written
    "--port",
    "30000",
]


@pytest.mark.parametrize(
    "argv,flag,value",
    [
        (SEED_ARGV, "--port", "30000"),
        (SEED_ARGV, "--tp", "8"),
        (SEED_ARGV, "--attention-backend", None),
        (["python", "--port=31000"], "--port", "31000"),
        (["python", "--port", "1", "--port=2"], "--port", "2"),  # the last one wins, as in argparse
        (["python", "--port"], "--port", None),
        ([], "--port", None),
    ],
)
def test_flag_value(argv, flag, value):
    assert uc.flag_value(argv, flag) == value


ALL = "0.0.0.0"  # noqa: S104 - what the seeds' unit serves on


def test_listen_prefers_the_kept_commands_own_flags():
    assert uc.listen(SEED_ARGV, "127.0.0.1", 8000) == {"host": ALL, "port": 30000}
    assert uc.listen(["/opt/sglang/current/bin/python", "-m", "sglang.launch_server"], "10.0.0.5", 30001) == {"host": "10.0.0.5", "port": 30001}


@pytest.mark.parametrize(
    "venv_dir,cfg,exists,movable",
    [
        ("/root/venv_sglang211", True, True, True),
        ("/root/venv_sglang211", False, False, True),  # removed after the role took over: it was the unit's venv
        ("/usr", False, True, False),  # /usr/bin/python3 is the system's, not a venv's
        (None, False, False, False),
    ],
)
def test_in_venv(venv_dir, cfg, exists, movable):
    assert uc.in_venv(venv_dir, cfg, exists) is movable


# `systemctl show sglang-k26.service -p LoadState -p User -p FragmentPath -p DropInPaths -p UnitFileState -p ActiveState`
# on the lab's ct200 with the role's drop-in in place (systemd prints them in its own order)
SHOW_CT200 = """LoadState=loaded
User=
FragmentPath=/etc/systemd/system/sglang-k26.service
DropInPaths=/etc/systemd/system/sglang-k26.service.d/50-blackwell-inference.conf
UnitFileState=enabled
ActiveState=active
"""
SHOW_MISSING = """LoadState=not-found
User=
FragmentPath=
DropInPaths=
UnitFileState=
ActiveState=inactive
"""
DROPIN = "/etc/systemd/system/sglang-k26.service.d/50-blackwell-inference.conf"


class _Res:
    def __init__(self, rc, stdout, stderr=""):
        self.rc, self.stdout, self.stderr = rc, stdout, stderr

    @property
    def ok(self):
        return self.rc == 0

    def as_dict(self):
        return {"rc": self.rc, "stdout": self.stdout, "stderr": self.stderr}


def _read(show, files=None, rc=0, **kw):
    calls = []

    def run(argv):
        calls.append(argv)
        return _Res(rc, show, "" if rc == 0 else "Failed to connect to bus")

    files = files or {}

    def read_text(path):
        if path not in files:
            raise FileNotFoundError(2, "No such file or directory", path)
        return files[path]

    kw.setdefault("exclude", [DROPIN])
    result = uc.read(run, "sglang-k26.service", "/opt/sglang/current", exists=lambda p: True, is_dir=lambda p: True, read_text=read_text, **kw)
    return result, calls


def test_read_keeps_the_units_flags_leaves_the_roles_drop_in_out_and_asks_systemd_once():
    result, calls = _read(SHOW_CT200, {"/etc/systemd/system/sglang-k26.service": CT200})
    assert len(calls) == 1 and calls[0][:3] == ["systemctl", "show", "sglang-k26.service"]
    assert result["files"] == ["/etc/systemd/system/sglang-k26.service"]
    assert (result["load_state"], result["unit_file_state"], result["active_state"]) == ("loaded", "enabled", "active")
    assert result["source"] == "unit" and result["argv"][0] == "/opt/sglang/current/bin/python" and result["argv"][1:] == CT200_ARGV[1:]
    assert result["listen"] == {"host": "0.0.0.0", "port": 30000}  # noqa: S104 - the unit's own flags


def test_read_of_a_unit_that_is_not_there_takes_the_variables_command():
    result, calls = _read(SHOW_MISSING, command=["/opt/sglang/current/bin/python", "-m", "sglang.launch_server"], port=30001)
    assert result["load_state"] == "not-found" and result["unit_argv"] is None
    assert result["source"] == "variables" and result["listen"] == {"host": "127.0.0.1", "port": 30001}
    assert len(calls) == 1


def test_read_without_keep_or_command_runs_nothing_and_shows_the_old_one():
    result, calls = _read(SHOW_CT200, {"/etc/systemd/system/sglang-k26.service": CT200}, keep=False)
    assert len(calls) == 1
    assert result["argv"] == [] and result["source"] == "none" and result["old"] == CT200_ARGV


@pytest.mark.parametrize(
    ("rc", "files", "match"),
    [
        (1, {}, "systemctl show sglang-k26.service failed"),
        (0, {}, "cannot read /etc/systemd/system/sglang-k26.service of sglang-k26.service"),
    ],
)
def test_read_failures_carry_what_was_read(rc, files, match):
    with pytest.raises(uc.UnitReadError, match=match) as err:
        _read(SHOW_CT200, files, rc=rc)
    assert ("rc" in err.value.result) == (rc != 0)


# An operator's later drop-in, as found on the lab ct200 (issue 45): 12.8 back on PATH and in CUDA_HOME.
LOCAL = "/etc/systemd/system/sglang-k26.service.d/90-local.conf"
LOCAL_128 = """[Service]
Environment=PATH=/usr/local/cuda-12.8/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
Environment=CUDA_HOME=/usr/local/cuda-12.8
"""
ROLE_ENV = {
    "CUDA_HOME": "/usr/local/cuda-13.0",
    "PATH": "/usr/local/cuda-13.0/bin:/opt/sglang/current/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "FLASHINFER_CUDA_ARCH_LIST": "12.0f",
    "NCCL_DEBUG": "WARN",
}
UNIT = "/etc/systemd/system/sglang-k26.service"


def _show(*dropins):
    return SHOW_CT200.replace("DropInPaths=" + DROPIN, "DropInPaths=" + " ".join(sorted([DROPIN, *dropins], key=lambda p: p.rsplit("/", 1)[1])))


def _conflicts(dropins, env_files=None, own_exec="dropin", env=None):
    files = {UNIT: CT200, **dropins, **(env_files or {})}
    result, _calls = _read(_show(*dropins), files)
    return uc.environment_conflicts(result["environment_steps"], ROLE_ENV if env is None else env, result["environment_files"], own_exec)


@pytest.mark.parametrize(
    ("dropins", "env_files", "own_exec", "expected"),
    [
        # the unit's own PATH (its fragment) comes before the role's drop-in: the role's wins
        ({}, None, "dropin", []),
        (
            {LOCAL: LOCAL_128},
            None,
            "dropin",
            [
                LOCAL + " sets CUDA_HOME=/usr/local/cuda-12.8 (the role sets CUDA_HOME=/usr/local/cuda-13.0)",
                LOCAL
                + " sets PATH=/usr/local/cuda-12.8/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin (the role sets PATH="
                + ROLE_ENV["PATH"]
                + ")",
            ],
        ),
        # a drop-in whose name sorts before the role's is overridden by it
        ({"/etc/systemd/system/sglang-k26.service.d/10-local.conf": LOCAL_128}, None, "dropin", []),
        # the same value as the role's is no conflict
        ({LOCAL: '[Service]\nEnvironment="CUDA_HOME=/usr/local/cuda-13.0" NCCL_DEBUG=WARN\n'}, None, "dropin", []),
        # a reset after the role's drop-in drops every key; a key set again after it stands
        (
            {LOCAL: "[Service]\nEnvironment=\nEnvironment=CUDA_HOME=/usr/local/cuda-13.0\n"},
            None,
            "dropin",
            [LOCAL + " resets Environment= (the role sets %s=%s)" % (k, ROLE_ENV[k]) for k in ("FLASHINFER_CUDA_ARCH_LIST", "NCCL_DEBUG", "PATH")],
        ),
        # an EnvironmentFile= overrides every Environment=, even from the unit's own file; a secret's value is not shown
        (
            {"/etc/systemd/system/sglang-k26.service.d/10-env.conf": "[Service]\nEnvironmentFile=-/etc/default/sglang\n"},
            {"/etc/default/sglang": "# site settings\nCUDA_HOME=/usr/local/cuda-12.8\nNCCL_DEBUG=INFO\nHF_TOKEN=hf_secret\n"},
            "dropin",
            [
                "/etc/default/sglang (EnvironmentFile= of /etc/systemd/system/sglang-k26.service.d/10-env.conf) sets "
                "CUDA_HOME=/usr/local/cuda-12.8 (the role sets CUDA_HOME=/usr/local/cuda-13.0)",
                "/etc/default/sglang (EnvironmentFile= of /etc/systemd/system/sglang-k26.service.d/10-env.conf) sets "
                "NCCL_DEBUG (value not shown) (the role sets NCCL_DEBUG=WARN)",
            ],
        ),
        # an environment file that repeats the role's values, or a missing optional one, changes nothing
        (
            {"/etc/systemd/system/sglang-k26.service.d/10-env.conf": "[Service]\nEnvironmentFile=-/etc/default/sglang\nEnvironmentFile=-/etc/default/none\n"},
            {"/etc/default/sglang": "export NCCL_DEBUG='WARN'\nHF_TOKEN=hf_secret\n"},
            "dropin",
            [],
        ),
        # UnsetEnvironment= applies last, wherever it is written
        (
            {"/etc/systemd/system/sglang-k26.service.d/10-unset.conf": "[Service]\nUnsetEnvironment=FLASHINFER_CUDA_ARCH_LIST NCCL_DEBUG=INFO\n"},
            None,
            "dropin",
            ["/etc/systemd/system/sglang-k26.service.d/10-unset.conf unsets FLASHINFER_CUDA_ARCH_LIST (the role sets FLASHINFER_CUDA_ARCH_LIST=12.0f)"],
        ),
        # a later ExecStart= replaces the drop-in's command (the old venv back); an earlier one is what the role moves
        (
            {LOCAL: "[Service]\nExecStart=\nExecStart=/root/venv_sglang211/bin/python -m sglang.launch_server\n"},
            None,
            "dropin",
            [
                LOCAL + " sets ExecStart= (the role's drop-in sets the service's command)",
                LOCAL + " sets ExecStart=/root/venv_sglang211/bin/python -m sglang.launch_server (the role's drop-in sets the service's command)",
            ],
        ),
        (
            {"/etc/systemd/system/sglang-k26.service.d/10-cmd.conf": "[Service]\nExecStart=\nExecStart=/root/venv_sglang211/bin/python -m x\n"},
            None,
            "dropin",
            [],
        ),
        (
            {"/etc/systemd/system/sglang-k26.service.d/10-cmd.conf": "[Service]\nExecStart=/root/venv_sglang211/bin/python -m x\n"},
            None,
            "unit",
            [
                "/etc/systemd/system/sglang-k26.service.d/10-cmd.conf sets ExecStart=/root/venv_sglang211/bin/python -m x "
                "(the role's unit sets the service's command)"
            ],
        ),
        # settings of another section are not the service's
        ({LOCAL: "[Unit]\nDescription=x\n[Install]\nEnvironment=CUDA_HOME=/usr/local/cuda-12.8\n"}, None, "dropin", []),
    ],
)
def test_environment_conflicts_name_the_file_that_overrides_the_role(dropins, env_files, own_exec, expected):
    assert _conflicts(dropins, env_files, own_exec) == expected


def test_environment_files_show_only_the_keys_cuda_and_flashinfer_read():
    files = {UNIT: CT200, "/etc/systemd/system/sglang-k26.service.d/10-env.conf": "[Service]\nEnvironmentFile=/etc/default/sglang\n"}
    files["/etc/default/sglang"] = "CUDA_HOME=/usr/local/cuda-12.8\nHF_TOKEN=hf_secret\n"
    result, _calls = _read(_show("/etc/systemd/system/sglang-k26.service.d/10-env.conf"), files)
    read = result["environment_files"]["/etc/default/sglang"]
    assert read["CUDA_HOME"]["value"] == "/usr/local/cuda-12.8"
    assert read["HF_TOKEN"]["value"] is None and "hf_secret" not in str(result)


def test_a_unit_that_is_not_there_has_no_steps():
    result, _calls = _read(SHOW_MISSING, command=["/opt/sglang/current/bin/python"])
    assert result["environment_steps"] == [] and result["environment_files"] == {}


def test_the_effective_environment_is_the_roles_with_what_the_other_files_add_and_hides_env_file_values():
    dropins = {
        "/etc/systemd/system/sglang-k26.service.d/10-site.conf": (
            "[Service]\nEnvironment=NCCL_P2P_DISABLE=1 CUDA_HOME=/usr/local/cuda-12.8\nEnvironmentFile=-/etc/default/sglang\n"
        ),
    }
    files = {UNIT: CT200, **dropins, "/etc/default/sglang": "HF_TOKEN=hf_secret\n"}
    result, _calls = _read(_show(*dropins), files)
    got = uc.effective_environment(result["environment_steps"], ROLE_ENV, result["environment_files"])
    assert {k: got[k] for k in ROLE_ENV} == ROLE_ENV  # the role's drop-in (50-) wins over the unit and 10-site.conf
    assert got["NCCL_P2P_DISABLE"] == "1" and got["HF_TOKEN"].startswith("sha256:") and "hf_secret" not in str(got)
    # the lab's ct200 unit alone: exactly the role's (its own PATH is overridden)
    result, _calls = _read(_show(), {UNIT: CT200})
    assert uc.effective_environment(result["environment_steps"], ROLE_ENV, result["environment_files"]) == ROLE_ENV


# -- issue 57 items 2, 8 and 10: the unit as systemd will run it ------------------------------------------------------
# The lab's template unit (issue 57 item 8): sglang@.service, whose EnvironmentFile=/etc/sglang/%i.env puts 12.8 first
# for the instance k26; a glob of site files; an `export` line systemd ignores; a port from the unit's environment.
TEMPLATE = "/etc/systemd/system/sglang@.service"
TEMPLATE_UNIT = """[Unit]
Description=SGLang %i

[Service]
Environment=PORT=30000
EnvironmentFile=/etc/sglang/%i.env
EnvironmentFile=-/etc/sglang/site.d/*.env
ExecStart=/root/venv_sglang211/bin/python -m sglang.launch_server --model-path /models/%i --host 127.0.0.1 --port ${PORT}
"""
SHOW_TEMPLATE = """LoadState=loaded
User=
FragmentPath=/etc/systemd/system/sglang@.service
DropInPaths=/etc/systemd/system/sglang@k26.service.d/50-blackwell-inference.conf
UnitFileState=enabled
ActiveState=active
"""
HOST_IDS = {"H": "ct200", "m": "0" * 32, "b": "1" * 32}


def _stat(uid=0, gid=0, mode=0o100644):
    return os.stat_result((mode, 0, 0, 1, uid, gid, 0, 0, 0, 0))


def _read_template(files, unit_text=TEMPLATE_UNIT, stats=None, **kw):
    files = dict(files, **{TEMPLATE: unit_text})
    stats = stats or {}

    def read_text(path):
        if path not in files:
            raise FileNotFoundError(2, "No such file or directory", path)
        return files[path]

    def glob_paths(pattern):
        import fnmatch

        return sorted(p for p in files if fnmatch.fnmatch(p, pattern)) if "*" in pattern else [pattern]

    return uc.read(
        lambda argv: _Res(0, SHOW_TEMPLATE),
        "sglang@k26.service",
        "/opt/sglang/current",
        exclude=["/etc/systemd/system/sglang@k26.service.d/50-blackwell-inference.conf"],
        exists=lambda p: True,
        is_dir=lambda p: True,
        read_text=read_text,
        glob_paths=glob_paths,
        host_ids=HOST_IDS,
        stat=lambda p: stats.get(p, _stat()),
        **kw,
    )


def test_specifiers_of_a_template_instance():
    spec = uc.specifiers("sglang-k26@a\\x2db-c.service", HOST_IDS)
    assert (spec["n"], spec["N"], spec["p"], spec["P"], spec["i"], spec["I"], spec["j"]) == (
        "sglang-k26@a\\x2db-c.service", "sglang-k26@a\\x2db-c", "sglang-k26", "sglang/k26", "a\\x2db-c", "a-b/c", "k26",
    )  # fmt: skip
    assert uc.expand("/etc/%p/%i.env %H %%i %q", spec) == "/etc/sglang-k26/a\\x2db-c.env ct200 %i %q"  # %q: not known, kept


def test_a_specifier_in_an_environment_file_names_the_file_systemd_reads():
    got = _read_template({"/etc/sglang/k26.env": "CUDA_HOME=/usr/local/cuda-12.8\nexport PATH=/usr/local/cuda-12.8/bin:/usr/bin\n"})
    assert [s["key"] for s in got["environment_steps"] if s["kind"] == "env_file"] == ["/etc/sglang/k26.env", "/etc/sglang/site.d/*.env"]
    assert got["environment_files"]["/etc/sglang/k26.env"]["CUDA_HOME"]["value"] == "/usr/local/cuda-12.8"
    assert "PATH" not in got["environment_files"]["/etc/sglang/k26.env"]  # an export line sets nothing in systemd
    assert got["missing_env_files"] == [] and uc.dropin_refusal(got, "dropin", "sglang@k26") == ""
    # what the role then says: the file that puts 12.8 back is named (service/plan.py foreign_refusal)
    found = uc.environment_conflicts(got["environment_steps"], ROLE_ENV, got["environment_files"], "dropin")
    assert any(f.startswith("/etc/sglang/k26.env (EnvironmentFile= of %s) sets CUDA_HOME=/usr/local/cuda-12.8" % TEMPLATE) for f in found), found


def test_a_glob_of_environment_files_is_read_in_order():
    got = _read_template(
        {
            "/etc/sglang/k26.env": "HF_HOME=/srv/hf\n",
            "/etc/sglang/site.d/10-a.env": "CUDA_HOME=/usr/local/cuda-12.8\n",
            "/etc/sglang/site.d/20-b.env": "CUDA_HOME=/usr/local/cuda-13.0\n",
        }
    )
    assert got["environment_files"]["/etc/sglang/site.d/*.env"]["CUDA_HOME"]["value"] == "/usr/local/cuda-13.0"  # the later file wins


def test_a_required_environment_file_that_is_gone_refuses_before_any_change():
    got = _read_template({})  # /etc/sglang/k26.env gone; the optional glob matching nothing is fine
    assert got["missing_env_files"] == [{"path": "/etc/sglang/k26.env", "file": TEMPLATE}]
    why = uc.dropin_refusal(got, "dropin", "sglang@k26")
    assert why.startswith("sglang@k26.service requires EnvironmentFile=/etc/sglang/k26.env (set in %s), which is not there" % TEMPLATE), why
    assert "unavailable resources" in why and "EnvironmentFile=-PATH" in why
    assert uc.dropin_refusal(got, "unit", "sglang@k26") == why  # in both modes


def test_a_kept_command_listens_where_its_variables_and_specifiers_say():
    got = _read_template({"/etc/sglang/k26.env": ""})
    assert got["listen"] == {"host": "127.0.0.1", "port": 30000}  # ${PORT} from the unit's Environment=
    assert got["argv"][1:] == ["-m", "sglang.launch_server", "--model-path", "/models/%i", "--host", "127.0.0.1", "--port", "${PORT}"]  # verbatim
    assert uc.listen(["x", "--port", "%i"], "h", 1, {}, uc.specifiers("s@30001.service")) == {"host": "h", "port": 30001}
    assert uc.listen(["x", "--host", "a$$b"], "h", 1, {}) == {"host": "a$b", "port": 1}  # $$: a dollar, no variable


@pytest.mark.parametrize(
    ("unit_text", "match"),
    [
        # issue 57 item 10: a port from a variable the role cannot see is a message, not a ValueError traceback
        (TEMPLATE_UNIT.replace("Environment=PORT=30000\n", ""), r"gives --port \$\{PORT\}, and PORT is not set by an Environment="),
        (TEMPLATE_UNIT.replace("--port ${PORT}", "--port eighty"), "gives --port eighty, not a port number"),
    ],
)
def test_a_port_the_role_cannot_tell_is_refused_naming_it(unit_text, match):
    with pytest.raises(uc.UnitReadError, match=match):
        _read_template({"/etc/sglang/k26.env": ""}, unit_text)


# -- issue 58 items 1 and 2: an environment file others may write is refused; its values never plainly digested ------
KEY = bytes(range(32))


def test_values_not_shown_are_digested_under_the_hosts_key_never_plainly():
    token = "hf_PLANTEDtoken123"  # noqa: S105 - the planted token the test looks for
    digest = uc.keyed_digest(KEY)
    got = _read_template({"/etc/sglang/k26.env": "HF_TOKEN=%s\nHF_HOME=/srv/hf\n" % token}, show=["HF_HOME"], digest=digest)
    read = got["environment_files"]["/etc/sglang/k26.env"]
    assert read["HF_HOME"]["value"] == "/srv/hf"  # a key the role sets (show): compared by value
    assert read["HF_TOKEN"]["value"] is None and read["HF_TOKEN"]["digest"].startswith("hmac-sha256:")
    env = uc.effective_environment(got["environment_steps"], ROLE_ENV, got["environment_files"])
    text = json.dumps([got, env])
    plain = [token, hashlib.sha256(token.encode()).hexdigest(), hashlib.sha256(("HF_TOKEN=" + token).encode()).hexdigest()]
    assert not [p for p in plain if p in text]
    assert env["HF_TOKEN"] == read["HF_TOKEN"]["digest"]  # a changed token still changes what the validation vouches for
    assert uc.keyed_digest(KEY)("other") != env["HF_TOKEN"] and uc.keyed_digest(bytes(32))(token) != env["HF_TOKEN"]
    assert uc.keyed_digest(None)(token) == "hmac-sha256:no-key"  # no key yet (check mode before the first run)


@pytest.mark.parametrize(
    ("site_value", "shown", "conflict"),
    [
        ("/srv/hf", True, False),  # the role's own value, shown because the role sets the key: no conflict
        ("/srv/other", True, True),
        ("/srv/hf", False, True),  # hidden under a key: it cannot be shown to be the role's, so it is named
    ],
)
def test_a_key_the_role_sets_is_compared_by_value(site_value, shown, conflict):
    got = _read_template({"/etc/sglang/k26.env": "HF_HOME=%s\n" % site_value}, show=["HF_HOME"] if shown else [], digest=uc.keyed_digest(KEY))
    found = uc.environment_conflicts(got["environment_steps"], dict(ROLE_ENV, HF_HOME="/srv/hf"), got["environment_files"], "dropin")
    assert any("HF_HOME" in f for f in found) is conflict, found


@pytest.mark.parametrize(
    ("uid", "gid", "mode", "writable"),
    [
        (0, 0, 0o100644, False),
        (0, 0, 0o100600, False),
        (0, 0, 0o100664, False),  # root's group writes: root's alone
        (0, 998, 0o100640, False),  # the service's group reads it
        (0, 998, 0o100660, True),  # ... and may write it
        (998, 998, 0o100600, True),  # the service account's own file
        (0, 0, 0o100646, True),  # everyone may write
    ],
)
def test_writable_by_others(uid, gid, mode, writable):
    assert uc.writable_by_others(_stat(uid, gid, mode)) is writable


def test_an_environment_file_the_service_account_may_write_refuses_before_any_change():
    got = _read_template(
        {"/etc/sglang/k26.env": "NVCC_PREPEND_FLAGS=-ccbin=/tmp/x\n", "/etc/sglang/site.d/10-a.env": "HF_HOME=/srv\n"},
        stats={"/etc/sglang/site.d/10-a.env": _stat(uid=998, mode=0o100600)},
    )
    assert got["writable_env_files"] == [{"path": "/etc/sglang/site.d/10-a.env", "file": TEMPLATE}]
    why = uc.dropin_refusal(got, "unit", "sglang@k26")
    assert why.startswith("sglang@k26.service takes its environment from EnvironmentFile=/etc/sglang/site.d/10-a.env (set in %s)" % TEMPLATE), why
    assert "chmod go-w" in why and uc.dropin_refusal(got, "dropin", "sglang@k26") == why
    assert _read_template({"/etc/sglang/k26.env": ""})["writable_env_files"] == []


# -- issue 58 item 6: an open port with no key ------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("argv", "host", "open_"),
    [
        (SEED_ARGV, ALL, True),  # the seeds' unit: 0.0.0.0, no key
        ([*SEED_ARGV, "--api-key", "${SGLANG_API_KEY}"], ALL, False),  # the key from the unit's environment
        ([*SEED_ARGV, "--api-key=k"], ALL, False),
        (SEED_ARGV, "::", True),
        (SEED_ARGV, "10.0.0.5", True),
        (SEED_ARGV, "ct200.lab", True),  # a name may resolve to an address others reach
        (SEED_ARGV, "127.0.0.2", False),
        (SEED_ARGV, "::1", False),
        (SEED_ARGV, "[::1]", False),
        (SEED_ARGV, "localhost", False),
        ([], ALL, False),  # no command: nothing to judge
    ],
)
def test_exposure(argv, host, open_):
    why = uc.exposure(argv, {"host": host, "port": 30000})
    assert bool(why) is open_, why
    if open_:
        assert why.startswith("it serves on %s:30000 with no API key" % host) and "sglang_service_require_api_key" in why
