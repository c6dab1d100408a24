"""A table-driven stand-in for the commands flashinfer_rules runs (`which nvcc`, `<home>/bin/nvcc`)."""

import os
import subprocess

from ansible_collections.blackwell.inference.plugins.module_utils.common import commands
from ansible_collections.blackwell.inference.plugins.module_utils.common.commands import CommandResult

# Real banners (nvcc --version). 13.0 was captured from the nvcc on this machine; 12.8 and 12.9
# are NVIDIA's published banners for those releases.
NVCC_13_0 = """nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2025 NVIDIA Corporation
Built on Wed_Aug_20_01:58:59_PM_PDT_2025
Cuda compilation tools, release 13.0, V13.0.88
Build cuda_13.0.r13.0/compiler.36424714_0
"""
NVCC_12_9 = """nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2025 NVIDIA Corporation
Built on Tue_May_27_02:21:03_PDT_2025
Cuda compilation tools, release 12.9, V12.9.86
Build cuda_12.9.r12.9/compiler.36037853_0
"""
NVCC_12_8 = """nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2025 NVIDIA Corporation
Built on Fri_Feb_21_20:23:50_PST_2025
Cuda compilation tools, release 12.8, V12.8.93
Build cuda_12.8.r12.8/compiler.35583870_0
"""
BANNERS = {"12.8": NVCC_12_8, "12.9": NVCC_12_9, "13.0": NVCC_13_0}

NOT_EXECUTABLE = object()
FAILS = object()


class FakeHost:
    """files: {path: banner text | NOT_EXECUTABLE | FAILS}; dirs: paths that exist; has_which."""

    def __init__(self, files=None, dirs=(), has_which=True):
        self.files = dict(files or {})
        self.dirs = set(dirs)
        self.has_which = has_which
        self.calls = []
        self.envs = []

    def exists(self, path):
        return path in self.dirs or path in self.files

    def __call__(self, argv, env=None, timeout=60, data=None):
        self.calls.append(list(argv))
        self.envs.append(dict(env or {}))
        if argv == ["which", "nvcc"]:
            if not self.has_which:
                return CommandResult(argv, os_error="FileNotFoundError", stderr="No such file or directory: 'which'")
            for d in (env or {}).get("PATH", "").split(":"):
                path = os.path.join(d, "nvcc")
                if self.files.get(path, NOT_EXECUTABLE) is not NOT_EXECUTABLE:
                    return CommandResult(argv, rc=0, stdout=path + "\n")
            return CommandResult(argv, rc=1)
        path = argv[0]
        if path not in self.files:
            return CommandResult(argv, os_error="FileNotFoundError", stderr="No such file: %r" % path)
        content = self.files[path]
        if content is NOT_EXECUTABLE:
            return CommandResult(argv, os_error="PermissionError", stderr="[Errno 13] Permission denied: %r" % path)
        if content is FAILS:
            return CommandResult(argv, rc=1, stderr="nvcc fatal   : something broke")
        return CommandResult(argv, rc=0, stdout=content)


def toolkit(version, root="/usr/local"):
    """{nvcc path: banner} for <root>/cuda-X.Y."""
    return {"%s/cuda-%s/bin/nvcc" % (root, version): BANNERS[version]}


def real_run(argv, env=None, timeout=60, data=None):
    """The module's runner without AnsibleModule: the same wrapped argv, really executed."""
    proc = subprocess.run(commands.wrap(argv, env, timeout), input=data, capture_output=True, text=True, check=False)
    return commands.interpret(argv, proc.returncode, proc.stdout, proc.stderr, timeout)
