"""A unit's environment from `systemctl show` (output captured from systemd 252, Debian 12)."""

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.common import systemd as se

SHOW = (
    "LoadState=loaded\n"
    "Environment=PATH=/usr/local/cuda/bin:/root/venv_sglang211/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    ' HF_HOME=/root/.cache/huggingface "SGLANG_ARGS=--tp 8 --port 30000"\n'
    "EnvironmentFiles=/etc/sglang/secrets.env (ignore_errors=no)\n"
    "EnvironmentFiles=/etc/sglang/optional.env (ignore_errors=yes)\n"
)


def test_show():
    props = se.parse_show(SHOW)
    assert props["LoadState"] == ["loaded"]
    env = se.parse_environment(props["Environment"][0])
    assert env["PATH"].startswith("/usr/local/cuda/bin:") and env["SGLANG_ARGS"] == "--tp 8 --port 30000"
    assert se.environment_files(props["EnvironmentFiles"]) == [("/etc/sglang/secrets.env", False), ("/etc/sglang/optional.env", True)]


@pytest.mark.parametrize(
    "stdout,want",
    [
        (SHOW, {"LoadState": "loaded", "EnvironmentFiles": "/etc/sglang/optional.env (ignore_errors=yes)"}),
        # systemd 252's answer for the health wait (service/health.py) and the unit's read (service/unit.py)
        ("ActiveState=failed\nSubState=failed\nNRestarts=3\nMainPID=0\n", {"ActiveState": "failed", "NRestarts": "3", "MainPID": "0"}),
        ("FragmentPath=/etc/systemd/system/sglang.service\nDropInPaths=\nUser=sglang \n", {"DropInPaths": "", "User": "sglang"}),
        ("no equals sign\n\nResult=success\n", {"Result": "success"}),
        ("", {}),
    ],
)
def test_show_props_one_value_each(stdout, want):
    # the one parser of `systemctl show` (parse_show) with one value per key: the last, stripped
    props = se.show_props(stdout)
    assert {k: props[k] for k in want} == want
    assert "no equals sign" not in props


def test_not_found():
    assert se.parse_show("LoadState=not-found\nEnvironment=\nEnvironmentFiles=\n")["LoadState"] == ["not-found"]


@pytest.mark.parametrize(
    "text,want",
    [
        # issue 57 item 8: systemd ignores an `export KEY=value` line (its name is `export KEY`), so it sets nothing
        ("# comment\nHF_TOKEN=hf_abc\n\nexport CUDA_HOME=/usr/local/cuda-12.8\n", {"HF_TOKEN": "hf_abc"}),
        ("CUDA_HOME =/usr/local/cuda-13.0\n2X=1\nA-B=2\n", {"CUDA_HOME": "/usr/local/cuda-13.0"}),
        ("A='x y'\nB=\"z\"\nnot a line\n; also comment\n", {"A": "x y", "B": "z"}),
    ],
)
def test_env_file(text, want):
    assert se.parse_env_file(text) == want


def test_files_override_environment_and_missing_files():
    files = {"/etc/sglang/secrets.env": "PATH=/usr/local/cuda-13.0/bin:/usr/bin\nHF_TOKEN=x\n"}

    def read(path):
        if path not in files:
            raise OSError("No such file")
        return files[path]

    env, notes = se.unit_environment(se.parse_show(SHOW), read)
    assert env["PATH"] == "/usr/local/cuda-13.0/bin:/usr/bin" and env["HF_HOME"] == "/root/.cache/huggingface"
    assert notes == []  # the missing optional file is ignore_errors=yes
    files.clear()
    _env, notes = se.unit_environment(se.parse_show(SHOW), read)
    assert notes == ["EnvironmentFile /etc/sglang/secrets.env unreadable: No such file"]


@pytest.mark.parametrize(
    ("shown", "want"),
    [
        # systemd's shell_maybe_quote(word, 0): a word in double quotes when it needs them, \\ \" \$ \` escaped, control
        # characters as C escapes; shlex gave \$HOME back for $HOME and \t for a tab
        ('"V=\\$HOME" "W=\\${X}"', {"V": "$HOME", "W": "${X}"}),
        ('"T=a\\tb" "Q=\\"q\\"" "B=back\\\\slash"', {"T": "a\tb", "Q": '"q"', "B": "back\\slash"}),
        ('"S=a b" P=%h "E==x=y" "O=\\303\\274"', {"S": "a b", "P": "%h", "E": "=x=y", "O": "\u00fc"}),
        ("", {}),
    ],
)
def test_the_environment_as_systemctl_show_quotes_it(shown, want):
    assert se.parse_environment(shown) == want
