# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.blackwell.inference.plugins.module_utils.cuda import devices as systemd_devices

# Each filter is documented in its own <name>.yml beside this file (ansible-doc -t filter).
from ansible_collections.blackwell.inference.plugins.module_utils.service import health as service_health
from ansible_collections.blackwell.inference.plugins.module_utils.service import http as service_http
from ansible_collections.blackwell.inference.plugins.module_utils.service import list as service_list
from ansible_collections.blackwell.inference.plugins.module_utils.service import plan as service_plan
from ansible_collections.blackwell.inference.plugins.module_utils.service import ready
from ansible_collections.blackwell.inference.plugins.module_utils.service import settings as sglang_service
from ansible_collections.blackwell.inference.plugins.plugin_utils.filters import guard


def sample_refusal(request):
    """'' when the sampled request is off ({}) or samples; else why it is refused."""
    return "" if not request else service_health.sample_checked(dict(request)) or ""


def device_allow(access="rw"):
    """The units' DeviceAllow= values (module_utils/cuda/devices.py: DEVICE_ALLOW), each with access."""
    return systemd_devices.allow_entries(str(access))


def device_refusal(blackwell_cuda, source="/proc/devices", uvm_loaded=False):
    """'' when the units' DeviceAllow= rules would let CUDA open the GPUs nvidia-smi answers with; else why not."""
    facts = blackwell_cuda or {}
    return systemd_devices.refusal(facts.get("device_majors"), bool(facts.get("gpus")), source=source, uvm_loaded=bool(uvm_loaded)) or ""


class FilterModule:
    def filters(self):
        return {
            "sglang_service_environment": guard(sglang_service.environment),
            "sglang_service_arch_list": guard(sglang_service.arch_list),
            "sglang_service_arch_choice": guard(service_plan.arch_choice),
            "sglang_service_plan": guard(service_plan.plan),
            "sglang_service_probe_env": service_plan.probe_environment,
            "sglang_service_environment_refusal": service_plan.environment_refusal,
            "sglang_service_variable_refusals": service_plan.variable_refusals,
            "sglang_service_summary": service_plan.summary,
            "sglang_service_extra_services": service_list.extra_services,
            "sglang_service_host_verdict": ready.host_verdict,
            "sglang_service_systemd_quote": guard(sglang_service.systemd_quote),
            "sglang_service_systemd_environment": guard(sglang_service.systemd_environment),
            "sglang_service_systemd_exec": guard(sglang_service.systemd_exec),
            "sglang_service_systemd_description": guard(sglang_service.systemd_description),
            "sglang_service_systemd_path": guard(sglang_service.systemd_path),
            "sglang_service_systemd_env_file_path": guard(sglang_service.systemd_env_file_path),
            "sglang_service_verdict": ready.smoke_verdict,
            "sglang_service_revalidation": ready.revalidation,
            "sglang_service_health_stands": ready.health_stands,
            "sglang_service_base_url": service_http.base_url,
            "sglang_service_marker": guard(ready.next_marker),
            "sglang_service_rollback_outcome": sglang_service.rollback_outcome,
            "sglang_service_last_good_policy": sglang_service.last_good_policy,
            "sglang_service_stale_workspaces": sglang_service.stale_workspaces,
            "sglang_service_sample_refusal": sample_refusal,
            "sglang_service_fingerprint_checksums": service_plan.fingerprint_checksums,
            "sglang_service_fingerprint": service_plan.fingerprint,
            "sglang_service_device_allow": device_allow,
            "sglang_service_device_refusal": device_refusal,
        }
