"""The sglang_service role's unit templates rendered with the collection's own filters (issue 47): a timeout given as
the string "1800" (inventory and -e values are strings) renders as seconds, not as the string repeated."""

import os
import posixpath

import jinja2
import pytest

from ansible_collections.blackwell.inference.plugins.filter import sglang_service as service_filters

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TEMPLATES = os.path.join(ROOT, "roles", "sglang_service", "templates")


def render(name, **variables):
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)  # noqa: S701 - a unit file, not HTML
    env.filters.update({"blackwell.inference." + k: f for k, f in service_filters.FilterModule().filters().items()})
    env.filters["dirname"] = posixpath.dirname
    return env.get_template(name).render(**variables)


VALIDATE = {
    "ansible_managed": "managed",
    "__sglang_service_unit": "sglang.service",
    "__sglang_service_env": {"CUDA_HOME": "/usr/local/cuda-13.0"},
    "sglang_service_secret_environment": {},
    "__sglang_service_libexec": "/usr/local/libexec/blackwell-inference",
    "__sglang_service_validate_config": "/etc/blackwell-inference/sglang-validate.json",
    "sglang_service_cache_dir": "/var/cache/sglang",
    "__sglang_service_marker_path": "/etc/ansible/facts.d/blackwell_inference.fact",
    "__sglang_service_plan": {"device_allow": ["/dev/nvidiactl rw"]},
    "sglang_service_textfile_dir": "",
}


@pytest.mark.parametrize("timeout", [1800, "1800"])
def test_the_validator_gets_three_smoke_timeouts_in_seconds(timeout):
    lines = render("validate.service.j2", sglang_service_smoke_timeout=timeout, **VALIDATE).splitlines()
    assert "TimeoutStartSec=5400" in lines
