# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

# The support values of the modules' attributes; their descriptions come from ansible.builtin.action_common_attributes
# (name both: `ansible.builtin.action_common_attributes`, then `blackwell.inference.attributes` or its named parts).
# The parts do not overlap, so the order they are named in does not matter.
_CHECK_MODE_FULL = """
  check_mode:
    support: full"""
_DIFF_NONE = """
  diff_mode:
    support: none"""
_DIFF_FULL = """
  diff_mode:
    support: full"""
_POSIX = """
  platform:
    platforms: posix"""
_DEBIAN = """
  platform:
    platforms: debian"""
_FACTS = """
  facts:
    support: full"""


class ModuleDocFragment:
    # most of the collection's modules: an honest check mode, no diff, any POSIX host
    DOCUMENTATION = "attributes:" + _CHECK_MODE_FULL + _DIFF_NONE + _POSIX

    CHECK_MODE_FULL = "attributes:" + _CHECK_MODE_FULL
    DIFF_NONE = "attributes:" + _DIFF_NONE
    DIFF_FULL = "attributes:" + _DIFF_FULL
    POSIX = "attributes:" + _POSIX
    DEBIAN = "attributes:" + _DEBIAN
    # with ansible.builtin.action_common_attributes.facts: the module returns ansible_facts
    FACTS = "attributes:" + _FACTS
