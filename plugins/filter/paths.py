# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

# Each filter is documented in its own <name>.yml beside this file (ansible-doc -t filter).
from ansible.errors import AnsibleFilterError

from ansible_collections.blackwell.inference.plugins.plugin_utils.filters import module


def pending(entries, observed):
    paths = module("common.paths")
    try:
        return paths.pending(list(entries), dict(observed or {}))
    except paths.PathsError as exc:
        raise AnsibleFilterError(str(exc)) from exc


class FilterModule:
    def filters(self):
        return {"paths_pending": pending}
