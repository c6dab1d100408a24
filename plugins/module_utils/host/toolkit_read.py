# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cuda_toolkit role's one read of a host (the toolkit_probe module): GPUs, driver and toolkits (cuda_measure),
every package's dpkg status, Secure Boot, every apt source's URIs, the role's own source and key, the compile record
and the cuda links. Read-only; commands go through a runner (commands.py)."""

from __future__ import annotations

import os
import pwd
import re
import stat

from ansible_collections.blackwell.inference.plugins.module_utils.common import apt_repo
from ansible_collections.blackwell.inference.plugins.module_utils.common import systemd as systemd_env
from ansible_collections.blackwell.inference.plugins.module_utils.cuda import link_host as cuda_link_host
from ansible_collections.blackwell.inference.plugins.module_utils.cuda import plan as cuda_plan
from ansible_collections.blackwell.inference.plugins.module_utils.host import measure as cuda_measure

# toolkit_probe's options and their defaults (host_lock's read.toolkit takes the same)
DEFAULTS = {
    "nvidia_smi": "nvidia-smi",
    "toolkit_root": "/usr/local",
    "method": None,
    "packages": True,
    "apt_sources": False,
    "compile_record": "",
    "links": None,
    "apt_repo": None,
    "apt_access": None,
}
LINK_OPTIONS = ("root", "default", "wanted", "record")
APT_REPO_OPTIONS = ("source", "key")
# apt's proxy file (apt.conf.d, 0644, no credentials) and its logins (auth.conf.d, 0600): what tasks/apt_access.yml writes
APT_ACCESS_OPTIONS = ("proxy", "auth")
DEFAULT_LINK_RECORD = "/etc/blackwell-inference/cuda-links.json"


class ReadError(cuda_measure.MeasureError):
    """A reading the role cannot decide from (cuda_measure's refusals included); msg, and result: the command's
    rc/stdout/stderr when there was one."""


def secure_boot(res):
    """mokutil --sb-state's answer: rc, its line, and why there is none ('not installed' without mokutil)."""
    stderr = "not installed" if res.os_error == "FileNotFoundError" else (res.stderr or "").strip()
    return {"rc": res.rc, "stdout": (res.stdout or "").strip(), "stderr": stderr}


def read(run, p, env, env_notes, home_dir, sources=apt_repo.source_uris, record=cuda_plan.read_compile_record):
    """The host for p (nvidia_smi, toolkit_root, method, packages, apt_sources, compile_record, links, apt_repo). Raises
    ReadError (cuda_measure's refusals included)."""
    try:
        facts = cuda_measure.measure(run, p, env, env_notes, home_dir)
    except cuda_measure.MeasureError as exc:
        raise ReadError(exc.msg, exc.result) from exc

    # the role's method, when given, says what apt has to read: the packages, the sources and the role's own source
    method = p.get("method")
    apt = method == "apt"
    packages = {"rc": None, "stdout": ""}
    if p.get("packages", True) if method is None else apt:
        res = run(["dpkg-query", "-W", "-f=${Package} ${Version} ${Status}\\n"])
        if not res.ok:
            raise ReadError("dpkg-query could not list the packages", res.as_dict())
        packages = {"rc": res.rc, "stdout": res.stdout}
    boot = secure_boot(run(["mokutil", "--sb-state"]))

    links = None
    if p.get("links") is not None:
        lk = cuda_measure.suboptions("links", p["links"], LINK_OPTIONS, error=ReadError)
        wanted = [re.sub(r"^(\d+\.\d+)\..*$", r"\1", str(v)) for v in lk.get("wanted") or []]  # X.Y of X.Y.Z
        links = cuda_link_host.read(run, lk.get("root") or "/usr/local", lk.get("record") or DEFAULT_LINK_RECORD, wanted, str(lk.get("default") or ""))

    repo = None
    if p.get("apt_repo") is not None and (method is None or apt):
        given = cuda_measure.suboptions("apt_repo", p["apt_repo"], APT_REPO_OPTIONS, required=APT_REPO_OPTIONS, error=ReadError)
        repo = apt_repo.read(str(given["source"]), str(given["key"]))

    access = None
    if p.get("apt_access") is not None and (method is None or apt):
        given = cuda_measure.suboptions("apt_access", p["apt_access"], APT_ACCESS_OPTIONS, required=APT_ACCESS_OPTIONS, error=ReadError)
        access = read_apt_access(str(given["proxy"]), str(given["auth"]))

    return {
        "ansible_facts": {"blackwell_cuda": facts},
        "packages": packages,
        "secure_boot": boot,
        "apt_sources": sources() if (p.get("apt_sources") if method is None else apt) else {},
        "compile_record": record(p.get("compile_record") or ""),
        "links": links,
        "apt_repo": repo,
        "apt_access": access,
    }


def read_apt_access(proxy, auth):
    """{proxy: {exists, mode, uid, content}, auth: {exists, mode, uid}} of apt's proxy file (no credentials: its text)
    and of its logins file (a secret: never its text nor a digest; toolkit_probe's action asks secret_file whether it
    holds what the role would write). A path that is no regular file reads as {exists: True, mode: None}."""

    def stat_of(path):
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return {"exists": False}
        if not stat.S_ISREG(st.st_mode):
            return {"exists": True, "mode": None, "uid": st.st_uid}
        return {"exists": True, "mode": stat.S_IMODE(st.st_mode), "uid": st.st_uid}

    seen = stat_of(proxy)
    if seen.get("mode") is not None:
        with open(proxy, encoding="utf-8", errors="replace") as fh:
            seen["content"] = fh.read()
    return {"proxy": seen, "auth": stat_of(auth)}


def read_for(module, run, options):
    """read() as a module on the host runs it: options over DEFAULTS, in the systemd manager's environment, with the
    module's user's home. Raises ReadError."""
    env, notes = systemd_env.service_environment(module, run, None, {})
    return read(run, dict(DEFAULTS, **options), env, notes, pwd.getpwuid(os.getuid()).pw_dir)
