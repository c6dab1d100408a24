"""The health wait's judgement of a unit, from `systemctl show` outputs of systemd 252 (Debian 12, the lab host)."""

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.common import systemd as systemd_env
from ansible_collections.blackwell.inference.plugins.module_utils.service import health as sh

RUNNING = "Result=success\nNRestarts=0\nExecMainStatus=0\nActiveState=active\nSubState=running\n"
# Restart=on-failure, the process exited 2: waiting for its restart, then restarted once
AUTO_RESTART = "Result=exit-code\nNRestarts=0\nExecMainStatus=2\nActiveState=activating\nSubState=auto-restart\n"
RESTARTED_ONCE = "Result=exit-code\nNRestarts=1\nExecMainStatus=2\nActiveState=activating\nSubState=auto-restart\n"
LOOPING = "Result=exit-code\nNRestarts=7\nExecMainStatus=1\nActiveState=active\nSubState=running\n"
# Restart=no (ct200's own unit), argparse refused a flag
FAILED = "Result=exit-code\nNRestarts=0\nExecMainStatus=2\nActiveState=failed\nSubState=failed\n"
# exited 0 under Restart=on-failure, or a unit that does not exist
DEAD = "Result=success\nNRestarts=0\nExecMainStatus=0\nActiveState=inactive\nSubState=dead\n"
STARTING = "Result=success\nNRestarts=0\nExecMainStatus=0\nActiveState=activating\nSubState=start\n"


def test_show_argv_is_an_argument_list():
    argv = sh.show_argv("sglang-k26.service")
    assert argv[:4] == ["systemctl", "show", "sglang-k26.service", "--timestamp=unix"]
    assert argv[4::2] == ["-p"] * len(sh.PROPERTIES) and set(argv[5::2]) == set(sh.PROPERTIES)


def test_parse_show():
    props = sh.parse_show(FAILED)
    assert props == {"Result": "exit-code", "NRestarts": 0, "ExecMainStatus": "2", "ActiveState": "failed", "SubState": "failed"}
    assert sh.parse_show("")["NRestarts"] == 0 and sh.parse_show("NRestarts=x\n")["NRestarts"] == 0
    assert sh.describe(props) == "ActiveState=failed SubState=failed Result=exit-code ExecMainStatus=2 NRestarts=0"


@pytest.mark.parametrize(
    "show,before,limit,expected",
    [
        (RUNNING, 0, 3, None),  # up, loading its model: keep waiting
        (STARTING, 0, 3, None),  # Type=notify still starting
        (AUTO_RESTART, 0, 3, None),  # systemd will start it again
        (RESTARTED_ONCE, 0, 3, None),
        (FAILED, 0, 3, "the unit is failed and will not be restarted"),
        (DEAD, 0, 3, "the unit is inactive and will not be restarted"),
        (LOOPING, 4, 3, "the unit crashed and was restarted 3 times since it was started"),
        (LOOPING, 5, 3, None),  # restarts from before the wait do not count
        (LOOPING, 0, 0, None),  # crash_limit 0: restarts never end the wait
        ("", 0, 3, None),
    ],
)
def test_gave_up(show, before, limit, expected):
    assert sh.gave_up(sh.parse_show(show) if show else {}, before, limit) == expected


def test_failure_names_the_timeout_or_the_reason_and_the_unit_state():
    props = sh.parse_show(FAILED)
    assert sh.failure("http://127.0.0.1:30000/health", 900, 900.4, -1, props, None) == (
        "did not answer http://127.0.0.1:30000/health within 900 s (last status -1; systemd: "
        "ActiveState=failed SubState=failed Result=exit-code ExecMainStatus=2 NRestarts=0)"
    )
    assert sh.failure("http://h/health", 900, 2.6, 503, props, "the unit is failed and will not be restarted").startswith(
        "did not answer http://h/health: the unit is failed and will not be restarted after 3 s (last status 503; systemd: ActiveState=failed"
    )


def test_start_argv_asks_for_unix_time_the_run_and_the_environment():
    assert sh.start_argv("sglang-k26.service") == [
        "systemctl",
        "show",
        "sglang-k26.service",
        "--timestamp=unix",
        "-p",
        "ExecMainStartTimestamp",
        "-p",
        "InvocationID",
        "-p",
        "Environment",
        "-p",
        "EnvironmentFiles",
    ]


def test_the_answer_of_start_argv():
    # systemd 252's answer to that call (the role's drop-in and its secrets file)
    shown = (
        "ExecMainStartTimestamp=@1764597600\n"
        "Environment=CUDA_HOME=/usr/local/cuda-13.0 FLASHINFER_CUDA_ARCH_LIST=12.0a "
        "FLASHINFER_WORKSPACE_BASE=/var/cache/sglang/jit/2c26817414e442ed PATH=/usr/local/cuda-13.0/bin:/opt/sglang/current/bin:/usr/bin:/bin\n"
        "EnvironmentFiles=/etc/blackwell-inference/sglang-k26.secrets.env (ignore_errors=no)\n"
    )
    assert sh.parse_start(shown) == 1764597600000000
    env, _notes = systemd_env.unit_environment(systemd_env.parse_show(shown), lambda path: "HF_HOME=/data/hf\n")
    assert env["CUDA_HOME"] == "/usr/local/cuda-13.0" and env["FLASHINFER_CUDA_ARCH_LIST"] == "12.0a" and env["HF_HOME"] == "/data/hf"


@pytest.mark.parametrize(
    "stdout,usec",
    [
        # systemd 252 (Debian 12), a unit that ran / one that never started
        ("ExecMainStartTimestamp=@1764597600\n", 1764597600000000),
        ("ExecMainStartTimestamp=\n", None),
        ("ExecMainStartTimestamp=@1764597600.25\n", 1764597600250000),
        ("", None),
        # a systemd without --timestamp=unix prints its local time: no filter, not a wrong one
        ("ExecMainStartTimestamp=Tue 2026-12-01 13:20:00 UTC\n", None),
    ],
)
def test_parse_start(stdout, usec):
    assert sh.parse_start(stdout) == usec


def test_failure_of_a_single_look():
    props = sh.parse_show(FAILED)
    assert sh.failure("http://h/health", 0, 0.1, -1, props, "the unit is failed and will not be restarted") == (
        "does not answer http://h/health: the unit is failed and will not be restarted (last status -1; systemd: "
        "ActiveState=failed SubState=failed Result=exit-code ExecMainStatus=2 NRestarts=0)"
    )
    assert sh.failure("http://h/health", 0, 0.1, 503, {}, None) == "does not answer http://h/health (last status 503; systemd: no state)"


SAMPLED = {"text": "The capital of France is", "sampling_params": {"temperature": 0.7, "top_p": 0.9, "top_k": 20, "max_new_tokens": 4}}


@pytest.mark.parametrize(
    "body, refusal",
    [
        (SAMPLED, None),
        ({"input_ids": [1, 2, 3], "sampling_params": {"temperature": 1.0, "top_p": 0.95, "top_k": 50}}, None),
        # sampled, but without a filter: SGLang 0.5.23's sampler takes its plain torch path, never flashinfer.sampling
        ({"input_ids": [1, 2, 3], "sampling_params": {"temperature": 1.0}}, "it does not filter (top_p 1.0, top_k -1)"),
        ({"text": "x", "sampling_params": {"temperature": 0.7, "top_k": 20}}, "it does not filter (top_p 1.0, top_k 20)"),
        ({"text": "x", "sampling_params": {"temperature": 0.7, "top_p": 0.9}}, "it does not filter (top_p 0.9, top_k -1)"),
        ({"text": "x", "sampling_params": {"temperature": 0.7, "top_p": 0.9, "top_k": 1 << 30}}, "it does not filter"),
        # what SGLang 0.5.23's /health asks for itself: greedy, never FlashInfer's sampling
        ({"text": "x", "sampling_params": {"max_new_tokens": 1, "temperature": 0.0}}, "it is greedy (temperature 0.0, top_k -1)"),
        ({"text": "x", "sampling_params": {"temperature": 0.7, "top_k": 1}}, "it is greedy (temperature 0.7, top_k 1)"),
        ({"text": "x", "sampling_params": {"temperature": 0.7, "top_p": 0}}, "its top_p 0.0 is not in (0, 1]"),
        ({"text": "x", "sampling_params": {"temperature": "hot"}}, "its temperature, top_k and top_p must be numbers"),
        ({"text": "x"}, "it has no sampling_params"),
        ({"sampling_params": {"temperature": 1}}, "it must be /generate's JSON body"),
        (None, "it must be /generate's JSON body"),
    ],
)
def test_a_sampled_request_must_sample(body, refusal):
    got = sh.sample_checked(body)
    assert (got is None and refusal is None) or (got and got.startswith(refusal)), got


@pytest.mark.parametrize(
    "status, text, ok, detail",
    [
        # SGLang 0.5.23's /generate answer (http_server.py: the text and meta_info of one request)
        (200, '{"text": " Paris.", "meta_info": {"id": "a1", "finish_reason": {"type": "length", "length": 4}}}', True, "answered 7 characters"),
        # its error answer (ORJSONResponse of {"error": {"message": ...}}, HTTP 400) and a scheduler crash
        (400, '{"error": {"message": "temperature must be non-negative"}}', False, "answered HTTP 400: temperature must be non-negative"),
        (
            500,
            '{"error": {"message": "TP rank 0: RuntimeError: FlashInfer requires GPUs with sm75 or higher"}}',
            False,
            "answered HTTP 500: TP rank 0: RuntimeError: FlashInfer requires GPUs with sm75 or higher",
        ),
        (502, "Bad Gateway", False, "answered HTTP 502: Bad Gateway"),
        (200, '{"meta_info": {}}', False, 'answered 200 without a generated text: {"meta_info": {}}'),
        (-1, "timed out", False, "no answer (timed out)"),
    ],
)
def test_the_answer_to_the_sampled_request(status, text, ok, detail):
    assert sh.sample_result(status, text) == (ok, detail)


def test_sample_failure_names_both_requests_and_the_unit():
    sampled = {"url": "http://127.0.0.1:30000/generate", "seconds": 1.2, "detail": "answered HTTP 500: TP rank 0: boom"}
    msg = sh.sample_failure("http://127.0.0.1:30000/health", sampled, sh.parse_show(RUNNING))
    assert msg == (
        "answered http://127.0.0.1:30000/health but its sampled request to http://127.0.0.1:30000/generate failed after 1 s: "
        "answered HTTP 500: TP rank 0: boom (systemd: ActiveState=active SubState=running Result=success ExecMainStatus=0 NRestarts=0)"
    )


@pytest.mark.parametrize(
    ("argv", "key"),
    [
        (["python", "-m", "sglang.launch_server", "--api-key", "sk-1", "--port", "30000"], "sk-1"),
        (["python", "-m", "sglang.launch_server", "--api-key=sk-2"], "sk-2"),
        (["python", "-m", "sglang.launch_server", "--port", "30000"], None),
        (["python", "-m", "sglang.launch_server", "--api-key"], None),  # no value: SGLang would refuse to start
        ([], None),
    ],
)
def test_api_key_of_a_command_line(argv, key):
    assert sh.api_key(argv) == key
    assert sh.auth_headers(key) == ({"Authorization": "Bearer " + key} if key else {})
