"""The spellings of a CUDA arch (cuda_arch), each from and to (major, minor, suffix)."""

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.cuda import arch as cuda_arch
from ansible_collections.blackwell.inference.plugins.module_utils.flashinfer import jit_smoke
from ansible_collections.blackwell.inference.plugins.module_utils.flashinfer import rules as flashinfer_rules
from ansible_collections.blackwell.inference.plugins.module_utils.service import settings as sglang_service
from ansible_collections.blackwell.inference.plugins.module_utils.sglang import rules as sglang_rules


@pytest.mark.parametrize(
    ("parts", "entry", "target", "nvcc"),
    [
        ((12, 0, "a"), "12.0a", "120a", "sm_120a"),
        ((12, 0, "f"), "12.0f", "120f", "sm_120f"),
        ((12, 1, "a"), "12.1a", "121a", "sm_121a"),
        ((10, 0, "a"), "10.0a", "100a", "sm_100a"),
        ((9, 0, "a"), "9.0a", "90a", "sm_90a"),
        ((8, 9, ""), "8.9", "89", "sm_89"),
    ],
)
def test_every_spelling_round_trips(parts, entry, target, nvcc):
    assert (cuda_arch.entry(*parts), cuda_arch.target(*parts), cuda_arch.nvcc(*parts)) == (entry, target, nvcc)
    assert cuda_arch.parse_entry(entry) == cuda_arch.parse_target(target) == cuda_arch.parse_nvcc(nvcc) == parts


@pytest.mark.parametrize(
    ("text", "nvcc"),
    [("12.0a", "sm_120a"), ("12.0", "sm_120a"), ("12.0f", "sm_120f"), ("9.0", "sm_90a"), ("8.9", "sm_89"), (" 10.0 ", "sm_100a")],
)
def test_nvcc_for_an_entry_or_a_compute_capability(text, nvcc):
    assert cuda_arch.nvcc_for_entry(text) == nvcc == jit_smoke.nvcc_arch(text)


@pytest.mark.parametrize(
    ("parse", "text", "words"),
    [
        (cuda_arch.parse_entry, "120a", "is not MAJOR.MINOR[a|f]"),
        (cuda_arch.parse_entry, "12.0x", "is not MAJOR.MINOR[a|f]"),
        (cuda_arch.parse_target, "12.0a", "is not FlashInfer's MAJORMINOR[a|f] spelling"),
        (cuda_arch.parse_nvcc, "compute_120a", "is not sm_MAJORMINOR[a|f]"),
        (cuda_arch.parse_nvcc, "sm_1", "is not sm_MAJORMINOR[a|f]"),
    ],
)
def test_a_wrong_spelling_is_refused_by_name(parse, text, words):
    with pytest.raises(ValueError, match=r"\[a\|f\]"):
        parse(text)
    with pytest.raises(ValueError) as exc:
        parse(text)
    assert words in str(exc.value)


def test_the_components_spell_through_it():
    # FlashInfer's targets -> its arch list, sorted by (major, minor, suffix)
    assert cuda_arch.entries_for_targets(["120a", "90a", "120a"]) == "9.0a 12.0a" == sglang_service.arch_list(["90a", "120a"])
    # FlashInfer's own (major, 'minor[a|f]') model
    assert [flashinfer_rules.arch_name(a) for a in [(12, "0a"), (12, "0f"), (8, "9"), (10, "3a")]] == ["120a", "120f", "89", "103a"]
    # SGLang's per-worker rule: the arch-specific code from 9.0 on
    assert [sglang_rules.worker_arch_list(cc) for cc in ("12.0", "9.0", "8.9")] == ["12.0a", "9.0a", "8.9"]


@pytest.mark.parametrize(
    ("archs", "refused"),
    [
        ([], []),
        (None, []),
        (["sm_120a", "sm_120f", "sm_89", "sm_100a"], []),
        (["compute_120"], ["compute_120"]),
        (["sm_120a", "sm_5", "120a", "sm_120x", "12.0a"], ["sm_5", "120a", "sm_120x", "12.0a"]),
    ],
)
def test_nvcc_refusals_are_what_parse_nvcc_refuses(archs, refused):
    assert cuda_arch.nvcc_refusals(archs) == refused
    for text in archs or []:
        if text in refused:
            with pytest.raises(ValueError):
                cuda_arch.parse_nvcc(text)
        else:
            cuda_arch.parse_nvcc(text)
