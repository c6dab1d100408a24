"""The per-host summary site.yml prints (fleet_summary.host_lines), line by line. The expected lines are what the
playbook's Jinja template printed for the same inputs before the summary moved to Python: a converged lab host (ct200,
its real facts), a host without GPUs whose FlashInfer refuses the toolkit with a failing and a second service (ct201),
and a host with no toolkit, FlashInfer service or managed service (ct202)."""

import json
import os

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.fleet import summary as fs

with open(os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "host-summaries.json")) as _fh:
    CASES = json.load(_fh)


@pytest.mark.parametrize("case", CASES, ids=[c["host"] for c in CASES])
def test_the_summary_lines(case):
    assert fs.host_lines(case["host"], case["cuda"], case["summaries"]) == case["lines"]


def test_the_lines_an_operator_reads_first():
    ct200, ct201, ct202 = (c["lines"] for c in CASES)
    assert ct200[0] == "host: ct200" and ct200[-1].startswith("READY: ")
    assert "flashinfer 0.7.4: CUDA 13.0 from nvcc (home /usr/local/cuda-13.0 via CUDA_HOME), archs 120a" in ct200
    assert "gpus: none (nvidia-smi: not found)" in ct201 and "NOT READY: the service does not answer" in ct201
    assert "toolkits: none" in ct202 and not any(line.startswith("service: ") for line in ct202)
