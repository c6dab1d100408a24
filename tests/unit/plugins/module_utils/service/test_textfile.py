"""The ready marker for node_exporter's textfile collector (service/textfile.py), read back with prometheus_client's
parser as Prometheus reads it: per service ready, phase, FlashInfer's verdict, the CUDA it uses, the times of the last
passed validation and of the last answer; written whole (temp file in the same directory, then rename, 0644)."""

import os
import stat

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ansible_collections.blackwell.inference.plugins.module_utils.service import ready, textfile

SERVICE = "sglang-k26.service"
TOOLKIT = {"cuda_home": "/usr/local/cuda-13.0", "cuda_version": "13.0"}
VERSIONS = {"flashinfer-python": "0.7.4", "torch": "2.13.0"}
STATE = {"inputs": "d1", "venv": "/opt/sglang/venvs/a", "toolkit": TOOLKIT, "archs": "12.0f", "versions": VERSIONS, "smoke": {"steps": {}}}


def parse(text):
    """{(name, labels...): value} and the families' types, as prometheus_client reads the file."""
    families = list(text_string_to_metric_families(text))
    samples = {(s.name, *sorted(s.labels.items())): s.value for f in families for s in f.samples}
    return samples, {f.name: f.type for f in families}


def svc(*labels):
    return tuple(sorted((("service", SERVICE), *labels)))


# the marker after each step, as each writer makes it (ready.py): the play, the boot validator, its answer check
VALIDATED = ready.next_marker({}, "validated", "compiled", "2026-12-06T10:00:00Z", STATE)
SERVING = ready.next_marker(VALIDATED, "serving", "answered", "2026-12-06T10:05:00Z", STATE)
FAILED = ready.next_marker(SERVING, "failed", "smoke failed: nvcc", "2026-12-06T11:00:00Z", STATE)
OVERRIDDEN = ready.next_marker(SERVING, "overridden", "90-local.conf sets CUDA_HOME", "2026-12-06T12:00:00Z")
BOOT = ready.marker(
    False,
    "compiled; waiting",
    "2026-12-06T13:00:00Z",
    "d1",
    "/opt/sglang/venvs/a",
    TOOLKIT,
    "12.0f",
    VERSIONS,
    {},
    SERVING,
    source="boot validation (x)",
    phase="validated",
)
ANSWERED = ready.after_answer(BOOT, True, "sampled request answered", "2026-12-06T13:02:00Z", "x")
SILENT = ready.after_answer(BOOT, False, "no answer in 120 s", "2026-12-06T13:02:00Z", "x")

T10, T1005, T13, T1302 = 1796551200, 1796551500, 1796562000, 1796562120  # the marker times above, in Unix time


@pytest.mark.parametrize(
    "marker,is_ready,phase,validated,answered",
    [
        (VALIDATED, 0, "validated", T10, None),  # restarted: ready once it answered
        (SERVING, 1, "serving", T10, T1005),
        (FAILED, 0, "failed", T10, T1005),  # the rollback's: the last validation and answer stay
        (OVERRIDDEN, 0, "overridden", T10, T1005),
        (BOOT, 0, "validated", T13, T1005),  # the boot validator's, before the answer
        (ANSWERED, 1, "serving", T13, T1302),  # its answer check's
        (SILENT, 0, "not serving", T13, T1005),
    ],
)
def test_the_file_says_what_the_marker_says(marker, is_ready, phase, validated, answered):
    samples, types = parse(textfile.render(marker, SERVICE))
    assert samples[("blackwell_inference_ready", *svc())] == is_ready
    assert {p: samples[("blackwell_inference_phase", *svc(("phase", p)))] for p in ready.PHASES} == {p: int(p == phase) for p in ready.PHASES}
    assert samples[("blackwell_inference_flashinfer_info", ("archs", "12.0f"), ("service", SERVICE), ("verdict", "ACCEPTED"), ("version", "0.7.4"))] == 1
    assert samples[("blackwell_inference_cuda_info", ("cuda_home", "/usr/local/cuda-13.0"), ("service", SERVICE), ("version", "13.0"))] == 1
    assert samples[("blackwell_inference_last_validation_timestamp_seconds", *svc())] == validated
    assert samples.get(("blackwell_inference_last_answer_timestamp_seconds", *svc())) == answered
    assert set(types.values()) == {"gauge"}


def test_no_marker_is_not_ready_with_no_phase_and_no_times():
    for marker in (None, {}):
        samples, _types = parse(textfile.render(marker, SERVICE))
        assert samples[("blackwell_inference_ready", *svc())] == 0
        assert sum(v for k, v in samples.items() if k[0] == "blackwell_inference_phase") == 0
        assert samples[("blackwell_inference_flashinfer_info", ("archs", ""), ("service", SERVICE), ("verdict", "NONE"), ("version", ""))] == 1
        assert not [k for k in samples if k[0].endswith("_timestamp_seconds")]


def test_a_marker_of_before_without_the_times_has_none_and_labels_are_escaped():
    old = {k: v for k, v in SERVING.items() if k not in ("validated_at", "answered_at")}
    old["toolkit"] = {"cuda_home": '/opt/cu"da\\13\n', "cuda_version": "13.0"}
    samples, _types = parse(textfile.render(old, SERVICE))
    assert not [k for k in samples if k[0].endswith("_timestamp_seconds")]
    assert samples[("blackwell_inference_cuda_info", ("cuda_home", '/opt/cu"da\\13\n'), ("service", SERVICE), ("version", "13.0"))] == 1


@pytest.mark.parametrize(
    "directory,service,path",
    [
        ("/var/lib/node_exporter/textfile_collector", "sglang-k26.service", "/var/lib/node_exporter/textfile_collector/blackwell_inference_sglang-k26.prom"),
        ("/srv/tf", "sglang-eagle3.service", "/srv/tf/blackwell_inference_sglang-eagle3.prom"),  # one file per service
        ("", "sglang.service", ""),  # off
        (None, "sglang.service", ""),
    ],
)
def test_each_service_has_its_own_file_and_none_when_off(directory, service, path):
    assert textfile.path(directory, service) == path
    assert textfile.document(SERVING, service, directory) == {"path": path, "text": textfile.render(SERVING, service)}


def test_the_file_is_replaced_whole_0644_in_its_own_directory(tmp_path, monkeypatch):
    target = str(tmp_path / "tf" / textfile.filename(SERVICE))
    renames = []
    real_replace = os.replace

    def replace(src, dst):
        renames.append((os.path.dirname(src), dst, stat.S_IMODE(os.stat(src).st_mode)))
        return real_replace(src, dst)

    monkeypatch.setattr(textfile.os, "replace", replace)
    old_umask = os.umask(0o077)
    try:
        textfile.write(target, textfile.render(VALIDATED, SERVICE))  # the directory is made
        textfile.write(target, textfile.render(SERVING, SERVICE))
    finally:
        os.umask(old_umask)
    assert renames == [(str(tmp_path / "tf"), target, 0o644)] * 2
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o644
    assert os.listdir(tmp_path / "tf") == [os.path.basename(target)]  # no temporary file left
    with open(target) as fh:
        samples, _types = parse(fh.read())
    assert samples[("blackwell_inference_ready", *svc())] == 1
