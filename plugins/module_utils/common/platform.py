# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which hosts the collection serves: what its roles need of a host (apt and dpkg, systemd, the Python its modules
and boot validator are run with), and what it claims (what the lab proves: Debian 12 bookworm, 13 trixie)."""

from __future__ import annotations

MIN_PYTHON = (3, 11)
PROVEN = "Debian 12 (bookworm) and 13 (trixie)"


def refusal(facts):
    """None when the host can be served, else one sentence naming every reason. `facts` is ansible_facts (gather_subset
    min is enough): os_family, distribution, distribution_version, service_mgr, python.version."""
    facts = facts if isinstance(facts, dict) else {}
    if not facts.get("os_family"):
        return "no facts about this host: gather facts (gather_subset: min is enough) before the roles run"
    reasons = []
    if facts.get("os_family") != "Debian":
        reasons.append("its OS family is %s, not Debian (apt, dpkg and update-alternatives are what the roles drive)" % facts["os_family"])
    if facts.get("service_mgr") != "systemd":
        reasons.append("its service manager is %s, not systemd (units, drop-ins and the boot validation)" % (facts.get("service_mgr") or "unknown"))
    python = (facts.get("python") or {}).get("version") or {}
    have = (python.get("major"), python.get("minor")) if isinstance(python, dict) else ()
    if not all(isinstance(x, int) for x in have) or have < MIN_PYTHON:
        shown = "%s.%s" % have if all(isinstance(x, int) for x in have) else "unknown"
        reasons.append("its Python (%s) is older than %d.%d, which the modules and the boot validator run on" % (shown, *MIN_PYTHON))
    if not reasons:
        return None
    host = "%s %s" % (facts.get("distribution") or "an unknown distribution", facts.get("distribution_version") or "")
    return (
        "Refused before any change: this host runs %s, and %s. blackwell.inference serves Debian-family hosts with systemd and Python >= %d.%d (proven on %s)."
        % (
            host.strip(),
            "; ".join(reasons),
            MIN_PYTHON[0],
            MIN_PYTHON[1],
            PROVEN,
        )
    )
