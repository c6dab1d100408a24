"""Every role's meta/argument_specs.yml is the source of truth and matches defaults/main.yml exactly."""

import os
import re

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


def test_site_reads_only_the_roles_documented_results():
    # playbooks/site.yml reads a role's options and the results its argument_specs name, never a role-private variable
    with open(os.path.join(ROOT, "playbooks", "site.yml")) as fh:
        site = re.sub(r"tags: \[[^]]*\]", "", fh.read())  # the roles' tags are not variables
    private = sorted(set(re.findall(r"\b__(?:%s)_\w+" % "|".join(ROLES), site)))
    assert private == [], "site.yml reads role-private variables"
    for role in ROLES:
        main = load(role, "meta", "argument_specs.yml")["argument_specs"]["main"]
        described = " ".join(main["description"])
        for name in sorted(set(re.findall(r"(?<![\w.])%s_\w+" % role, site))):
            assert name in main["options"] or "C(%s)" % name in described, "site.yml reads %s, which %s does not document" % (name, role)
