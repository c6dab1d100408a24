# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ready marker as node_exporter's textfile collector reads it: one file per service in the collector's directory
(sglang_service_textfile_dir), written wherever the marker is (the play's marker step, the boot validator and its
answer check), so a fleet's Prometheus can alert on a host that is not ready, or drain it.

Per service: ready (0/1), the phase (one series per phase, 1 for the marker's), FlashInfer's verdict and version, the
CUDA the service uses, and the times of the last passed validation and of the last answer (absent until there was
one). The boot validator runs this file on the host (copied into its package tree): stdlib and module_utils only."""

from __future__ import annotations

import os
import re

from ansible_collections.blackwell.inference.plugins.module_utils.service import ready

PREFIX = "blackwell_inference_"
_NAME = re.compile(r"[^A-Za-z0-9_.@-]")


def filename(service):
    """The service's file in the collector's directory: blackwell_inference_<unit name without .service>.prom."""
    name = str(service)
    name = name[: -len(".service")] if name.endswith(".service") else name
    return "%s%s.prom" % (PREFIX, _NAME.sub("_", name))


def path(directory, service):
    """The service's file under `directory`; '' when the textfile collector is off (an empty directory)."""
    return os.path.join(str(directory), filename(service)) if directory else ""


def _label(value):
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(pairs):
    return "{%s}" % ",".join('%s="%s"' % (key, _label(value)) for key, value in pairs)


def flashinfer(marker):
    """(verdict, version): ACCEPTED when a validation chose FlashInfer's archs for the service's CUDA (the play's plan
    refuses before writing a marker otherwise), NONE when the marker names no archs (no marker yet)."""
    marker = marker or {}
    versions = marker.get("versions") or {}
    version = versions.get("flashinfer-python") or versions.get("flashinfer") or ""
    return ("ACCEPTED" if marker.get("archs") else "NONE"), version


def render(marker, service, checked=None):
    """The textfile's text for one service (its unit) from its ready marker (an empty dict or None: not ready, no phase)
    and the check timer's last look (checked: {time, answered}; None: no look): when it looked, and the answer it saw
    as the last answer's time."""
    marker = marker or {}
    svc = str(service)
    verdict, fi_version = flashinfer(marker)
    toolkit = marker.get("toolkit") or {}
    metrics = [
        ("ready", "1 when the service is READY (its ready marker), else 0.", [((("service", svc),), 1 if marker.get("ready") is True else 0)]),
        (
            "phase",
            "The ready marker's phase: 1 for the marker's, 0 for the others.",
            [((("service", svc), ("phase", p)), 1 if marker.get("phase") == p else 0) for p in ready.PHASES],
        ),
        (
            "flashinfer_info",
            "FlashInfer's verdict on the service's CUDA (ACCEPTED, or NONE without a validation), its version and archs.",
            [((("service", svc), ("verdict", verdict), ("version", fi_version), ("archs", marker.get("archs") or "")), 1)],
        ),
        (
            "cuda_info",
            "The CUDA toolkit the service uses (CUDA_HOME) and its version.",
            [((("service", svc), ("cuda_home", toolkit.get("cuda_home") or ""), ("version", toolkit.get("cuda_version") or "")), 1)],
        ),
    ]
    checked = checked or {}
    answered_at = checked.get("time") if checked.get("answered") else marker.get("answered_at")
    for name, stamp, help_text in (
        ("last_validation_timestamp_seconds", marker.get("validated_at"), "When a validation of the service last passed (Unix time)."),
        ("last_answer_timestamp_seconds", answered_at, "When the service last answered (Unix time): after a start, or to the check timer."),
        ("last_check_timestamp_seconds", checked.get("time"), "When the check timer last looked at the service (Unix time)."),
    ):
        seconds = ready.epoch(stamp)
        metrics.append((name, help_text, [((("service", svc),), seconds)] if seconds is not None else []))
    out = []
    for name, help_text, samples in metrics:
        if not samples:
            continue
        out.append("# HELP %s%s %s" % (PREFIX, name, help_text))
        out.append("# TYPE %s%s gauge" % (PREFIX, name))
        out.extend("%s%s%s %s" % (PREFIX, name, _labels(labels), value) for labels, value in samples)
    return "\n".join(out) + "\n"


def document(marker, service, directory):
    """{path, text} of the service's file under `directory` (the play's copy), path '' when the collector is off."""
    return {"path": path(directory, service), "text": render(marker, service)}


def write(path_, text):
    """Replace the file whole (temp file in the same directory, 0644, then rename), so the collector never reads half
    of it; the directory is made when missing."""
    directory = os.path.dirname(path_)
    os.makedirs(directory, mode=0o755, exist_ok=True)
    tmp = os.path.join(directory, ".%s.%d.tmp" % (os.path.basename(path_), os.getpid()))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path_)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
