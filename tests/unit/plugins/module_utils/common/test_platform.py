"""Which hosts the roles serve: Debian family, systemd, Python >= 3.11 (facts as gather_subset=min gives them)."""

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.common import platform as hp


def facts(distribution="Debian", version="12.12", family="Debian", mgr="systemd", py=(3, 11)):
    return {
        "distribution": distribution,
        "distribution_version": version,
        "os_family": family,
        "service_mgr": mgr,
        "python": {"version": {"major": py[0], "minor": py[1], "micro": 2, "releaselevel": "final", "serial": 0}},
    }


@pytest.mark.parametrize(
    "host",
    [
        facts(),  # ct200: bookworm, Python 3.11
        facts(version="13.1", py=(3, 13)),  # trixie
        facts(distribution="Ubuntu", version="24.04", py=(3, 12)),  # Debian family: served, not claimed
    ],
)
def test_served(host):
    assert hp.refusal(host) is None


@pytest.mark.parametrize(
    "host,reasons",
    [
        (facts(distribution="Ubuntu", version="22.04", py=(3, 10)), ["its Python (3.10) is older than 3.11"]),
        (facts(distribution="RedHat", version="9.4", family="RedHat", py=(3, 9)), ["its OS family is RedHat, not Debian", "its Python (3.9) is older"]),
        (facts(mgr="sysvinit"), ["its service manager is sysvinit, not systemd"]),
        (facts(mgr="openrc", family="Alpine", distribution="Alpine", version="3.20"), ["OS family is Alpine", "service manager is openrc"]),
    ],
)
def test_refused_with_every_reason(host, reasons):
    msg = hp.refusal(host)
    assert msg.startswith("Refused before any change: this host runs %s %s" % (host["distribution"], host["distribution_version"]))
    assert all(r in msg for r in reasons), msg
    assert "proven on Debian 12 (bookworm) and 13 (trixie)" in msg


def test_without_facts():
    assert "gather facts" in hp.refusal({})
