# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.blackwell.inference.plugins.module_utils.common import platform as host_platform

# Each filter is documented in its own <name>.yml beside this file (ansible-doc -t filter).
from ansible_collections.blackwell.inference.plugins.module_utils.fleet import summary as fleet_summary


def host_refusal(facts):
    return host_platform.refusal(facts) or ""


def host_summary(cuda, host, summaries=None):
    return fleet_summary.host_lines(host, cuda, summaries or [])


class FilterModule:
    def filters(self):
        return {"host_refusal": host_refusal, "host_summary": host_summary}
