"""Pure parts of the service role: environment from facts, systemd quoting, verdict, marker, revalidation."""

import base64
import json
import os
import re

import jinja2
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.blackwell.inference.plugins.filter import sglang_service as service_filters
from ansible_collections.blackwell.inference.plugins.module_utils.cuda import devices
from ansible_collections.blackwell.inference.plugins.module_utils.service import plan as service_plan
from ansible_collections.blackwell.inference.plugins.module_utils.service import ready
from ansible_collections.blackwell.inference.plugins.module_utils.service import settings as ss
from ansible_collections.blackwell.inference.plugins.module_utils.service import unit as unit_command

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))))


@pytest.mark.parametrize(
    "archs,entry",
    [
        (["120f"], "12.0f"),
        (["120a"], "12.0a"),
        (["90a", "120f"], "9.0a 12.0f"),
        (["120f", "90a", "120f"], "9.0a 12.0f"),
        (["89", "80"], "8.0 8.9"),
        (["121a"], "12.1a"),
        (["103f", "100f"], "10.0f 10.3f"),
    ],
)
def test_arch_list_from_flashinfer_target_archs(archs, entry):
    assert ss.arch_list(archs) == entry


@pytest.mark.parametrize("bad", [["sm_120"], ["12.0a"], ["120x"], [""]])
def test_arch_list_refuses_other_spellings(bad):
    with pytest.raises(ValueError):
        ss.arch_list(bad)


def test_environment_from_facts():
    env = ss.environment("/usr/local/cuda-13.0", "/opt/sglang/current", "/var/cache/sglang", "12.0f", "/var/cache/sglang/jit.jsonl")
    assert env == {
        "CUDA_HOME": "/usr/local/cuda-13.0",
        "PATH": "/usr/local/cuda-13.0/bin:/opt/sglang/current/bin:" + ss.SYSTEM_PATH,
        "FLASHINFER_CUDA_ARCH_LIST": "12.0f",
        "FLASHINFER_WORKSPACE_BASE": "/var/cache/sglang",
        "SGLANG_CACHE_DIR": "/var/cache/sglang/sglang",
        "FLASHINFER_JIT_BUILD_LOG": "/var/cache/sglang/jit.jsonl",
    }
    assert "LD_LIBRARY_PATH" not in env  # only when asked


def test_environment_extras_and_ld_library_path():
    env = ss.environment("/usr/local/cuda-13.0/", "/v/", "/c", "12.0a", "", ["/opt/nccl/lib", "/x"], {"NCCL_DEBUG": "WARN", "N": 1})
    assert env["PATH"].startswith("/usr/local/cuda-13.0/bin:/v/bin:")
    assert env["LD_LIBRARY_PATH"] == "/opt/nccl/lib:/x"
    assert env["NCCL_DEBUG"] == "WARN" and env["N"] == "1"
    assert "FLASHINFER_JIT_BUILD_LOG" not in env


@pytest.mark.parametrize(
    "cache_dir, target, workspace",
    [
        ("/var/cache/sglang", "/opt/sglang/venvs/2c26817414e442ed", "/var/cache/sglang/jit/2c26817414e442ed"),
        ("/var/cache/sglang/", "/opt/sglang/venvs/9f0e1d2c3b4a5968/", "/var/cache/sglang/jit/9f0e1d2c3b4a5968"),
        ("/srv/cache", "/opt/k26-venv", "/srv/cache/jit/k26-venv"),  # a plain venv, no link
    ],
)
def test_each_venv_has_its_own_flashinfer_workspace(cache_dir, target, workspace):
    assert ss.workspace(cache_dir, target) == workspace
    env = ss.environment("/usr/local/cuda-13.0", "/opt/sglang/current", cache_dir, "12.0f", venv_target=target)
    assert env["FLASHINFER_WORKSPACE_BASE"] == workspace
    assert env["SGLANG_CACHE_DIR"] == cache_dir.rstrip("/") + "/sglang"  # SGLang's own cache stays shared


@pytest.mark.parametrize("target", ["", "/", None])
def test_a_venv_without_a_name_is_refused(target):
    with pytest.raises(ValueError, match="JIT workspace"):
        ss.workspace("/var/cache/sglang", target)


def _stat(path, exists):
    """One loop result of ansible.builtin.stat (follow: true) on a workspace's venv link, as Ansible returns it."""
    return {"item": path, "changed": False, "stat": {"exists": exists} if not exists else {"exists": True, "isdir": True, "path": path}}


def test_only_workspaces_whose_venv_is_gone_are_stale():
    results = [
        _stat("/var/cache/sglang/jit/aaaa/venv", True),  # the current venv
        _stat("/var/cache/sglang/jit/bbbb/venv", True),  # the last good one (kept by sglang_venv's prune)
        _stat("/var/cache/sglang/jit/cccc/venv", False),  # pruned
        _stat("/var/cache/sglang/jit/dddd/venv", False),  # pruned
        {"item": "/var/cache/sglang/jit/eeee/venv", "skipped": True},  # no stat result: not judged
    ]
    assert ss.stale_workspaces(results) == ["/var/cache/sglang/jit/cccc", "/var/cache/sglang/jit/dddd"]
    assert ss.stale_workspaces(results, ["/var/cache/sglang/jit/dddd/"]) == ["/var/cache/sglang/jit/cccc"]
    assert ss.stale_workspaces([]) == [] and ss.stale_workspaces(None) == []


def test_stale_workspaces_from_finds_dangling_links():
    # `find /var/cache/sglang/jit -mindepth 2 -maxdepth 2 -name venv -xtype l` after sglang_venv pruned two venvs
    found = "/var/cache/sglang/jit/cccc/venv\n/var/cache/sglang/jit/dddd/venv\n".splitlines()
    assert ss.stale_workspaces(found) == ["/var/cache/sglang/jit/cccc", "/var/cache/sglang/jit/dddd"]
    assert ss.stale_workspaces(found, ["/var/cache/sglang/jit/cccc"]) == ["/var/cache/sglang/jit/dddd"]
    assert ss.stale_workspaces(["", "  "]) == []


@pytest.mark.parametrize("key", ss.MANAGED_KEYS)
def test_environment_refuses_overriding_derived_keys(key):
    with pytest.raises(ValueError, match=key):
        ss.environment("/usr/local/cuda-13.0", "/v", "/c", "12.0a", extra={key: "x"})


def test_the_derived_keys_have_one_home():
    # the role's preflight asks service_plan.environment_refusal, which reads MANAGED_KEYS: no copy in the role
    with open(os.path.join(ROOT, "roles", "sglang_service", "vars", "main.yml")) as fh:
        assert "CUDA_HOME" not in fh.read()


@pytest.mark.parametrize(
    "word,exec_arg,quoted",
    [
        ("PATH=/usr/local/cuda-13.0/bin:/usr/bin", False, '"PATH=/usr/local/cuda-13.0/bin:/usr/bin"'),
        ('A=say "hi"', False, '"A=say \\"hi\\""'),
        ("A=100%", False, '"A=100%%"'),
        ("A=c:\\d", False, '"A=c:\\\\d"'),
        ("A=$HOME", False, '"A=$HOME"'),
        ("--flag=$HOME", True, '"--flag=$$HOME"'),
        ("/models/Kimi K2", True, '"/models/Kimi K2"'),
    ],
)
def test_systemd_quote(word, exec_arg, quoted):
    assert ss.systemd_quote(word, exec_arg) == quoted


def test_systemd_quote_refuses_newlines():
    with pytest.raises(ValueError):
        ss.systemd_quote("A=1\nExecStartPre=/bin/sh")


# issue 45: systemd's line reader ends a line at \r too, so this value gave the drop-in a root ExecStartPre=
ATTACK = "x\rExecStartPre=+/bin/touch /var/tmp/p\r#"
CONTROLS = ["\r", "\n", "\x00", "\x01", "\x0b", "\x0c", "\x1b", "\x1f", "\x7f"]


@pytest.mark.parametrize(
    "value,tab,found",
    [
        ("INFO", False, ""),
        ("a\tb", True, ""),
        ("\u00fc%$\\\"'", False, ""),
        (ATTACK, False, "holds a control character (\\r at 1), which systemd would read as a new line"),
        ("a\nb", False, "holds a control character (\\n at 1), which systemd would read as a new line"),
        ("ab\x00", True, "holds a control character (\\x00 at 2), which systemd would read as a new line"),
        ("a\tb", False, "holds a control character (\\t at 1), which systemd would not read back as written"),
        ("\x1b[31m", True, "holds a control character (\\x1b at 0), which systemd would not read back as written"),
        ("del\x7f", True, "holds a control character (\\x7f at 3), which systemd would not read back as written"),
    ],
)
def test_control_character(value, tab, found):
    assert ss.control_character(value, tab) == found


@pytest.mark.parametrize("char", CONTROLS)
@pytest.mark.parametrize(
    "escape",
    [
        lambda v: ss.systemd_quote("A=" + v),
        lambda v: ss.systemd_quote(v, True),
        lambda v: ss.systemd_environment("NCCL_DEBUG", v),
        lambda v: ss.systemd_exec(["/bin/true", v]),
        lambda v: ss.systemd_description("SGLang server (%s)" % v),
        lambda v: ss.systemd_path("/srv/a" + v),
        lambda v: ss.systemd_env_file_path("/etc/a" + v),
    ],
    ids=["quote", "quote-exec", "environment", "exec", "description", "path", "env-file-path"],
)
def test_every_escape_refuses_control_characters(escape, char):
    with pytest.raises(ValueError, match="control character"):
        escape("x" + char + "y")


def test_the_issue_45_value_is_refused_naming_the_key():
    with pytest.raises(ValueError, match=r"NCCL_DEBUG .* \(\\r at 1\), which systemd would read as a new line"):
        ss.systemd_environment("NCCL_DEBUG", ATTACK)


@pytest.mark.parametrize(
    "escape,value,written",
    [
        # Environment=: one quoted word; systemd unquotes, C-unescapes and expands specifiers (never $)
        (lambda v: ss.systemd_environment("X", v), "%h $HOME ${X}", '"X=%%h $HOME ${X}"'),
        (lambda v: ss.systemd_environment("X", v), "back\\slash\\", '"X=back\\\\slash\\\\"'),
        (lambda v: ss.systemd_environment("X", v), "\"q\" 's' a=b", '"X=\\"q\\" \'s\' a=b"'),
        (lambda v: ss.systemd_environment("X", v), "a\tb \u00fc", '"X=a\tb \u00fc"'),
        # ExecStart=: each word quoted; % and $ doubled (specifiers at load, variables at start)
        (lambda v: ss.systemd_exec(["/opt/v/bin/python", v]), "$HOME", '"/opt/v/bin/python" "$$HOME"'),
        (lambda v: ss.systemd_exec(["/opt/v/bin/python", v]), "semi;colon %%", '"/opt/v/bin/python" "semi;colon %%%%"'),
        (lambda v: ss.systemd_exec(["/opt/v/bin/python", v]), ";", '"/opt/v/bin/python" ";"'),
        # Description=: as written but for specifiers
        (ss.systemd_description, 'SGLang server (/m/"K2" 100% $X \\)', 'SGLang server (/m/"K2" 100%% $X \\)'),
        # ReadWritePaths=: one quoted word each; a backslash takes the next character as it is (no C escapes)
        (ss.systemd_path, "/var/cache/sglang", '"/var/cache/sglang"'),
        (ss.systemd_path, '/srv/a b/100%/"q"/x\\t', '"/srv/a b/100%%/\\"q\\"/x\\\\t"'),
        # EnvironmentFile=: the whole value is the path; only specifiers
        (ss.systemd_env_file_path, "/etc/a b/100%/\"q\" 's'", "/etc/a b/100%%/\"q\" 's'"),
    ],
)
def test_each_setting_escapes_what_systemd_unescapes_and_nothing_else(escape, value, written):
    assert escape(value) == written


@pytest.mark.parametrize(
    "escape,value",
    [
        (lambda v: ss.systemd_environment(v, "1"), "NOT-A-NAME"),
        (lambda v: ss.systemd_environment(v, "1"), "A=B"),
        (ss.systemd_exec, []),
        (ss.systemd_exec, [""]),
        (ss.systemd_exec, ["+/bin/sh", "-c", "id"]),  # + runs it as root: systemd reads the prefix after unquoting
        (ss.systemd_exec, ["-/bin/true"]),
        (ss.systemd_exec, ["/opt/$V/bin/python"]),
        (ss.systemd_description, "trailing backslash \\"),  # joins the next line
        (ss.systemd_description, " leading space"),
        (ss.systemd_description, "trailing space "),
        (ss.systemd_path, "relative/path"),
        (ss.systemd_path, "/srv/../etc"),
        (ss.systemd_env_file_path, "relative.env"),
        (ss.systemd_env_file_path, "/etc/x.env "),
        (ss.systemd_env_file_path, "/etc/x\\"),
    ],
)
def test_what_systemd_would_change_is_refused(escape, value):
    with pytest.raises(ValueError):
        escape(value)


def test_a_trailing_backslash_pair_stays():
    # an even run of backslashes at the end escapes itself: no continuation line
    assert ss.systemd_description("a\\\\") == "a\\\\"
    assert ss.systemd_env_file_path("/etc/a\\\\") == "/etc/a\\\\"


# values systemd must read back exactly (the lab's tests/lab/before/test_unit_values.py reads them back from systemd)
NASTY = ["%h", "%%", "$HOME", "${X}", "a b", '"q"', "'s'", "back\\slash", "semi;colon", "\u00fc", "trailing\\", "=x=y", "100% $$"]
NASTY_PATHS = ["/srv/a b/100%", "/srv/'s' \"q\"/x\\y", "/srv/%h/\u00fc"]
TEMPLATES = os.path.join(ROOT, "roles", "sglang_service", "templates")


def render(name, **overrides):
    """A template of the role rendered as Ansible does (trim_blocks), with the collection's filters."""
    env = jinja2.Environment(trim_blocks=True, undefined=jinja2.StrictUndefined, loader=jinja2.FileSystemLoader(TEMPLATES))  # noqa: S701 - a unit file
    env.filters.update({"blackwell.inference." + k: f for k, f in service_filters.FilterModule().filters().items()})
    env.filters.update(basename=os.path.basename, dirname=os.path.dirname)
    variables = {
        "ansible_managed": "Ansible managed",
        "sglang_service_mode": "dropin",
        "sglang_service_user": "sglang",
        "sglang_service_group": "sglang",
        "sglang_service_model_path": "/models/model",
        "sglang_service_cache_dir": "/var/cache/sglang",
        "sglang_service_secret_environment": {"HF_TOKEN": "x"},
        "sglang_service_smoke_timeout": 1800,
        "sglang_service_boot_validation": True,
        "sglang_service_textfile_dir": "",
        "__sglang_service_unit": "sglang.service",
        "__sglang_service_validate_unit": "sglang-validate.service",
        "__sglang_service_ready_unit": "sglang-ready.service",
        "__sglang_service_dropin_path": "/etc/systemd/system/sglang.service.d/50-blackwell-inference.conf",
        "__sglang_service_secrets_path": "/etc/blackwell-inference/sglang.secrets.env",
        "__sglang_service_libexec": "/usr/local/libexec/blackwell-inference",
        "__sglang_service_validate_config": "/etc/blackwell-inference/sglang-validate.json",
        "__sglang_service_marker_path": "/etc/ansible/facts.d/blackwell_inference.fact",
        "__sglang_service_versions": {"flashinfer-python": "0.7.4"},
        "__sglang_service_toolkit": {"cuda_version": "13.0"},
        "__sglang_service_archs": "12.0a",
        "__sglang_service_env": {"CUDA_HOME": "/usr/local/cuda-13.0"},
        "__sglang_service_command": ["/opt/sglang/current/bin/python", "-m", "sglang.launch_server"],
        "__sglang_service_plan": {"device_allow": devices.allow_entries("rw")},
    }
    variables.update(overrides)
    return env.get_template(name).render(**variables)


def read_back(text):
    """What systemd makes of the settings this role writes (unquoting as unit_command.split_words does, then the
    specifier and, in ExecStart=, the variable expansion of what the escaping doubled): {key: [values]}."""

    def spec(w):  # %% is a %, any other specifier is expanded (shown as <%h>)
        return re.sub(r"%(.)", lambda m: "%" if m.group(1) == "%" else "<%" + m.group(1) + ">", w)

    def var(w):  # $$ is a $, $X and ${X} are expanded when the command starts (shown as <$X>)
        return re.sub(r"\$(\$|\{[^}]*\}|[A-Za-z_][A-Za-z0-9_]*)", lambda m: "$" if m.group(1) == "$" else "<$" + m.group(1) + ">", w)

    got = {}
    for _section, key, value in unit_command.settings(text):
        if key == "Environment":
            (word,) = unit_command.split_words(value)
            got.setdefault(key, []).append(spec(word))
        elif key == "ExecStart" and value:
            got.setdefault(key, []).append([var(spec(w)) for w in unit_command.split_words(value)])
        elif key == "ReadWritePaths":
            got.setdefault(key, []).extend(spec(w) for w in unit_command.split_words(value))
        elif key in ("Description", "EnvironmentFile"):
            got.setdefault(key, []).append(spec(value))
    return got


def test_the_templates_give_the_nasty_values_back():
    env = {"V%d" % i: v for i, v in enumerate(NASTY)}
    command = ["/opt/sglang/current/bin/python", *NASTY]
    dropin = read_back(render("dropin.conf.j2", __sglang_service_env=env, __sglang_service_command=command, __sglang_service_secrets_path=NASTY_PATHS[0]))
    assert dropin["Environment"] == ["%s=%s" % kv for kv in sorted(env.items())]
    assert dropin["EnvironmentFile"] == [NASTY_PATHS[0]]
    assert dropin["ExecStart"] == [command]
    for path in NASTY_PATHS:
        unit = read_back(render("sglang.service.j2", sglang_service_model_path=path, sglang_service_cache_dir=path, __sglang_service_command=command))
        assert unit["Description"] == ["SGLang server (%s)" % path]
        assert unit["ReadWritePaths"] == [path]
        assert unit["ExecStart"] == [command]
        validate = read_back(render("validate.service.j2", sglang_service_cache_dir=path, __sglang_service_env=env))
        assert validate["ReadWritePaths"] == [path, "/etc/ansible/facts.d"]
        assert validate["Environment"] == dropin["Environment"]
        assert validate["ExecStart"] == [
            ["/usr/bin/python3", "/usr/local/libexec/blackwell-inference/boot_validate.py", "/etc/blackwell-inference/sglang-validate.json"]
        ]


TIMEOUTS = {"sglang_service_health_timeout": 120, "sglang_service_sample_timeout": 60}


def test_the_boot_units_may_write_the_textfile_collectors_directory_only_when_it_is_set():
    for template, marker_dir in (("validate.service.j2", ["/var/cache/sglang", "/etc/ansible/facts.d"]), ("ready.service.j2", ["/etc/ansible/facts.d"])):
        assert read_back(render(template, **TIMEOUTS))["ReadWritePaths"] == marker_dir
        for path in ("/var/lib/node_exporter/textfile_collector", *NASTY_PATHS):
            # "-": a directory removed since never fails the unit
            assert read_back(render(template, sglang_service_textfile_dir=path, **TIMEOUTS))["ReadWritePaths"] == [*marker_dir, "-" + path]
    with pytest.raises(Exception, match="control character"):
        render("ready.service.j2", sglang_service_textfile_dir="/var/lib/x\nExecStartPre=+/bin/id", **TIMEOUTS)


@pytest.mark.parametrize(
    "template,overrides",
    [
        ("dropin.conf.j2", {"__sglang_service_env": {"NCCL_DEBUG": ATTACK}}),
        ("validate.service.j2", {"__sglang_service_env": {"NCCL_DEBUG": ATTACK}}),
        ("dropin.conf.j2", {"__sglang_service_command": ["/opt/v/bin/python", ATTACK]}),
        ("sglang.service.j2", {"__sglang_service_command": ["/opt/v/bin/python", ATTACK]}),
        ("sglang.service.j2", {"sglang_service_model_path": "/m\rExecStartPre=+/bin/id"}),
        ("sglang.service.j2", {"sglang_service_cache_dir": "/c\nExecStartPre=+/bin/id"}),
        ("validate.service.j2", {"sglang_service_cache_dir": "/c\x00"}),
        ("dropin.conf.j2", {"__sglang_service_secrets_path": "/etc/x\rExecStartPre=+/bin/id"}),
    ],
)
def test_the_templates_refuse_a_value_that_would_rewrite_the_unit(template, overrides):
    with pytest.raises(Exception, match="control character"):
        render(template, **overrides)


def test_systemd_quote_is_unchanged_for_the_existing_words():
    # the role's units stay byte-identical for the values that passed before
    assert ss.systemd_environment("PATH", "/usr/local/cuda-13.0/bin:/usr/bin") == ss.systemd_quote("PATH=/usr/local/cuda-13.0/bin:/usr/bin")
    argv = ["/opt/sglang/current/bin/python", "-m", "sglang.launch_server", "--model-path", "/models/Kimi K2"]
    assert ss.systemd_exec(argv) == " ".join(ss.systemd_quote(w, True) for w in argv)


# cuda_facts' blackwell_cuda facts of ct200 (8x RTX PRO 6000, driver 580.95.05, toolkits 12.8 and 13.0)
CT200_FACTS = {
    "gpus": [{"index": i, "name": "NVIDIA RTX PRO 6000 Blackwell Server Edition", "compute_capability": "12.0"} for i in range(8)],
    "driver": {"present": True, "version": "580.95.05", "cuda_version": "13.0"},
    "toolkits": [
        {"path": "/usr/local/cuda-12.8", "version": "12.8.93", "has_curand_headers": True, "has_driver_stubs": True},
        {"path": "/usr/local/cuda-13.0", "version": "13.0.88", "has_curand_headers": True, "has_driver_stubs": True},
    ],
    "flashinfer": {"cuda_version": "13.0"},
}
FILES = {"/etc/systemd/system/sglang-k26.service.d/50-blackwell-inference.conf": "ab" * 32, "/etc/blackwell-inference/x.secrets.env": None}
POLICY = {"warm": ["sampling"], "ready_without_launch": False, "timeout": 1800, "user": "root", "boot_validation": True}


def ct200_inputs(facts=None, **over):
    args = {"cuda_home": "/usr/local/cuda-13.0", "env": {"A": "1"}, "venv_target": "/opt/sglang/venvs/aaa", "archs": "12.0f", "files": FILES, "policy": POLICY}
    args.update(over)
    return ss.inputs(facts or CT200_FACTS, **args)


def with_facts(change):
    facts = json.loads(json.dumps(CT200_FACTS))
    change(facts)
    return facts


def test_inputs_name_the_gpus_driver_and_full_toolkit_version():
    inputs = ct200_inputs()
    assert inputs["gpus"] == ["12.0"] * 8 and inputs["driver"] == "580.95.05"
    assert inputs["toolkit"] == {"cuda_home": "/usr/local/cuda-13.0", "version": "13.0.88", "curand_headers": True, "driver_stubs": True}
    assert ct200_inputs(cuda_home="/usr/local/cuda-13.0/")["toolkit"]["version"] == "13.0.88"


@pytest.mark.parametrize(
    "changed,what",
    [
        (lambda: ct200_inputs(with_facts(lambda f: f["gpus"].pop())), ["gpus"]),  # a GPU fell off the bus
        (lambda: ct200_inputs(with_facts(lambda f: f["gpus"][0].update(compute_capability="9.0"))), ["gpus"]),
        (lambda: ct200_inputs(with_facts(lambda f: f["driver"].update(version="590.44.01"))), ["driver"]),
        (lambda: ct200_inputs(with_facts(lambda f: f["toolkits"][1].update(version="13.0.96"))), ["toolkit"]),  # patch level
        (lambda: ct200_inputs(with_facts(lambda f: f["toolkits"][1].update(has_curand_headers=False))), ["toolkit"]),
        (lambda: ct200_inputs(env={"A": "2"}), ["env"]),
        (lambda: ct200_inputs(venv_target="/opt/sglang/venvs/bbb"), ["venv"]),
        (lambda: ct200_inputs(archs="12.0a"), ["archs"]),
        (lambda: ct200_inputs(files=dict(FILES, **{"/etc/blackwell-inference/x.secrets.env": "cd" * 32})), ["files"]),
        (lambda: ct200_inputs(policy=dict(POLICY, warm=[])), ["policy"]),
    ],
)
def test_digest_changes_with_each_input_and_names_it(changed, what):
    base = ct200_inputs()
    assert ss.inputs_digest(base) == ss.inputs_digest(ct200_inputs())
    new = changed()
    assert ss.inputs_digest(new) != ss.inputs_digest(base)
    assert ready.changed_inputs(base, new) == what
    needed, why = ready.needs_validation({"ready": True, "inputs": ss.inputs_digest(base), "vouched": base}, ss.inputs_digest(new), new)
    assert needed and why == "validated inputs differ from the current ones (%s)" % ", ".join(what)


RESTORE = {"snapshot": {"time": "2026-12-01T02:00:52Z"}, "restored": ["write /etc/systemd/system/sglang-k26.service.d/50-blackwell-inference.conf"]}
# the sglang_venv role's rollback result (its tasks_from: rollback)
VENV_BACK = {"path": "/opt/sglang/current", "target": "/opt/sglang/venvs/a", "switched": True, "missing": False}
VENV_AS_WAS = dict(VENV_BACK, switched=False)
VENV_GONE = dict(VENV_BACK, switched=False, missing=True)
DROPIN_BACK = "write /etc/systemd/system/sglang-k26.service.d/50-blackwell-inference.conf"
SKIPPED = {"changed": False, "skipped": True, "skip_reason": "Conditional result was False"}
REWARMED = {"changed": True, "steps": {"warm": {"modules": [{"name": "sampling", "compiled": True}]}}}
WARM = {"changed": False, "steps": {"warm": {"modules": [{"name": "sampling", "compiled": False}]}}}
REWARM_FAILED = {"failed": True, "msg": "FlashInfer's JIT warm-up failed in the service environment: curand.h: No such file or directory\nmore"}
BACK = {"status": 200}
NOT_BACK = {"failed": True, "status": -1, "msg": "did not answer http://h/health: the unit is failed and will not be restarted after 1 s (...)"}


@pytest.mark.parametrize(
    "restore,venv,rewarm,back,restart,restarted,expected",
    [
        (
            RESTORE,
            VENV_BACK,
            REWARMED,
            BACK,
            True,
            True,
            "restored the last good state of 2026-12-01T02:00:52Z (" + DROPIN_BACK + ", link /opt/sglang/current -> /opt/sglang/venvs/a); "
            "its JIT cache re-warmed (compiled sampling); the previous service answers again",
        ),
        (
            dict(RESTORE, restored=[]),
            VENV_AS_WAS,
            WARM,
            BACK,
            True,
            False,
            "restored the last good state of 2026-12-01T02:00:52Z (every file was as it was); "
            "its JIT cache re-warmed (nothing to compile); the previous service answers again",
        ),
        (
            RESTORE,
            VENV_GONE,
            REWARM_FAILED,
            NOT_BACK,
            True,
            True,
            "restored the last good state of 2026-12-01T02:00:52Z (" + DROPIN_BACK + ", "
            "link /opt/sglang/current NOT put back: the venv /opt/sglang/venvs/a is gone); "
            "its JIT cache could NOT be re-warmed (FlashInfer's JIT warm-up failed in the service environment: curand.h: No such file or directory); "
            "the previous service does NOT answer either: it did not answer http://h/health: the unit is failed and will not be restarted after 1 s (...)",
        ),
        (
            dict(RESTORE, restored=[]),
            VENV_BACK,
            SKIPPED,
            SKIPPED,
            False,
            False,
            "restored the last good state of 2026-12-01T02:00:52Z (link /opt/sglang/current -> /opt/sglang/venvs/a); "
            "the service was left alone (sglang_service_restart is false)",
        ),
        ({"snapshot": None, "restored": []}, None, SKIPPED, SKIPPED, True, True, "no last good state to restore; sglang-k26.service stopped"),
        ({"snapshot": None, "restored": []}, None, SKIPPED, SKIPPED, True, False, "no last good state to restore; sglang-k26.service not restarted"),
    ],
)
def test_rollback_note(restore, venv, rewarm, back, restart, restarted, expected):
    assert ss.rollback_note(restore, rewarm, back, restart, "sglang-k26.service", restarted, venv) == expected


def _slurped(settings):
    return {"content": base64.b64encode(json.dumps(settings).encode()).decode(), "encoding": "base64"}


# the ready marker of a host whose last validated state warmed sampling as root (ct200's, trimmed)
READY_MARKER = {
    "ready": True,
    "inputs": "55a753e58102ef92",
    "last_good": {"inputs": "55a753e58102ef92", "venv": "/opt/sglang/venvs/2c26817414e442ed"},
    "vouched": {"policy": {"warm": ["sampling"], "user": "", "boot_validation": True}},
}


@pytest.mark.parametrize(
    "settings,marker,expected",
    [
        # the restored validator settings are the last good state's own
        (_slurped({"warm": ["sampling"], "user": "sglang", "venv": "/opt/sglang/current"}), {}, {"warm": ["sampling"], "user": "sglang", "source": "settings"}),
        # boot validation off: no settings file (the slurp was skipped); the marker vouches for the last good inputs
        ({"skipped": True, "changed": False}, READY_MARKER, {"warm": ["sampling"], "user": "", "source": "marker"}),
        # a marker left by a failed run (inputs are not last_good's): its policy is not the last good one's
        ({"skipped": True}, dict(READY_MARKER, inputs="0000000000000000"), {"warm": ["quantization"], "user": "", "source": "variables"}),
        # unreadable settings fall back the same way
        ({"content": "bm90IGpzb24="}, READY_MARKER, {"warm": ["sampling"], "user": "", "source": "marker"}),
        (None, None, {"warm": ["quantization"], "user": "", "source": "variables"}),
    ],
)
def test_last_good_policy_rewarms_what_the_restored_state_loads(settings, marker, expected):
    assert ss.last_good_policy(settings, marker, ["quantization"], "") == expected


def test_the_fingerprint_is_inputs_digest_and_need_in_one():
    """service_plan.fingerprint: the three the role used to work out one after the other, the same values."""
    args = ("/usr/local/cuda-13.0", {"A": "1"}, "/opt/sglang/venvs/aaa", "12.0f", FILES, POLICY)
    inputs = ct200_inputs()
    digest = ss.inputs_digest(inputs)
    marker = {"ready": True, "inputs": digest, "vouched": inputs}
    for m in (marker, None, dict(marker, ready=False, reason="smoke failed"), dict(marker, inputs="0" * 16)):
        got = service_plan.fingerprint(m, CT200_FACTS, *args)
        needed, why = ready.needs_validation(m, digest, inputs)
        current, stale = ready.inputs_current(m, digest, inputs)
        assert got == {"inputs": inputs, "digest": digest, "need": {"needed": needed, "why": why, "current": current, "stale": stale}}
    assert service_plan.fingerprint(marker, CT200_FACTS, *args)["need"]["needed"] is False


@pytest.mark.parametrize(
    "setting,value,name,escape",
    [
        ("ExecStart", ["/opt/v/bin/python", "$HOME 100%"], None, ss.systemd_exec),
        ("Environment", "a b %h", "NCCL_DEBUG", lambda v: ss.systemd_environment("NCCL_DEBUG", v)),
        ("EnvironmentFile", "/etc/a b/100%", None, ss.systemd_env_file_path),
        ("Description", "SGLang server (100%)", None, ss.systemd_description),
        ("ReadWritePaths", "/srv/a b/100%", None, ss.systemd_path),
        ("ReadWritePaths", ["/srv/a b", "/etc/ansible/facts.d"], None, lambda v: " ".join(ss.systemd_path(p) for p in v)),
        ("word", "A=b c", None, ss.systemd_quote),
    ],
)
def test_one_filter_escapes_each_setting(setting, value, name, escape):
    # the units' one escaping filter (systemd_escape) gives each setting's own escaping
    systemd_escape = service_filters.FilterModule().filters()["systemd_escape"]
    assert systemd_escape(value, setting, name) == escape(value) == ss.systemd_value(value, setting, name)


@pytest.mark.parametrize(
    "value,setting,name,match",
    [
        ("x", "ExecStartPre", None, "not one of Description, Environment, EnvironmentFile, ExecStart, ExecStart kept, ReadWritePaths, word"),
        ("x", "Environment", None, "no variable name"),
        (["/srv/a", "/srv/../etc"], "ReadWritePaths", None, "ReadWritePaths="),
        (["+/bin/sh"], "ExecStart", None, "starts with one of"),
    ],
)
def test_one_filter_refuses_what_systemd_would_not_read_back(value, setting, name, match):
    systemd_escape = service_filters.FilterModule().filters()["systemd_escape"]
    with pytest.raises(AnsibleFilterError, match=match):
        systemd_escape(value, setting, name)


@pytest.mark.parametrize("name", ["sglang.service.j2", "validate.service.j2"])
def test_both_units_carry_the_sandbox(name):
    # issue 47 item 8: no namespaces, @system-service calls only, other users' processes hidden; measured on the lab
    # host (tests/lab/faults/test_security.py), CUDA's own calls by tests/gpu/run.sh
    settings = [(k, v) for _section, k, v in unit_command.settings(render(name, __sglang_service_command=["/opt/v/bin/python"]))]
    assert ss.SANDBOX == (("RestrictNamespaces", "yes"), ("SystemCallFilter", "@system-service"), ("ProtectProc", "invisible"))
    for setting in ss.SANDBOX:
        assert settings.count(setting) == 1, setting
    assert not [k for k, _v in settings if k in ("SystemCallErrorNumber", "MemoryDenyWriteExecute")]  # a denied call kills, loudly


def test_the_gpu_run_sandboxes_its_units_the_same_way():
    with open(os.path.join(ROOT, "tests", "gpu", "run.sh"), encoding="utf-8") as fh:
        script = fh.read()
    # the script reads the one list (and the device module at its current home) and passes each as a property
    assert "plugins.module_utils.service import settings" in script and "for kv in settings.SANDBOX" in script
    assert 'for setting in "${sandbox[@]}"; do props+=(-p "$setting"); done' in script
    assert "plugins.module_utils.cuda import devices as sd\nprint" in script


PROBE_CUDA, PROBE_VENV, PROBE_CACHE = "/usr/local/cuda-13.0", "/opt/sglang/current", "/var/cache/sglang"


@pytest.mark.parametrize(
    "environment, cuda_home, venv, arch_list, expected",
    [
        # the defaults: the unit's PATH with the toolkit first, no arch list (SGLang's or FlashInfer's own decides)
        (
            {},
            PROBE_CUDA,
            PROBE_VENV,
            "",
            {"CUDA_HOME": PROBE_CUDA, "PATH": PROBE_CUDA + "/bin:" + PROBE_VENV + "/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
        ),
        # trailing slashes do not double; an override goes in; the operator's own keys stay, as strings
        (
            {"HF_HUB_OFFLINE": 1, "NCCL_DEBUG": "WARN"},
            PROBE_CUDA + "/",
            "/srv/sglang/current/",
            "12.0a",
            {
                "HF_HUB_OFFLINE": "1",
                "NCCL_DEBUG": "WARN",
                "CUDA_HOME": PROBE_CUDA + "/",
                "PATH": PROBE_CUDA + "/bin:/srv/sglang/current/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                "FLASHINFER_CUDA_ARCH_LIST": "12.0a",
            },
        ),
    ],
)
def test_the_probe_measures_flashinfer_in_the_units_path(environment, cuda_home, venv, arch_list, expected):
    got = ss.probe_environment(environment, cuda_home, venv, arch_list)
    assert got == expected
    # the same PATH the unit gets from the plan (one home: service_path)
    assert got["PATH"] == ss.environment(cuda_home, venv, PROBE_CACHE, "12.0a")["PATH"]


def test_a_kept_command_is_written_verbatim_for_systemd_to_expand():
    # issue 57 item 10: the unit's own ExecStart keeps its ${PORT}, $MODEL and %i; the role's own command never expands
    argv = ["/opt/sglang/current/bin/python", "-m", "sglang.launch_server", "--port", "${PORT}", "--model-path", "/models/%i", "$MODEL", 'a"b']
    assert ss.systemd_value(argv, "ExecStart kept") == (
        '"/opt/sglang/current/bin/python" "-m" "sglang.launch_server" "--port" "${PORT}" "--model-path" "/models/%i" "$MODEL" "a\\"b"'
    )
    assert '"$${PORT}"' in ss.systemd_value(argv, "ExecStart") and '"/models/%%i"' in ss.systemd_value(argv, "ExecStart")
    with pytest.raises(ValueError, match="holds a"):
        ss.systemd_value(["$PY", "-m", "x"], "ExecStart kept")


def test_the_fingerprint_confirms_a_served_validation_instead_of_redoing_it():
    args = (CT200_FACTS, "/usr/local/cuda-13.0", {"CUDA_HOME": "/usr/local/cuda-13.0"}, "/opt/sglang/venvs/a", "12.0a")
    digest = service_plan.fingerprint(None, *args)["digest"]
    boot = {
        "ready": False,
        "phase": "validated",
        "reason": "compiled; waiting for the service to answer",
        "inputs": digest,
        "validated_at": "2026-12-07T10:00:00Z",
    }
    look = {"stands": True, "answered": True, "status": 200, "unit_state": {"ExecMainStartTimestamp": "@1796637660"}}
    got = service_plan.fingerprint(boot, *args, look=look)["need"]
    assert got["needed"] is False and got["resume"] is True and got["reason"] == "compiled; answered (confirmed by a run)", got
    assert service_plan.fingerprint(boot, *args)["need"]["needed"] is True  # without a look: validated again, as before
