"""The cuda_toolkit role's downloads (the key, the cuda-keyring package, the runfile) through a proxy with a login
(issue 47): the environment names the proxy without its credentials (it travels in the module's command line), and the
login goes as a Proxy-Authorization header from a task with no_log. Before, the credentials were cut from the
environment and never sent, so such a proxy refused the download (407)."""

import base64
import os

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TASKS = os.path.join(ROOT, "roles", "cuda_toolkit", "tasks")
with open(os.path.join(ROOT, "roles", "cuda_toolkit", "vars", "main.yml"), encoding="utf-8") as _fh:
    VARS = yaml.safe_load(_fh)


def get_url_tasks():
    for name in sorted(os.listdir(TASKS)):
        with open(os.path.join(TASKS, name), encoding="utf-8") as fh:
            for task in yaml.safe_load(fh) or []:
                for each in [task, *(task.get("block") or [])]:
                    if "ansible.builtin.get_url" in each:
                        yield name, each


def test_every_download_sends_the_proxys_login_as_a_header_with_no_log_and_its_proxy_without_it():
    found = list(get_url_tasks())
    assert {name for name, _task in found} == {"repo.yml", "runfile.yml"} and len(found) == 3
    for name, task in found:
        where = "%s: %s" % (name, task["name"])
        assert task["environment"] == "{{ __cuda_toolkit_download_proxies }}", where
        header = "{{ {'Proxy-Authorization': __cuda_toolkit_proxy_authorization[__proxy]} if __proxy else omit }}"
        assert task["ansible.builtin.get_url"]["headers"] == header, where
        assert "__cuda_toolkit_plan.download_proxy_login." in task["vars"]["__proxy"], where
        assert "__proxy | length > 0" in task["no_log"], where


@pytest.mark.parametrize(
    "proxy, login",
    [
        ("http://me%40corp:p%3Ass@proxy.example:3128", b"me@corp:p:ss"),
        ("http://u:pw@proxy.example:3128/", b"u:pw"),
        ("http://TOKEN@proxy.example:3128", b"TOKEN:"),
    ],
)
def test_the_header_is_the_proxys_login_in_basic(proxy, login):
    templar = Templar(loader=DataLoader(), variables={"cuda_toolkit_http_proxy": proxy, "cuda_toolkit_https_proxy": proxy})
    for name in ("http_proxy", "https_proxy"):
        got = templar.template(trust_as_template(VARS["__cuda_toolkit_proxy_authorization"][name]))
        assert got == "Basic " + base64.b64encode(login).decode()
