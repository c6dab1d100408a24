# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

# Each filter is documented in its own <name>.yml beside this file (ansible-doc -t filter); each imports its module_utils
# when called (plugin_utils/filters.py).
from ansible_collections.blackwell.inference.plugins.plugin_utils.filters import module


def host_summary(cuda, host, summaries=None):
    return module("fleet.summary").host_lines(host, cuda, summaries or [])


def rolling_vars_file(sources):
    return module("fleet.rolling").vars_file(sources)


class FilterModule:
    def filters(self):
        return {"host_summary": host_summary, "rolling_vars_file": rolling_vars_file}
