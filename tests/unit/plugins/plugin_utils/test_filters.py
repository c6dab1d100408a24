"""The filters' shared guard: a module_utils refusal (ValueError) reaches the operator as Ansible's filter error."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.blackwell.inference.plugins.module_utils.cuda import plan as cuda_plan
from ansible_collections.blackwell.inference.plugins.plugin_utils.filters import guard


def test_a_refusal_becomes_a_filter_error_with_its_message():
    with pytest.raises(AnsibleFilterError, match=r"is not a full CUDA release X\.Y\.Z"):
        guard(cuda_plan.home)(["13.0"])


def test_a_result_and_other_errors_pass_through():
    assert guard(cuda_plan.home)(["13.0.2"], "/opt") == "/opt/cuda-13.0"

    def broken(_x):
        raise KeyError("not a refusal")

    with pytest.raises(KeyError):
        guard(broken)(1)
