"""One reading of what the sglang_service role decides from (service_probe's, and host_lock's read.service)."""

import hashlib
import json
import threading

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.common import commands, secrets
from ansible_collections.blackwell.inference.plugins.module_utils.host import service_read as sr
from ansible_collections.blackwell.inference.plugins.module_utils.service import settings as service_settings


class Module:
    """What the reading asks of AnsibleModule when it reads no unit, no facts and does not look."""

    @staticmethod
    def boolean(value):
        return value in (True, "true", "yes", 1)


def no_commands(argv, env=None, timeout=60, data=None):
    raise AssertionError("no command without unit, facts or health: %s" % argv)


@pytest.mark.parametrize(
    "given, refusal",
    [
        ({"marker": "/m", "cuda_home": "/usr/local/cuda-13.0"}, "service: needs jit_dir"),
        ({}, "service: needs marker, cuda_home, jit_dir"),
        ({"marker": "/m", "cuda_home": "/c", "jit_dir": "/j", "listen": {}}, "service: unsupported option(s) listen"),
    ],
)
def test_params_refuse_what_the_module_would(given, refusal):
    with pytest.raises(sr.ReadError, match=refusal.replace("(", r"\(").replace(")", r"\)")):
        sr.params(given)


def test_params_take_null_as_not_read():
    p = sr.params({"marker": "/m", "cuda_home": "/c", "jit_dir": "/j", "unit": None, "health": None, "observe": None})
    assert p["unit"] is p["facts"] is p["health"] is p["summary_facts"] is p["snapshot_store"] is None and p["observe"] == []


def test_a_reading_of_the_marker_the_toolkit_the_workspaces_and_the_snapshot(tmp_path):
    marker = tmp_path / "sglang.fact"
    marker.write_text(json.dumps({"ready": True, "venv": "/opt/sglang/venvs/119f0a510a34ff5f"}))
    (tmp_path / "cuda-13.0" / "bin").mkdir(parents=True)
    (tmp_path / "cuda-13.0" / "bin" / "nvcc").write_text("")
    jit = tmp_path / "jit" / "119f0a510a34ff5f"
    jit.mkdir(parents=True)
    (jit / "venv").symlink_to(tmp_path / "venvs" / "gone")
    run = commands.CachingRunner(no_commands)
    p = sr.params({"marker": str(marker), "cuda_home": str(tmp_path / "cuda-13.0"), "jit_dir": str(tmp_path / "jit"), "observe": [str(tmp_path / "jit" / "*")]})
    got = sr.read(Module(), run, p)
    assert got["marker"] == {"ready": True, "venv": "/opt/sglang/venvs/119f0a510a34ff5f"} and got["marker_error"] is None
    assert got["nvcc"] == {"path": str(tmp_path / "cuda-13.0" / "bin" / "nvcc"), "exists": True}
    assert got["gone_venv_links"] == [str(jit / "venv")] and got["snapshot"] == {"exists": False, "error": None}
    assert list(got["observed"]) == [str(jit)] and got["observed"][str(jit)]["type"] == "directory"
    assert got["unit"] is None and got["health"] is None and "ansible_facts" not in got and got["commands_run"] == []


def test_no_look_at_a_service_the_marker_does_not_vouch_for(tmp_path):
    marker = tmp_path / "sglang.fact"
    marker.write_text(json.dumps({"ready": False}))
    p = sr.params({"marker": str(marker), "cuda_home": "/nowhere", "jit_dir": str(tmp_path), "health": {"path": "/health", "unit": "sglang.service"}})
    got = sr.read(Module(), commands.CachingRunner(no_commands), p)
    assert got["health"] == {"stands": False, "not_looked": "the ready marker's validation did not pass", "answered": None, "status": None, "sample": None}
    assert got["nvcc"]["exists"] is False


@pytest.mark.parametrize(
    "health, refusal",
    [
        ({"path": "/health"}, "health: needs path"),  # no listen, and no unit read in this call
        ({"path": "/health", "listen": {"host": "127.0.0.1", "port": 30000}, "sample_path": "/generate", "sample_body": {"text": "hi"}}, "health: sample_body"),
        ({"path": "/health", "listen": {"host": "127.0.0.1", "port": 30000}, "sample_timeout": "soon"}, "must be integers"),
        ({"path": "/health", "port": 30000}, "health: unsupported option"),
    ],
)
def test_a_look_that_cannot_be_made_is_refused(tmp_path, health, refusal):
    marker = tmp_path / "sglang.fact"
    marker.write_text(json.dumps({"ready": True}))
    p = sr.params({"marker": str(marker), "cuda_home": "/c", "jit_dir": str(tmp_path), "health": health})
    with pytest.raises(sr.ReadError, match=refusal):
        sr.read(Module(), commands.CachingRunner(no_commands), p)


def test_aside_returns_the_value_or_raises_the_error_in_the_callers_thread():
    seen = []
    got = commands.aside(lambda a, b: seen.append(threading.current_thread()) or a + b, 2, 3)
    assert got() == 5 and seen[0] is not threading.current_thread()

    def fails():
        raise sr.ReadError("nvidia-smi: rc 9")

    failed = commands.aside(fails)
    with pytest.raises(sr.ReadError, match="nvidia-smi: rc 9"):
        failed()

    def exits():
        raise SystemExit(1)  # what a fail_json in the thread would do

    with pytest.raises(commands.Unanswered, match=r"stopped without an answer \(SystemExit\)"):
        commands.aside(exits)()


def test_the_facts_fail_the_reading_while_the_look_is_made_beside_them(tmp_path, monkeypatch):
    """The service environment's facts are gathered while the service is looked at; a failure of theirs still fails
    the reading (with their message), after the look."""
    marker = tmp_path / "sglang.fact"
    marker.write_text(json.dumps({"ready": False}))
    order = []

    def facts(module, run, given, known):
        order.append("facts")
        raise sr.ReadError("cuda_facts: nvidia-smi failed", {"rc": 9})

    def look(module, given, listen, m):
        order.append("look")
        return {"stands": False}

    monkeypatch.setattr(sr, "gather_facts", facts)
    monkeypatch.setattr(sr, "look", look)
    p = sr.params({"marker": str(marker), "cuda_home": "/c", "jit_dir": str(tmp_path), "facts": {"nvidia_smi": "nvidia-smi"}, "health": {"path": "/h"}})
    with pytest.raises(sr.ReadError, match="nvidia-smi failed") as err:
        sr.read(Module(), commands.CachingRunner(no_commands), p)
    assert err.value.result == {"rc": 9} and sorted(order) == ["facts", "look"]


def test_the_secrets_file_is_observed_by_its_keyed_digest_and_the_key_is_made_on_a_real_run_only(tmp_path):
    secret, unit, key = tmp_path / "s.secrets.env", tmp_path / "u.conf", tmp_path / "lib" / "digest.key"
    secret.write_text('HF_TOKEN="hf_x"\n')
    unit.write_text("[Service]\n")
    plain = hashlib.sha256(secret.read_bytes()).hexdigest()

    def observed(create):
        keyed = {"key": str(key), "paths": [str(secret)], "create": create}
        p = sr.params({"marker": "/m", "cuda_home": "/c", "jit_dir": str(tmp_path / "jit"), "observe": [str(secret), str(unit)], "keyed": keyed})
        return sr.read(Module(), commands.CachingRunner(no_commands), p)["observed"]

    got = observed(False)  # check mode: no key made, and still no plain digest
    assert not key.exists() and got[str(secret)]["sha256"] == secrets.UNKEYED
    got = observed(True)
    assert oct(key.stat().st_mode & 0o777) == "0o600" and got[str(secret)]["sha256"] == secrets.keyed(key.read_bytes(), plain)
    assert plain not in json.dumps(got) and got[str(unit)]["sha256"] == hashlib.sha256(b"[Service]\n").hexdigest()
    assert observed(True) == got  # the same secret: the same digest
    secret.write_text('HF_TOKEN="hf_y"\n')
    assert observed(True)[str(secret)]["sha256"] != got[str(secret)]["sha256"]  # a changed one: another
    with pytest.raises(sr.ReadError, match="keyed: unsupported option"):
        sr.read(Module(), None, sr.params({"marker": "/m", "cuda_home": "/c", "jit_dir": "/j", "keyed": {"key": str(key), "salt": 1}}))


SERVICE_ENV = {
    "environment": {"NCCL_DEBUG": "WARN", "HF_HUB_OFFLINE": 1},
    "cuda_home": "/usr/local/cuda-13.0",
    "venv": "/opt/sglang/current",
    "arch_list": "12.0a",
}


@pytest.mark.parametrize(
    "given, want",
    [
        # the role's variables: the environment as settings.py probe_environment works it out
        (
            {"nvidia_smi": "nvidia-smi", "service_environment": SERVICE_ENV, "venv": "/opt/sglang/current"},
            {
                "nvidia_smi": "nvidia-smi",
                "venv": "/opt/sglang/current",
                "environment": service_settings.probe_environment(
                    {"NCCL_DEBUG": "WARN", "HF_HUB_OFFLINE": 1}, "/usr/local/cuda-13.0", "/opt/sglang/current", "12.0a"
                ),
            },
        ),
        # no arch list: none set; a null environment is none
        (
            {"service_environment": dict(SERVICE_ENV, environment=None, arch_list="")},
            {"environment": service_settings.probe_environment({}, "/usr/local/cuda-13.0", "/opt/sglang/current")},
        ),
        # an environment given as it is stays as it is
        ({"environment": {"CUDA_HOME": "/c"}}, {"environment": {"CUDA_HOME": "/c"}}),
        ({"nvidia_smi": "nvidia-smi"}, {"nvidia_smi": "nvidia-smi"}),
    ],
)
def test_the_facts_environment_is_worked_out_from_the_services_variables(given, want):
    assert sr.service_environment(given) == want


@pytest.mark.parametrize(
    "given, refusal",
    [
        ({"environment": {}, "service_environment": SERVICE_ENV}, "facts: environment or service_environment, not both"),
        ({"service_environment": dict(SERVICE_ENV, cuda_home="")}, "facts: service_environment needs cuda_home and venv"),
        ({"service_environment": {"cuda_home": "/c"}}, "facts: service_environment needs cuda_home and venv"),
        ({"service_environment": dict(SERVICE_ENV, path="/bin")}, "facts: service_environment: unsupported option(s) path"),
        ({"service_environment": dict(SERVICE_ENV, environment=["A=1"])}, "facts: service_environment's environment must be a mapping"),
    ],
)
def test_service_environment_is_refused_as_a_reading_error(given, refusal):
    with pytest.raises(sr.ReadError) as err:
        sr.service_environment(given)
    assert err.value.msg.startswith(refusal), err.value.msg


def test_the_reading_measures_in_the_worked_out_environment(tmp_path, monkeypatch):
    """The probe and the lock's read.service, given the same options, gather the facts in the same environment."""
    marker = tmp_path / "sglang.fact"
    marker.write_text(json.dumps({"ready": False}))
    gathered = []

    def facts(module, run, given, known):
        gathered.append(given)
        return {"gpus": []}

    monkeypatch.setattr(sr, "gather_facts", facts)
    options = {"marker": str(marker), "cuda_home": "/c", "jit_dir": str(tmp_path), "facts": {"nvidia_smi": "nvidia-smi", "service_environment": SERVICE_ENV}}
    got = sr.read(Module(), commands.CachingRunner(no_commands), sr.params(options))
    (given,) = gathered
    assert given == {"nvidia_smi": "nvidia-smi", "environment": service_settings.probe_environment(**SERVICE_ENV)}
    assert got["blackwell_cuda"] == {"gpus": []} and options["facts"]["service_environment"] == SERVICE_ENV


@pytest.mark.parametrize(
    ("show", "keep", "files", "refusal"),
    [
        # a drop-in's unit that is not there
        ("LoadState=not-found\nUser=\nFragmentPath=\nDropInPaths=\nUnitFileState=\nActiveState=inactive\n", True, {}, "needs an existing k26.service"),
        # a unit whose required EnvironmentFile= is gone (issue 57 item 2): refused under the lock, before the first role
        (
            "LoadState=loaded\nUser=\nFragmentPath=/etc/systemd/system/k26.service\nDropInPaths=\nUnitFileState=enabled\nActiveState=active\n",
            True,
            {"/etc/systemd/system/k26.service": "[Service]\nEnvironmentFile=/etc/k26.env\nExecStart=/opt/v/bin/python -m sglang.launch_server\n"},
            "k26.service requires EnvironmentFile=/etc/k26.env (set in /etc/systemd/system/k26.service), which is not there",
        ),
        (
            "LoadState=loaded\nUser=\nFragmentPath=/etc/systemd/system/k26.service\nDropInPaths=\nUnitFileState=enabled\nActiveState=active\n",
            False,
            {"/etc/systemd/system/k26.service": "[Service]\nEnvironmentFile=-/etc/k26.env\nExecStart=/opt/v/bin/python -m sglang.launch_server\n"},
            "",
        ),
    ],
)
def test_the_unit_reading_carries_what_systemd_would_refuse_to_start(monkeypatch, show, keep, files, refusal):
    class Res:
        def __init__(self, out):
            self.rc, self.stdout, self.stderr, self.ok = 0, out, "", True

        def as_dict(self):
            return {"rc": 0, "stdout": self.stdout, "stderr": ""}

    def read_text(path):
        if path not in files:
            raise FileNotFoundError(path)
        return files[path]

    real = sr.unit_logic.read
    monkeypatch.setattr(
        sr.unit_logic, "read", lambda run, **kw: real(run, read_text=read_text, exists=lambda p: True, is_dir=lambda p: True, host_ids={}, **kw)
    )
    got = sr.read_unit(lambda argv: Res(show), {"unit": "k26.service", "venv": "/opt/sglang/current", "keep": keep}, Module.boolean)
    assert (got["refusal"] == "") if not refusal else got["refusal"].startswith(refusal) or refusal in got["refusal"], got["refusal"]


def test_the_units_environment_files_are_digested_under_the_hosts_key_made_before_the_unit_is_read(tmp_path):
    """issue 58 item 2: an operator's token in a root-only EnvironmentFile= never shows as a plain sha256."""
    token = "hf_PLANTEDtoken123"  # noqa: S105 - the planted token the test looks for
    env_file, unit, key = tmp_path / "k26.env", tmp_path / "k26.service", tmp_path / "lib" / "digest.key"
    env_file.write_text("HF_TOKEN=%s\n" % token)
    env_file.chmod(0o600)
    unit.write_text("[Service]\nEnvironmentFile=%s\nExecStart=/opt/v/bin/python -m sglang.launch_server\n" % env_file)
    show = "LoadState=loaded\nUser=\nFragmentPath=%s\nDropInPaths=\nUnitFileState=enabled\nActiveState=active\n" % unit

    def run(argv, env=None, timeout=60, data=None):
        return commands.CommandResult(argv, 0, show, "") if argv[:2] == ["systemctl", "show"] else no_commands(argv)

    keyed = {"key": str(key), "paths": [], "create": True}
    p = sr.params({"marker": "/m", "cuda_home": "/c", "jit_dir": str(tmp_path / "jit"), "keyed": keyed, "unit": {"unit": "k26.service", "venv": "/opt/v"}})
    got = sr.read(Module(), commands.CachingRunner(run), p)
    read = got["unit"]["environment_files"][str(env_file)]["HF_TOKEN"]
    assert read == {"value": None, "digest": secrets.keyed(key.read_bytes(), hashlib.sha256(token.encode()).hexdigest())}
    text = json.dumps(got)
    assert token not in text and hashlib.sha256(token.encode()).hexdigest() not in text
    assert got["unit"]["refusal"] == "" and got["unit"]["writable_env_files"] == []
    env_file.chmod(0o666)  # now the service account could write it: refused, naming the file
    refusal = sr.read(Module(), commands.CachingRunner(run), p)["unit"]["refusal"]
    assert "EnvironmentFile=%s" % env_file in refusal and "other than root may write" in refusal


def test_the_unit_reading_names_an_open_port_with_no_key(monkeypatch):
    """issue 58 item 6: site.yml refuses it from the lock's reading on a one-host run with sglang_service_require_api_key."""
    show = "LoadState=loaded\nUser=\nFragmentPath=/etc/systemd/system/k26.service\nDropInPaths=\nUnitFileState=enabled\nActiveState=active\n"
    res = commands.CommandResult(["systemctl"], 0, show, "")
    real = sr.unit_logic.read
    for host, want in (("0.0.0.0", "k26.service: it serves on 0.0.0.0:30000 with no API key"), ("127.0.0.1", "")):  # noqa: S104
        text = "[Service]\nExecStart=/opt/v/bin/python -m sglang.launch_server --host %s --port 30000\n" % host
        monkeypatch.setattr(
            sr.unit_logic,
            "read",
            lambda run, _t=text, _real=real, **kw: _real(run, read_text=lambda p: _t, exists=lambda p: True, is_dir=lambda p: True, host_ids={}, **kw),
        )
        got = sr.read_unit(lambda argv, env=None, timeout=60, data=None: res, {"unit": "k26.service", "venv": "/opt/v"}, Module.boolean)
        assert got["exposure"].startswith(want) and bool(got["exposure"]) is bool(want), got["exposure"]
