"""After converge: CUDA 13.0 beside 12.8, pinned, held, /usr/local/cuda untouched, a real compile."""

import shlex

import pytest

from ..conftest import playbook

LAB_READ_ONLY = True  # reads, or asserts that its runs changed nothing: the next file needs no reset

SLIM_13_0 = {
    "cuda-nvcc-13-0": "13.0.88-1",
    "cuda-crt-13-0": "13.0.88-1",
    "cuda-nvvm-13-0": "13.0.88-1",
    "cuda-cudart-13-0": "13.0.96-1",
    "cuda-cudart-dev-13-0": "13.0.96-1",
    "cuda-cccl-13-0": "13.0.85-1",
    "libcurand-13-0": "10.4.0.35-1",
    "libcurand-dev-13-0": "10.4.0.35-1",
    "cuda-nvrtc-13-0": "13.0.88-1",
    "cuda-nvrtc-dev-13-0": "13.0.88-1",
    "cuda-driver-dev-13-0": "13.0.96-1",
    "cuda-toolkit-13-0-config-common": "13.0.96-1",
}


@pytest.mark.parametrize("name,version", sorted(SLIM_13_0.items()))
def test_slim_components_pinned_and_held(host, name, version):
    pkg = host.package(name)
    assert pkg.is_installed and pkg.version == version
    assert name in host.run("apt-mark showhold").stdout.split()


def test_no_full_toolkit_no_driver(host, run):
    assert not host.package("cuda-toolkit-13-0").is_installed
    assert run("dpkg-query -W -f '${Package}\\n' 'nvidia-*' 'libnvidia-*' 'cuda-drivers*' 2>/dev/null || true").strip() == ""


def test_12_8_untouched_and_still_default(host, run):
    assert host.package("cuda-toolkit-12-8").is_installed
    assert host.file("/usr/local/cuda").linked_to == "/usr/local/cuda-12.8"
    assert host.file("/usr/local/cuda-12").linked_to == "/usr/local/cuda-12.8"
    assert host.file("/usr/local/cuda-13").linked_to == "/usr/local/cuda-13.0"
    query = run("update-alternatives --query cuda")
    assert "Status: manual" in query and "Value: /usr/local/cuda-12.8" in query
    assert "release 12.8, V12.8.93" in run("/usr/local/cuda/bin/nvcc --version")
    # 12.8 programs still get 12.8's runtime from the library search path
    assert "/usr/local/cuda/targets/x86_64-linux/lib/libcudart.so.12" in run("ldconfig -p | grep 'libcudart.so.12 '")


def test_installed_nvcc_13_0_compiles_sm_120a(run):
    script = (
        "set -e; d=$(mktemp -d); cd $d; "
        "printf '#include <curand_kernel.h>\\n__global__ void saxpy(int n, float a, const float *x, float *y)"
        "{int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i];}\\n' > k.cu; "
        "/usr/local/cuda-13.0/bin/nvcc -arch=sm_120a -cubin -o k.cubin k.cu; od -An -c -N4 k.cubin | tr -d ' '; "
        "test -s /usr/local/cuda-13.0/lib64/stubs/libcuda.so; cd /; rm -rf $d"
    )
    assert "177ELF" in run("bash -c %s" % shlex.quote(script)).replace("\\", "")


def test_verify_only_run_changes_nothing(host_state):
    before = host_state()
    rc, out, recap = playbook("--tags", "verify")
    assert rc == 0 and recap.get("changed") == 0, out[-3000:]
    assert "/usr/local/cuda-13.0: CUDA 13.0.88, JIT-ready: yes, compiles: sm_120a" in out
    assert host_state() == before
