# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: sglang_service_environment
short_description: The SGLang service's environment, derived from the measured facts
version_added: "0.1.0"
description:
  - Builds the environment of the unit - C(CUDA_HOME) and C(PATH) of the chosen toolkit, C(FLASHINFER_CUDA_ARCH_LIST),
    C(FLASHINFER_WORKSPACE_BASE) and C(SGLANG_CACHE_DIR) - plus optional C(FLASHINFER_JIT_BUILD_LOG), C(LD_LIBRARY_PATH)
    and extra variables (which may not override the derived ones).
author:
  - Blackwell Inference maintainers (@blackwell-inference)
positional: venv, cache_dir, archs, build_log, ld_library_path, extra
options:
  _input:
    description: The toolkit's home, e.g. C(/usr/local/cuda-13.0).
    type: str
    required: true
  venv:
    description: The venv the service runs from.
    type: str
    required: true
  cache_dir:
    description: Persistent cache directory (FlashInfer's workspace base).
    type: str
    required: true
  archs:
    description: C(FLASHINFER_CUDA_ARCH_LIST), e.g. C(12.0a).
    type: str
    required: true
  build_log:
    description: C(FLASHINFER_JIT_BUILD_LOG) path, empty for none.
    type: str
    default: ""
  ld_library_path:
    description: Entries of C(LD_LIBRARY_PATH), empty for none.
    type: list
    elements: str
    default: []
  extra:
    description: More variables.
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Environment
  ansible.builtin.debug:
    msg: "{{ '/usr/local/cuda-13.0' | blackwell.inference.sglang_service_environment('/opt/sglang/current', '/var/cache/sglang', '12.0a') }}"
"""

RETURN = r"""
_value:
  description: Variable name to value.
  type: dict
"""

from ansible.errors import AnsibleFilterError  # noqa: E402 - after the documentation, as in every plugin

from ansible_collections.blackwell.inference.plugins.module_utils import sglang_service  # noqa: E402


def _guard(func):
    def wrapped(*args, **kw):
        try:
            return func(*args, **kw)
        except ValueError as exc:
            raise AnsibleFilterError(str(exc)) from exc

    return wrapped


def verdict(smoke, ready_without_launch):
    ready, reason = sglang_service.verdict(bool((smoke or {}).get("failed")), smoke, ready_without_launch)
    return {"ready": ready, "reason": reason}


def needs_validation(marker, digest):
    needed, why = sglang_service.needs_validation(marker, digest)
    return {"needed": needed, "why": why}


class FilterModule:
    def filters(self):
        return {
            "sglang_service_environment": _guard(sglang_service.environment),
            "sglang_service_arch_list": _guard(sglang_service.arch_list),
            "sglang_service_systemd_quote": _guard(sglang_service.systemd_quote),
            "sglang_service_digest": sglang_service.inputs_digest,
            "sglang_service_verdict": verdict,
            "sglang_service_needs_validation": needs_validation,
            "sglang_service_marker": sglang_service.marker,
        }
