# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.blackwell.inference.plugins.module_utils.cuda import devices as systemd_devices

# Each filter is documented in its own <name>.yml beside this file (ansible-doc -t filter).
from ansible_collections.blackwell.inference.plugins.module_utils.service import list as service_list
from ansible_collections.blackwell.inference.plugins.module_utils.service import plan as service_plan
from ansible_collections.blackwell.inference.plugins.module_utils.service import settings as sglang_service
from ansible_collections.blackwell.inference.plugins.plugin_utils.filters import guard


def verdict(smoke, ready_without_launch):
    ready, reason = sglang_service.verdict(bool((smoke or {}).get("failed")), smoke, ready_without_launch)
    return {"ready": ready, "reason": reason}


def needs_validation(marker, digest, vouched=None):
    needed, why = sglang_service.needs_validation(marker, digest, vouched)
    return {"needed": needed, "why": why}


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
            "sglang_service_plan": guard(service_plan.preflight),
            "sglang_service_files_plan": guard(service_plan.files),
            "sglang_service_probe_env": service_plan.probe_environment,
            "sglang_service_variable_refusals": service_plan.variable_refusals,
            "sglang_service_summary": service_plan.summary,
            "sglang_service_extra_services": service_list.extra_services,
            "sglang_service_host_verdict": service_list.host_verdict,
            "sglang_service_systemd_quote": guard(sglang_service.systemd_quote),
            "sglang_service_systemd_environment": guard(sglang_service.systemd_environment),
            "sglang_service_systemd_exec": guard(sglang_service.systemd_exec),
            "sglang_service_systemd_description": guard(sglang_service.systemd_description),
            "sglang_service_systemd_path": guard(sglang_service.systemd_path),
            "sglang_service_systemd_env_file_path": guard(sglang_service.systemd_env_file_path),
            "sglang_service_inputs": sglang_service.inputs,
            "sglang_service_digest": sglang_service.inputs_digest,
            "sglang_service_readiness": guard(sglang_service.readiness),
            "sglang_service_verdict": verdict,
            "sglang_service_needs_validation": needs_validation,
            "sglang_service_revalidation": sglang_service.revalidation,
            "sglang_service_health_stands": sglang_service.health_stands,
            "sglang_service_marker": guard(sglang_service.marker),
            "sglang_service_overridden_marker": sglang_service.overridden,
            "sglang_service_rollback_note": sglang_service.rollback_note,
            "sglang_service_rollback_outcome": sglang_service.rollback_outcome,
            "sglang_service_last_good_policy": sglang_service.last_good_policy,
            "sglang_service_fingerprint_checksums": service_plan.fingerprint_checksums,
            "sglang_service_fingerprint": service_plan.fingerprint,
            "sglang_service_device_allow": device_allow,
            "sglang_service_device_refusal": device_refusal,
        }
