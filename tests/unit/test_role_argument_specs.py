"""Every role's meta/argument_specs.yml is the source of truth and matches defaults/main.yml exactly."""

import os

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLES = sorted(d for d in os.listdir(os.path.join(ROOT, "roles")) if os.path.isdir(os.path.join(ROOT, "roles", d)))


def load(role, *path):
    with open(os.path.join(ROOT, "roles", role, *path)) as fh:
        return yaml.safe_load(fh) or {}


@pytest.mark.parametrize("role", ROLES)
def test_specs_match_defaults(role):
    options = load(role, "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    defaults = load(role, "defaults", "main.yml")
    assert sorted(options) == sorted(defaults), "argument_specs and defaults list different variables"
    for name, spec in options.items():
        assert name.startswith(role + "_"), "%s is not prefixed with the role name" % name
        assert spec.get("description"), "%s has no description" % name
        assert "default" in spec and spec["default"] == defaults[name], "%s: spec default %r != defaults/main.yml %r" % (
            name,
            spec.get("default"),
            defaults[name],
        )
        if "choices" in spec:
            values = defaults[name] if spec.get("type") == "list" else [defaults[name]]
            assert set(values) <= set(spec["choices"])


def test_there_are_roles():
    assert "cuda_toolkit" in ROLES
