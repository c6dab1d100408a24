"""Where the site playbook reads the rolling settings from (fleet/rolling.py): rolling.yml in the inventory's directory,
found from the inventory sources alone (play keywords are worked out before any host's variables exist). The plays
taking them: tests/integration/test_rolling_settings.py."""

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.fleet import rolling


def layout(tmp_path):
    for d in ("inv", "other", "bare"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "hosts.yml").write_text("inference: {hosts: {a: {}}}\n")
    (tmp_path / "inv" / "rolling.yml").write_text("blackwell_inference_serial: 3\n")
    (tmp_path / "other" / "rolling.yml").write_text("blackwell_inference_serial: 2\n")


@pytest.mark.parametrize(
    "sources,expected",
    [
        (["inv/hosts.yml"], "inv/rolling.yml"),  # -i inv/hosts.yml (or ansible.cfg's inventory)
        (["inv"], "inv/rolling.yml"),  # -i inv/: in it
        (["bare/hosts.yml", "other/hosts.yml"], "other/rolling.yml"),  # the first source that has one
        (["inv/hosts.yml", "other/hosts.yml"], "inv/rolling.yml"),
        (["bare/hosts.yml"], "bare/rolling.yml"),  # none: the first's path, which does not exist (the playbook's defaults)
        (["ct200,ct201,"], rolling.FILENAME),  # a host list has no directory: the playbook's own vars/rolling.yml
        ([], rolling.FILENAME),
        (None, rolling.FILENAME),
    ],
)
def test_the_rolling_file_is_beside_the_inventory(tmp_path, monkeypatch, sources, expected):
    layout(tmp_path)
    monkeypatch.chdir(tmp_path)
    got = rolling.vars_file(sources)
    assert got == (str(tmp_path / expected) if "/" in expected else expected)
