# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    # The support values of the modules' attributes; their descriptions come from
    # ansible.builtin.action_common_attributes (name it first). The named parts do not overlap, so the order they are
    # named in does not matter; a module states only what none of them says (host_lock's action, paths' diff details).

    # most of the collection's modules: an honest check mode, no diff, any POSIX host
    DOCUMENTATION = r"""
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
"""

    CHECK_MODE_FULL = r"""
attributes:
  check_mode:
    support: full
"""

    DIFF_NONE = r"""
attributes:
  diff_mode:
    support: none
"""

    DIFF_FULL = r"""
attributes:
  diff_mode:
    support: full
"""

    POSIX = r"""
attributes:
  platform:
    platforms: posix
"""

    DEBIAN = r"""
attributes:
  platform:
    platforms: debian
"""

    # with ansible.builtin.action_common_attributes.facts: the module returns ansible_facts
    FACTS = r"""
attributes:
  facts:
    support: full
"""
