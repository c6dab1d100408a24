# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reads of the host the sglang_service role decides from, under the play's lock, for the service_probe module:
the ready marker as it was before this run, the toolkit's nvcc, the JIT workspaces whose venv is gone, and whether
a last good snapshot is already there."""

from __future__ import annotations

import json
import os

from ansible_collections.blackwell.inference.plugins.module_utils.service import ready


def read_marker(path):
    """(marker, error): the ready marker (a local fact, JSON) as a dict; {} when there is none, and {} with the
    reason when it cannot be read or is not a JSON object (a host without a readable marker is not ready, so it is
    validated again and the marker rewritten)."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        return {}, None
    except OSError as exc:
        return {}, "%s cannot be read: %s" % (path, exc)
    data, damage = ready.parse_marker(text)
    return (data, None) if damage is None else ({}, "%s is %s" % (path, damage))


def gone_venv_links(jit_dir):
    """The <jit_dir>/<workspace>/venv links that no longer resolve (their venv was pruned), sorted; what
    `find <jit_dir> -mindepth 2 -maxdepth 2 -name venv -xtype l` prints."""
    try:
        names = sorted(os.listdir(jit_dir))
    except (FileNotFoundError, NotADirectoryError):
        return []
    gone = []
    for name in names:
        link = os.path.join(jit_dir, name, "venv")
        if os.path.islink(link) and not os.path.exists(link):
            gone.append(link)
    return gone


def snapshot_state(store, manifest="manifest.json"):
    """{exists, error}: whether the last good snapshot's manifest is there and reads as a JSON object."""
    path = os.path.join(store, manifest)
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        return {"exists": False, "error": None}
    except (OSError, ValueError) as exc:
        return {"exists": True, "error": "%s: %s" % (path, exc)}
    return {"exists": True, "error": None if isinstance(data, dict) else "%s is not a JSON object" % path}


def look_refusal(marker, venv_now):
    """Why the probe does not look at the running service (None: it looks).

    Its look can stand for the health check only on a host whose ready marker vouches for the state that runs; and a
    sampled request sent to the running service after its venv link moved (this run switched it) makes that service
    load code from the new venv (its sys.prefix is the link), which may rebuild its JIT workspace with the new venv's
    paths. So it looks only when the marker's validation passed (ready.validation_passed: serving, or validated and
    waiting for an answer) and was written for the venv the link points at now (venv_now: the link's realpath)."""
    marker = marker or {}
    if not ready.validation_passed(marker):
        return "the ready marker's validation did not pass"
    if venv_now is not None and marker.get("venv") != venv_now:
        return "the venv link points at %s, not at the validated %s" % (venv_now, marker.get("venv"))
    return None
