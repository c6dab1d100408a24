"""Fleets are run from an operator account with sudo, not as root (issue 14 item 1): on the converged ct200, site.yml
with only `-e ansible_user=ops` changes nothing, and a verify-only run passes. The lab's `ops` account has sudo without
a password and the lab key (tests/fixtures/lab/build_rootfs.sh, labctl.sh); every other lab test connects as root.
"""

from ..conftest import playbook

LAB_READ_ONLY = True  # asserts that its runs changed nothing

OPS = {"ansible_user": "ops"}


def accepted_logins(run, since):
    return run("journalctl --since=@%d --no-pager -o cat _COMM=sshd | grep -o 'Accepted publickey for [a-z]*' | sort -u || true" % since)


def test_an_operator_account_with_sudo_runs_the_play_and_changes_nothing(run):
    assert run("id -un ops && sudo -l -U ops | grep -c NOPASSWD").split() == ["ops", "1"]
    since = int(run("date +%s"))  # nothing else logs in as ops
    rc, out, recap = playbook(extra_vars=OPS)
    assert rc == 0 and recap["changed"] == 0, out[-4000:]
    assert "READY: compiled, JIT cache warm (sampling)" in out
    # it really connected as ops (and escalated: the role's reads of root-only files passed)
    assert "Accepted publickey for ops" in accepted_logins(run, since)
    rc, out, recap = playbook("--tags", "verify", extra_vars=OPS)
    assert rc == 0 and recap["changed"] == 0, out[-4000:]
    assert "READY: compiled, JIT cache warm (sampling)" in out
