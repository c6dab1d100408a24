"""A failure says its cause in one screen (issue 45 item 6), on the converged ct200: FlashInfer's JIT cache disk full
during the warm-up. A 64 KiB tmpfs is mounted on the workspace's `cached_ops` (owned as the directory it hides), and
the `--tags verify` warms FlashInfer's quantization module (`-e sglang_service_jit_warm=[quantization]`: one cold
source file, about a minute of CPU, where the sampling module took about four), so ninja's build runs out of space.
Before: the `fatal:` line carried the warm-up script and the whole ninja output several times over (about 40 KB).
Now its message is a few lines naming the full disk and the log on the host, and that log holds the ninja output
(the test prints the lengths it measured; the cause is GNU as's `Fatal error: can't write ... bytes to section .text
of ...: 'No space left on device'`). The fault is taken away (umount) before the file ends; nothing of the service moved.
"""

import json
import subprocess

from ..conftest import ROOT, playbook_command, workspace
from .test_faults import no_traceback

UNIT = "sglang-k26.service"
TASK = "Run the JIT smoke in the service's environment (verify only)"


def test_a_full_jit_cache_disk_during_the_warm_up_is_named_in_a_few_lines_with_its_log(run):
    pid = run("systemctl show -p MainPID --value %s" % UNIT).strip()
    ops = workspace(run) + "/.cache/flashinfer/0.7.4/120a/cached_ops"
    owner = run("stat -c 'uid=%%u,gid=%%g' %s" % ops).strip()
    run("mount -t tmpfs -o size=64k,mode=0755,%s jit-full %s" % (owner, ops))
    try:
        # one JSON result per line, so the fatal line is measured as a whole (an operator's yaml shows the same fields)
        cmd, env = playbook_command("--tags", "verify", extra_vars={"sglang_service_jit_warm": ["quantization"]})
        env["ANSIBLE_CALLBACK_RESULT_FORMAT"] = "json"
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
        out = proc.stdout + proc.stderr
        no_traceback(out)
        assert proc.returncode != 0, out[-4000:]
        after_task = out.split("TASK [blackwell.inference.sglang_service : %s]" % TASK, 1)[-1]
        fatal = next((ln for ln in after_task.splitlines() if ln.startswith("fatal: [ct200]: FAILED! => ")), None)
        assert fatal, out[-4000:]
        result = json.loads(fatal.split(" => ", 1)[1])
        msg = result["msg"]
        print("the fatal line: %d characters; its msg: %d characters, %d lines:\n%s" % (len(fatal), len(msg), len(msg.splitlines()), msg))
        assert "No space left on device" in msg.splitlines()[0] and len(msg) <= 1500 and len(msg.splitlines()) <= 5, msg
        log = result["log"]
        assert log.startswith("/var/log/blackwell-inference/jit_smoke-%s-warm-" % UNIT) and msg.splitlines()[-1].endswith(log), msg
        # the attached fields are bounded and never the warm-up script's source
        assert "gen_quantization_module" not in fatal and len(fatal) <= 12000, len(fatal)
        # the log on the host holds the full output: the ninja build and the cause
        text = run("cat %s" % log)
        assert "Ninja build failed" in text and "No space left on device" in text and "ninja: build stopped" in text, text[-3000:]
        assert run("stat -c '%%a %%U' %s /var/log/blackwell-inference" % log).split() == ["640", "root", "750", "root"]
        # the fleet table's row is one line naming the cause (cut to the table's width: the object's path before it is
        # long, so the row may end in "No space left ...")
        row = [ln for ln in out.splitlines() if ln.startswith("ct200 ")][-1]
        assert "NOT READY" in row and "No space left" in row, row
    finally:
        run("umount %s" % ops)
    assert run("systemctl show -p MainPID --value %s" % UNIT).strip() == pid  # the service was not touched
