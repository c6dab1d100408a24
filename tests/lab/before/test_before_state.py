"""ct200's before-state, as molecule's prepare left it (the seeds' incident)."""

LAB_READ_ONLY = True  # reads, or asserts that its runs changed nothing: the next file needs no reset


def test_cuda_12_8_owns_usr_local_cuda_through_alternatives(host, run):
    assert host.package("cuda-toolkit-12-8").is_installed
    assert not host.package("cuda-toolkit-13-0").is_installed
    assert host.file("/usr/local/cuda").is_symlink
    assert host.file("/usr/local/cuda").linked_to == "/usr/local/cuda-12.8"
    assert run("readlink /usr/local/cuda").strip() == "/etc/alternatives/cuda"
    assert "Status: auto" in run("update-alternatives --query cuda")
    assert host.file("/etc/ld.so.conf.d/988_cuda-12.conf").exists


def test_old_venv_holds_a_strict_band_flashinfer(host, run):
    assert host.file("/root/venv_sglang211/pyvenv.cfg").exists
    meta = run("cat /root/venv_sglang211/lib/python3*/site-packages/flashinfer_python-0.7.0.dist-info/METADATA")
    assert "Name: flashinfer-python" in meta and "Version: 0.7.0" in meta


def test_unit_is_in_the_state_that_crashed(host, run):
    svc = host.service("sglang-k26.service")
    assert svc.is_enabled and not svc.is_running
    assert run("systemctl show -p Result --value sglang-k26.service").strip() == "exit-code"
    env = run("systemctl show -p Environment --value sglang-k26.service")
    assert "PATH=/usr/local/cuda/bin:" in env
