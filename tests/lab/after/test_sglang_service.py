"""sglang_service on ct200: sglang-k26's environment from the facts, the JIT smoke gate, the ready marker,
boot-time revalidation. The service is the lab's stand-in for SGLang (real FlashInfer under the unit's
environment, /health). Runs after converge; the tests run in file order and each leaves ct200 ready.
"""

import hashlib
import json
import os
import re
import shlex
import subprocess

from ansible_collections.blackwell.inference.plugins.module_utils.cuda import devices as systemd_devices

from ..conftest import INVENTORY, ROOT, playbook, playbook_command, workspace
from .test_cuda_toolkit import COMPILE

UNIT = "sglang-k26.service"
DROPIN = "/etc/systemd/system/sglang-k26.service.d/50-blackwell-inference.conf"
MARKER = "/etc/ansible/facts.d/blackwell_inference.fact"
CURAND = "/usr/local/cuda-13.0/targets/x86_64-linux/include/curand.h"


def adhoc_command(module, args):
    """An ad-hoc `ansible ct200 -m module -a args` with the same settings as the playbook runs."""
    cmd, env = playbook_command()
    return [os.path.join(os.path.dirname(cmd[0]), "ansible"), "ct200", "-i", INVENTORY, "-m", module, "-a", args], env


def health(run):
    return json.loads(run("python3 -c \"import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:30000/health', timeout=5).read().decode())\""))


def marker(run):
    return json.loads(run("cat " + MARKER))


def main_pid(run):
    return run("systemctl show -p MainPID --value " + UNIT).strip()


def service_state(run):
    """What a refused, checked or verify-only run must leave exactly as it was."""
    return {
        "pid": main_pid(run),
        "started": run("systemctl show -p ExecMainStartTimestamp --value " + UNIT).strip(),
        "files": run("md5sum %s %s /etc/systemd/system/sglang-k26-validate.service /etc/blackwell-inference/*" % (DROPIN, MARKER)),
        "venv": run("readlink /opt/sglang/current"),
        "packages": run("dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev}\\n'"),
    }


def assert_started_from_a_warm_cache(report):
    # FlashInfer's own build log (FLASHINFER_JIT_BUILD_LOG), this process's records: every load a ninja no-op
    assert report["builds"], "FlashInfer logged no module load"
    assert report["loads"] and not any(ld["compiled"] for ld in report["loads"]), report["loads"]  # each library as it was


def test_flashinfer_accepts_the_unit_environment_and_start_compiles_nothing(run):
    report = health(run)
    assert report["flashinfer"] == "0.7.4"
    assert report["cuda_home"] == "/usr/local/cuda-13.0" and report["cuda_version"] == "13.0"
    # the real SGLang ran first in the worker (set_cuda_arch, the GPU double's CC 12.0) and found the unit already
    # saying what it says: 12.0a, so FlashInfer imported after it lands in the workspace the converge warmed
    assert report["sglang"] == {"version": "0.5.23", "arch_list_before": "12.0a", "arch_list_after": "12.0a"}
    assert report["flashinfer_cuda_arch_list"] == "12.0a" and report["target_archs"] == ["120a"]
    env = report["environment"]
    ws = workspace(run)  # the venv's own: /var/cache/sglang/jit/<venv name>
    assert env["FLASHINFER_CUDA_ARCH_LIST"] == "12.0a" and env["FLASHINFER_WORKSPACE_BASE"] == ws and ws.startswith("/var/cache/sglang/jit/")
    assert env["PATH"].startswith("/usr/local/cuda-13.0/bin:/opt/sglang/current/bin:")
    assert env["LD_LIBRARY_PATH"] is None  # not asked for
    assert report["cache_dir"] == ws + "/.cache/flashinfer/0.7.4/120a"
    assert [w["rank"] for w in report["workers"]] == [0] and report["workers"][0]["pid"] != report["pid"]  # a worker process
    assert_started_from_a_warm_cache(report)


# ct200's unit as the seeds found it (molecule prepare), and what the lab runs in SGLang's place
OWN_FLAGS = "--model-path /models/Kimi-K2.6 --tp 8 --attention-backend triton --sampling-backend flashinfer --host 0.0.0.0 --port 30000"


def test_the_units_own_flags_survive_the_converge(run):
    # the unit's own file is untouched: its ExecStart still names the hand-built venv
    fragment = run("cat /etc/systemd/system/%s" % UNIT)
    assert "ExecStart=/root/venv_sglang211/bin/python /usr/local/libexec/sglang-standin.py --model-path /models/Kimi-K2.6 --tp 8" in fragment
    # the effective command is the unit's own, every flag kept, its interpreter moved to the managed venv
    shown = run("systemctl show -p ExecStart --value " + UNIT)
    assert "argv[]=/opt/sglang/current/bin/python /usr/local/libexec/sglang-standin.py " + OWN_FLAGS + " ;" in shown, shown
    # and the running server was started with them
    report = health(run)
    assert report["argv"][1:] == ["/usr/local/libexec/sglang-standin.py", *OWN_FLAGS.split()], report["argv"]
    assert report["argv"][0] == "/opt/sglang/current/bin/python"  # the managed venv's interpreter


def test_dropin_marker_and_boot_unit(host, run):
    dropin = host.file(DROPIN)
    assert (dropin.user, dropin.group, dropin.mode) == ("root", "root", 0o644)
    text = dropin.content_string
    assert "Requires=sglang-k26-validate.service" in text and "After=sglang-k26-validate.service" in text
    assert "Wants=sglang-k26-ready.service" in text  # the answer check after a boot
    # nvidia-uvm loaded at every boot before the hardened units (they cannot load it)
    assert host.file("/etc/modules-load.d/blackwell-inference-nvidia-uvm.conf").content_string.splitlines()[-1] == "nvidia-uvm"
    assert 'Environment="CUDA_HOME=/usr/local/cuda-13.0"' in text and "LD_LIBRARY_PATH" not in text
    assert 'ExecStart=\nExecStart="/opt/sglang/current/bin/python" "/usr/local/libexec/sglang-standin.py"' in text
    assert host.file("/var/cache/sglang").mode == 0o750
    m = marker(run)
    assert m["ready"] and m["launched"] is False and "allowed by policy" in m["reason"]
    assert m["venv"] == run("readlink /opt/sglang/current").strip() == m["last_good"]["venv"]
    assert m["versions"]["flashinfer-python"] == "0.7.4" and m["archs"] == "12.0a"
    assert m["smoke"]["compile"]["ok"] and m["smoke"]["compile"]["archs"] == ["sm_120a"]
    assert m["toolkit"] == {"cuda_home": "/usr/local/cuda-13.0", "cuda_version": "13.0"}
    assert run("systemctl is-active sglang-k26-validate.service sglang-k26.service").split() == ["active", "active"]
    assert "sglang-k26-validate.service" in run("systemctl show -p Requires --value " + UNIT).split()


# /proc/devices of a host before driver 550.40 (R535): major 195 registered as nvidia-frontend
R535_DEVICES = "Character devices:\n  1 mem\n195 nvidia-frontend\n234 nvidia-uvm\n235 nvidia-caps\n\nBlock devices:\n  7 loop\n"


def test_the_validate_unit_as_systemd_loaded_it_may_open_the_gpus_under_r535_and_r580(run):
    """The effective DevicePolicy/DeviceAllow of the hardened validate unit (every drop-in applied), resolved the way
    systemd does against the nvidia-smi double's R580 table and an R535 one: every node CUDA opens on 8 GPUs is allowed.
    The lab has no GPU nodes (its kernel's /proc/devices has no nvidia entries), so this is what it can check."""
    show = run("systemctl show -p DevicePolicy -p DeviceAllow sglang-k26-validate.service")
    props = [line.partition("=") for line in show.splitlines()]
    assert [v for k, _s, v in props if k == "DevicePolicy"] == ["closed"], show
    entries = [v for k, _s, v in props if k == "DeviceAllow" and v]
    assert entries, show
    r580 = run("cat /usr/lib/nvidia-smi-double/proc-devices")
    for table in (r580, R535_DEVICES):
        assert systemd_devices.denied(entries, table, range(8)) == [], (entries, table)
    # and the rules the units carried before (char-nvidia-frontend only for major 195) are denied on R580
    assert "/dev/nvidiactl" in systemd_devices.denied(["char-nvidia-frontend rw", "char-nvidia-uvm rw"], r580, range(8))


def test_ansible_local_shows_the_marker():
    cmd, env = adhoc_command("ansible.builtin.setup", "gather_subset=!all,local")
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    local = json.loads(proc.stdout.split("=>", 1)[1])["ansible_facts"]["ansible_local"]["blackwell_inference"]
    assert local["ready"] is True and local["archs"] == "12.0a" and local["venv"].startswith("/opt/sglang/venvs/")


def test_verify_only_run_changes_nothing_and_reports(run, host_state):
    before, packages = service_state(run), host_state()
    rc, out, recap = playbook("--tags", "verify")
    assert rc == 0 and recap["changed"] == 0, out[-4000:]
    # the toolkit's verify: measured and compiled live, the record aside (test_cuda_toolkit.py's COMPILE)
    assert "/usr/local/cuda-13.0: CUDA 13.0.88, JIT-ready: yes, compiles: sm_120a" in out
    assert re.search(COMPILE + r"ok: \[ct200\]", out) and "as recorded" not in out, out[-3000:]
    assert host_state() == packages
    assert "smoke (live (--tags verify)): compile ok" in out and "READY: compiled, JIT cache warm (sampling)" in out
    assert "flashinfer 0.7.4: CUDA 13.0" in out and "8x NVIDIA RTX PRO 6000 Blackwell Server Edition (CC 12.0)" in out
    assert "/usr/local/cuda: /usr/local/cuda-12.8" in out
    command = "service command (the unit's own, interpreter moved to the managed venv): /opt/sglang/current/bin/python"
    assert command + " /usr/local/libexec/sglang-standin.py " + OWN_FLAGS in out, out[-3000:]
    # /health is greedy; a sampled /generate, asked right after it, took FlashInfer's sampling module in the workers
    assert "health answering, sampled request ok (http://127.0.0.1:30000/generate: answered" in out, out[-3000:]
    assert service_state(run) == before


def generate(run, params):
    body = json.dumps({"text": "The capital of France is", "sampling_params": params})
    script = (
        "import json, sys, urllib.request, urllib.error\n"
        "req = urllib.request.Request('http://127.0.0.1:30000/generate', data=sys.argv[1].encode(), headers={'Content-Type': 'application/json'})\n"
        "try:\n    r = urllib.request.urlopen(req, timeout=120); print(r.status, r.read().decode())\n"
        "except urllib.error.HTTPError as e:\n    print(e.code, e.read().decode())\n"
    )
    status, _sep, answer = run("python3 -c %s %s" % (shlex.quote(script), shlex.quote(body))).strip().partition(" ")
    return int(status), json.loads(answer)


def test_a_sampled_request_takes_the_sampling_module_in_the_workers_and_compiles_nothing(run):
    # greedy, as /health asks: no worker touches FlashInfer's sampling
    status, answer = generate(run, {"temperature": 0.0, "max_new_tokens": 1})
    assert status == 200 and answer["meta_info"] == {"sampled": False, "workers": []}
    # sampled without a top-p/top-k filter: SGLang's sampler does that in plain torch, FlashInfer is not asked either
    status, answer = generate(run, {"temperature": 0.7, "max_new_tokens": 4})
    assert status == 200 and answer["meta_info"] == {"sampled": False, "workers": []}
    status, answer = generate(run, {"temperature": 0.7, "top_p": 0.9, "top_k": 20, "max_new_tokens": 4})
    workers = answer["meta_info"]["workers"]
    assert status == 200 and answer["meta_info"]["sampled"] and [w["modules"] for w in workers] == [["sampling"]], answer
    # in the service's worker process (alive since the start), from the warm workspace: FlashInfer logged no compile
    assert workers[0]["pid"] == health(run)["workers"][0]["pid"] and workers[0]["builds"] == [], workers
    # the health check's own verdict on a sampled request that fails (a path the server does not serve): not answered
    cmd, env = adhoc_command(
        "blackwell.inference.service_health",
        json.dumps(
            {
                "url": "http://127.0.0.1:30000/health",
                "unit": UNIT,
                "timeout": 0,
                "must_answer": False,
                "sample_url": "http://127.0.0.1:30000/v1/none",
                "sample_body": {"text": "x", "sampling_params": {"temperature": 0.7, "top_p": 0.9, "top_k": 20}},
            }
        ),
    )
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    res = json.loads(proc.stdout.split("=>", 1)[1])
    assert res["answered"] is False and res["status"] == 404 and res["sample"]["ok"] is False, res
    assert res["msg"].startswith("answered http://127.0.0.1:30000/health but its sampled request to http://127.0.0.1:30000/v1/none failed"), res


def test_check_mode_with_a_changed_environment_changes_nothing(run):
    before = service_state(run)
    rc, out, recap = playbook("--check", extra_vars={"sglang_service_environment": {"NCCL_DEBUG": "WARN"}})
    assert rc == 0 and recap["changed"] > 0, out[-4000:]  # it says what it would change ...
    assert service_state(run) == before  # ... and changes nothing


def test_a_stopped_ready_service_is_started_and_waited_for_before_it_is_judged(run):
    # the fault hit: the service was serving, and is stopped before the run (a host whose operator stopped it)
    assert main_pid(run) != "0" and health(run)["flashinfer"] == "0.7.4"
    run("systemctl stop " + UNIT)
    assert run("systemctl show -p ActiveState --value " + UNIT).strip() == "inactive"
    rc, out, recap = playbook()
    # started by the run (its one change) and judged once it answered, not at one look while it was loading
    assert rc == 0 and recap["changed"] == 1, out[-4000:]
    assert "NOT READY" not in out and '"READY: ' in out and "health answering" in out, out[-4000:]
    assert health(run)["pid"] == int(main_pid(run))


def test_secrets_go_to_a_0600_file_and_never_to_the_output(host, run):
    secret = "hf_lab_" + hashlib.sha256(b"ct200").hexdigest()[:20]
    rc, out, _recap = playbook("-v", extra_vars={"sglang_service_secret_environment": {"HF_TOKEN": secret}})
    try:
        assert rc == 0, out[-4000:]
        assert secret not in out
        f = host.file("/etc/blackwell-inference/sglang-k26.secrets.env")
        assert (f.user, f.mode) == ("root", 0o600) and f.content_string == 'HF_TOKEN="%s"\n' % secret
        assert "EnvironmentFile=/etc/blackwell-inference/sglang-k26.secrets.env" in host.file(DROPIN).content_string
        assert secret not in run("systemctl show -p Environment " + UNIT)  # not in the public environment
        assert health(run)["environment"]["FLASHINFER_CUDA_ARCH_LIST"] == "12.0a"
        # issue 47: no digest of the secret anyone could test guesses against, neither in the output nor in a file
        # others may read (the marker, the textfile, validate.json, ...); the marker vouches for it by its keyed digest
        plain = hashlib.sha256(f.content).hexdigest()
        assert plain[:16] not in out
        readable = "find /etc /var/lib /usr/local/libexec -xdev -type f -perm -o=r -exec grep -l -F %s {} + || true"
        assert run(readable % plain[:16]).strip() == ""
        assert "hmac-sha256:" in run("cat " + MARKER) and host.file("/var/lib/blackwell-inference/digest.key").mode == 0o600
        assert host.file("/etc/blackwell-inference/sglang-k26-validate.json").mode == 0o600
    finally:
        rc, out, _recap = playbook()
        assert rc == 0, out[-4000:]
    assert not host.file("/etc/blackwell-inference/sglang-k26.secrets.env").exists
