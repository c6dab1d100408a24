# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

# Each filter is documented in its own <name>.yml beside this file (ansible-doc -t filter). Each imports its
# module_utils when called (plugin_utils/filters.py): ansible-core imports this file in every task that looks up a filter.
from ansible_collections.blackwell.inference.plugins.plugin_utils.filters import call


class FilterModule:
    def filters(self):
        return {
            # the summary
            "sglang_service_summary": call("service.plan", "summary"),
            # READY (module_utils/service/ready.py)
            "sglang_service_host_verdict": call("service.ready", "host_verdict"),
            "sglang_service_textfile": call("service.textfile", "document"),
            # a unit's value, escaped for its setting (module_utils/service/settings.py systemd_value)
            "systemd_escape": call("service.settings", "systemd_value", guarded=True),
        }
