# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The spellings of a CUDA arch, in one place (stdlib only: the boot validator imports it on the host too).

  compute capability  12.0      (nvidia-smi, cuda_facts)
  arch-list entry     12.0a     (FLASHINFER_CUDA_ARCH_LIST, TORCH_CUDA_ARCH_LIST)
  FlashInfer target   120a      (its target archs, its JIT cache directory's name)
  nvcc arch           sm_120a   (nvcc -arch / -gencode; cuda_toolkit_verify_archs)

Each is (major, minor, suffix) underneath; suffix is '' (plain), 'a' (arch-specific) or 'f' (family). Which suffix
a component picks is that component's rule (flashinfer_rules, sglang_rules), not a spelling.
"""

from __future__ import annotations

import re

_ENTRY = re.compile(r"^(\d+)\.(\d+)([af]?)$")
_TARGET = re.compile(r"^(\d+)(\d)([af]?)$")
_NVCC = re.compile(r"^sm_(\d+)(\d)([af]?)$")


def parse_entry(text):
    """'12.0a' / '12.0' (an arch-list entry, or a compute capability) -> (12, 0, 'a') / (12, 0, '')."""
    m = _ENTRY.match(str(text).strip())
    if not m:
        raise ValueError("arch %r is not MAJOR.MINOR[a|f]" % (text,))
    return int(m.group(1)), int(m.group(2)), m.group(3)


def parse_target(text):
    """FlashInfer's '120a' -> (12, 0, 'a')."""
    m = _TARGET.match(str(text))
    if not m:
        raise ValueError("target arch %r is not FlashInfer's MAJORMINOR[a|f] spelling" % (text,))
    return int(m.group(1)), int(m.group(2)), m.group(3)


def parse_nvcc(text):
    """'sm_120a' -> (12, 0, 'a')."""
    m = _NVCC.match(str(text))
    if not m:
        raise ValueError("nvcc arch %r is not sm_MAJORMINOR[a|f]" % (text,))
    return int(m.group(1)), int(m.group(2)), m.group(3)


def nvcc_refusals(texts):
    """The entries of a list of nvcc archs that are not sm_MAJORMINOR[a|f] (cuda_toolkit_verify_archs' check)."""
    return [text for text in texts or [] if not _NVCC.match(str(text))]


def entry(major, minor, suffix=""):
    """(12, 0, 'a') -> '12.0a'."""
    return "%d.%d%s" % (major, minor, suffix)


def target(major, minor, suffix=""):
    """(12, 0, 'a') -> '120a'."""
    return "%d%d%s" % (major, minor, suffix)


def nvcc(major, minor, suffix=""):
    """(12, 0, 'a') -> 'sm_120a'."""
    return "sm_%d%d%s" % (major, minor, suffix)


def nvcc_for_entry(text):
    """What nvcc builds for an arch-list entry or a compute capability: '12.0a' -> 'sm_120a'; without a suffix the
    arch-specific one from 9.0 on (a GPU's own code, as FlashInfer's and SGLang's lists give it): '12.0' -> 'sm_120a',
    '8.9' -> 'sm_89'."""
    major, minor, suffix = parse_entry(text)
    return nvcc(major, minor, suffix or ("a" if major >= 9 else ""))


def entries_for_targets(targets):
    """FlashInfer's target archs -> its FLASHINFER_CUDA_ARCH_LIST, sorted: ['120a', '90a'] -> '9.0a 12.0a'."""
    return " ".join(entry(*a) for a in sorted({parse_target(t) for t in targets}))
