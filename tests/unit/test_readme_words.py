"""The README is for a newcomer: a "Before you start" section with what the roles need and never install (the
driver, the model weights, the network, the OS list as tested), none of the project's internal words (each of them a
row of the one glossary, in docs/operations.md), and its links into docs/operations.md land on a heading there."""

import glob
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# words a newcomer cannot look up in the README (issue 48), as a regular expression each, and the glossary row that
# explains the ones the output or the docs still use
INTERNAL = {
    r"seeds'? incident": None,
    r"drop-in mode": "drop-in mode",
    r"ready marker": "ready marker",
    r"last good state": "last good state",
    r"check play": "check play",
    r"lock's call": "the lock, the lock's call",
    r"heartbeat": "heartbeat",
    r"JIT-ready": "JIT-ready",
    r"\bslim\b": "slim",
    r"\b12\.?0[af]\b|sm_120[af]": "`120a`, `120f`, `12.0a`, `12.0f`",
    r"allowed by policy": "allowed by policy",
    r"targets 45 and 30": None,
    r"preload": None,
    r"phase tags|see below": "step tags",
}


def read(*path):
    with open(os.path.join(ROOT, *path), encoding="utf-8") as fh:
        return fh.read()


def section(text, heading):
    match = re.search(r"^## %s\n(.*?)(?=^## |\Z)" % re.escape(heading), text, re.M | re.S)
    assert match, "no section '## %s'" % heading
    return match.group(1)


def glossary_rows():
    rows = {}
    for line in section(read("docs", "operations.md"), "Glossary").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == 2 and cells[0] not in ("word", "---"):
            rows[cells[0]] = cells[1]
    return rows


@pytest.mark.parametrize("pattern", sorted(INTERNAL))
def test_the_readme_is_free_of_internal_words(pattern):
    hits = [line for line in read("README.md").splitlines() if re.search(pattern, line, re.I)]
    assert not hits, hits


@pytest.mark.parametrize("word", sorted(w for w in INTERNAL.values() if w))
def test_each_internal_word_the_output_uses_is_a_glossary_row(word):
    assert glossary_rows().get(word), "docs/operations.md's glossary has no row %r" % word


def test_there_is_one_glossary_table_and_it_is_in_operations():
    assert read("docs", "operations.md").count("## Glossary") == 1
    docs = ["README.md", *glob.glob(os.path.join(ROOT, "docs", "*.md")), *glob.glob(os.path.join(ROOT, "roles", "*", "README.md"))]
    others = [os.path.relpath(p, ROOT) for p in docs if "## Glossary" in read(os.path.relpath(p, ROOT))]
    assert others == ["docs/operations.md"], others
    assert len(glossary_rows()) >= 15


def test_before_you_start_says_what_the_roles_never_install():
    readme = read("README.md")
    before = section(readme, "Before you start")
    assert readme.index("## Before you start") < readme.index("## Your fleet in five steps")
    for needed in (
        "580.65",  # the driver: the oldest the R580 branch (CUDA 13.0) takes
        "open kernel module",
        "github.com/NVIDIA/ansible-role-nvidia-driver",  # NVIDIA's own role installs it
        "sglang_service_model_path",  # the weights: nothing downloads them
        "cuda_toolkit_repo_base_url",  # NVIDIA's repo
        "sglang_venv_index_url",  # the package index
        "sglang_venv_extra_index_urls",  # PyTorch's index
        "proxy",
        "Debian 12",
        "Debian 13",
    ):
        assert needed in before, needed


def test_the_readmes_links_into_operations_land_on_a_heading():
    anchors = {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-") for h in re.findall(r"^#+ (.+)$", read("docs", "operations.md"), re.M)}
    links = re.findall(r"\(docs/operations\.md#([^)]+)\)", read("README.md"))
    assert links and not [a for a in links if a not in anchors], (links, sorted(anchors))
