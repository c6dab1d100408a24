# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sglang_venv role's reading and decisions: a host's venvs (read_host, the venv_probe module), the venv a set of
inputs names (inputs_plan), what a prune keeps, and package versions read from a venv's files without importing
anything (no torch import)."""

from __future__ import annotations

import glob
import hashlib
import importlib.metadata
import json
import os
import re

from ansible_collections.blackwell.inference.plugins.module_utils.common import owned_paths, secrets, values

_TORCH_CUDA_RE = re.compile(r"""^cuda\s*(?::[^=]*)?=\s*(?:None|['"]([^'"]*)['"])\s*$""", re.M)
_TORCH_VERSION_RE = re.compile(r"""^__version__\s*(?::[^=]*)?=\s*['"]([^'"]+)['"]""", re.M)


class VenvError(ValueError):
    pass


def normalize_name(name):
    """PEP 503 normalization: flashinfer_python, flashinfer-python -> flashinfer-python."""
    return re.sub(r"[-_.]+", "-", name).lower()


def check_venv(venv):
    if not os.path.isdir(venv):
        raise VenvError("venv=%s does not exist or is not a directory" % venv)
    if not os.path.isfile(os.path.join(venv, "pyvenv.cfg")):
        raise VenvError("venv=%s is not a Python virtual environment (no pyvenv.cfg)" % venv)
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(python):
        raise VenvError("venv=%s has no bin/python" % venv)
    return python


def site_packages(venv):
    """The venv's site-packages directories (lib and lib64, any python3.X)."""
    dirs = []
    for pattern in ("lib/python3*/site-packages", "lib64/python3*/site-packages"):
        for d in sorted(glob.glob(os.path.join(venv, pattern))):
            if os.path.realpath(d) not in [os.path.realpath(x) for x in dirs]:
                dirs.append(d)
    return dirs


def installed_versions(site_dirs):
    """{normalized name: version} of the distributions installed in these site-packages (importlib.metadata: their
    Name/Version headers, nothing imported); the first directory naming a distribution wins."""
    versions = {}
    for sp in site_dirs:
        for dist in importlib.metadata.distributions(path=[sp]):
            try:
                meta = dist.metadata
                name, version = (meta["Name"], meta["Version"]) if meta is not None else (None, None)
            except (OSError, ValueError):  # unreadable or undecodable METADATA: as if it were not there
                continue
            if name and version:
                versions.setdefault(normalize_name(name), version)
    return versions


def parse_torch_version_py(text):
    """(version, cuda) from torch/version.py text; cuda None for a CPU build."""
    ver = _TORCH_VERSION_RE.search(text or "")
    cuda = _TORCH_CUDA_RE.search(text or "")
    return (ver.group(1) if ver else None, (cuda.group(1) or None) if cuda else None)


def torch_info(site_dirs):
    """{version, cuda} read from torch/version.py, or None when torch is absent."""
    for sp in site_dirs:
        path = os.path.join(sp, "torch", "version.py")
        if os.path.isfile(path):
            with open(path, encoding="utf-8", errors="replace") as fh:
                version, cuda = parse_torch_version_py(fh.read())
            return {"version": version, "cuda": cuda}
    return None


_PIP_CHECK_LINE = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*) (?P<version>\S+) (?:requires|has requirement|is not supported)\b")


def pip_check_problems(stdout, no_deps=()):
    """`pip check`'s problems that count: every line, except those of a distribution installed without its
    dependencies on purpose (`no_deps`: requirements or names; its own requirements are its operator's business, a
    problem of another distribution with it still counts). Returns (kept lines, number of lines set aside)."""
    skip = {requirement_name(r) for r in no_deps or () if str(r).strip()}
    kept, skipped = [], 0
    for raw in (stdout or "").splitlines():
        line = raw.strip()
        if not line or line == "No broken requirements found.":
            continue
        m = _PIP_CHECK_LINE.match(line)
        if m and normalize_name(m.group("name")) in skip:
            skipped += 1
        else:
            kept.append(line)
    return kept, skipped


def pip_check_verdict(result, no_deps=()):
    """The venv's `pip check` verdict from its registered result (a dict with rc and stdout; skipped or not run:
    passed). It passes with rc 0, or when every line it printed is about a distribution installed without its
    dependencies on purpose. Returns (passed, problems, set_aside)."""
    result = result if isinstance(result, dict) else {}
    if result.get("skipped") or result.get("rc") is None:
        return True, [], 0
    kept, skipped = pip_check_problems(result.get("stdout"), no_deps)
    return result["rc"] == 0 or (skipped > 0 and not kept), kept, skipped


PINNED = re.compile(r"^[A-Za-z0-9._-]+(\[[A-Za-z0-9,._-]+\])?==\S+$")


def requirement_name(requirement):
    """'flashinfer_python[cu13]==0.7.4' -> 'flashinfer-python' (PEP 503, extras and version dropped)."""
    return normalize_name(re.split(r"[\[=<>!~; ]", str(requirement).strip(), maxsplit=1)[0])


def no_deps_accepted(no_deps, packages, lock_file=""):
    """Whether sglang_venv_packages_no_deps can be installed as asked: each pinned name==version, none also in
    sglang_venv_packages (by PEP 503 name), and none beside a lock file (the lock is the whole set)."""
    no_deps = list(no_deps or [])
    if any(not PINNED.match(str(r).strip()) for r in no_deps):
        return False
    if no_deps and lock_file:
        return False
    return not {requirement_name(r) for r in no_deps} & {requirement_name(r) for r in packages or []}


# The build writes this file last, after the venv's check passed: it marks the venv complete and is its metadata.
MARKER = ".blackwell-venv.json"
# What the interpreter that makes the venvs must have (venv and ensurepip), and its version.
PYTHON_CHECK = "import sys, venv, ensurepip; print('%d.%d.%d' % sys.version_info[:3])"


def read_marker(path):
    """(complete, marker, marker's mtime) of the venv at path. A marker that is there but not a JSON object raises
    VenvError: the build wrote it whole, so it was changed by hand (the venv is neither rebuilt nor trusted)."""
    marker = os.path.join(path, MARKER)
    try:
        with open(marker, encoding="utf-8") as fh:
            text = fh.read()
            mtime = os.fstat(fh.fileno()).st_mtime
    except FileNotFoundError:
        return False, None, None
    except OSError as exc:
        raise VenvError("%s cannot be read: %s" % (marker, exc)) from exc
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise VenvError("%s is not JSON (%s): the build writes it whole, so it was changed since" % (marker, exc)) from exc
    if not isinstance(data, dict):
        raise VenvError("%s is not a JSON object" % marker)
    return True, data, mtime


def list_venvs(root):
    """The entries of <root>/venvs that are not hidden (the build locks are), sorted, each as {name, path, real (the
    path with every symlink resolved: what current and the ready markers name), isdir, complete, marker, marker_mtime};
    [] when there is no such directory yet."""
    base = os.path.join(root, "venvs")
    try:
        names = sorted(os.listdir(base))
    except FileNotFoundError:
        return []
    venvs = []
    for name in names:
        if name.startswith("."):
            continue
        path = os.path.join(base, name)
        isdir = os.path.isdir(path) and not os.path.islink(path)
        complete, marker, mtime = read_marker(path) if isdir else (False, None, None)
        venvs.append(
            {"name": name, "path": path, "real": os.path.realpath(path), "isdir": isdir, "complete": complete, "marker": marker, "marker_mtime": mtime}
        )
    return venvs


def last_good_venvs(local_facts):
    """The venvs the ready markers (local facts, one per service) name as their last good state."""
    found = []
    for fact in (local_facts or {}).values():
        last_good = fact.get("last_good") if isinstance(fact, dict) else None
        venv = last_good.get("venv") if isinstance(last_good, dict) else None
        if venv and venv not in found:
            found.append(venv)
    return found


# how Ansible's local facts say a .fact file could not be loaded (module_utils/facts/system/local.py): the fact's value
# is then this text instead of the file's content
_FACT_ERRORS = ("error loading fact", "could not stat fact", "could not execute fact", "failure executing fact", "failed to convert")


def unreadable_markers(local_facts):
    """The local facts a prune cannot trust to name every last good venv: a .fact file Ansible could not load (its
    value is then Ansible's error text, or {} for a file it could not read at all), and a marker whose last_good is
    there but names no venv. Sorted names."""
    bad = []
    for name, fact in (local_facts or {}).items():
        if (isinstance(fact, str) and fact.lower().startswith(_FACT_ERRORS)) or fact == {}:
            bad.append(name)
            continue
        last_good = fact.get("last_good") if isinstance(fact, dict) else None
        if last_good is not None and not (isinstance(last_good, dict) and isinstance(last_good.get("venv"), str) and last_good["venv"]):
            bad.append(name)
    return sorted(bad)


def _resolver(venvs):
    """A path -> the real path of the venv it names (by its listed path or its real one), else the path normalised."""
    table = {}
    for v in venvs:
        real = v.get("real") or os.path.normpath(v["path"])
        table[os.path.normpath(v["path"])] = real
        table[real] = real
    return lambda path: table.get(os.path.normpath(path), os.path.normpath(path))


def prune_plan(venvs, this_dir, link_target, local_facts, keep):
    """What a prune keeps and removes among the venv directories (list_venvs). Never removed, and counted in keep when
    they exist: this run's venv, the one current points at, every ready marker's last good venv; the rest of keep are
    the newest complete ones (by their marker's mtime). Incomplete ones beyond those go. Every comparison is of real
    paths (a venv root under a symlink lists root/venvs/x, while current and the markers name the resolved path). A
    local fact that cannot be read (unreadable_markers) stops the prune: nothing is removed. Returns {keep (real
    paths), remove (the listed paths), stopped (why it removes nothing, or '')}."""
    real = _resolver(venvs)
    dirs = [v for v in venvs if v.get("isdir")]
    bad = unreadable_markers(local_facts)
    if bad:
        why = "the local fact(s) %s cannot be read, so the last good venv they name is unknown: nothing pruned" % ", ".join(
            "/etc/ansible/facts.d/%s.fact" % n for n in bad
        )
        return {"keep": [real(v["path"]) for v in dirs], "remove": [], "stopped": why}
    listed = [real(v["path"]) for v in dirs]
    must = []
    for wanted in [this_dir, link_target, *last_good_venvs(local_facts)]:
        path = real(wanted) if wanted else ""
        if path and (path in listed or path == real(this_dir)) and path not in must:
            must.append(path)
    complete = sorted((v for v in dirs if v.get("complete")), key=lambda v: v.get("marker_mtime") or 0, reverse=True)
    newest = [real(v["path"]) for v in complete if real(v["path"]) not in must]
    kept = must + newest[: max(int(keep) - len(must), 0)]
    return {"keep": kept, "remove": [v["path"] for v in dirs if real(v["path"]) not in kept], "stopped": ""}


def read_host(run, root, python, tools=()):
    """The sglang_venv role's one read of a host (the venv_probe module): the interpreter's version (None when it
    cannot make venvs: no venv or ensurepip), each tool asked for, where root/current points, and the venvs under root
    (list_venvs). Raises VenvError with the reading so far as its `reading`."""
    res = run(["/usr/bin/env", python, "-c", PYTHON_CHECK])
    version = res.stdout.strip() if res.ok else None
    reading = {"python": {"version": version, "rc": res.rc, "stderr": (res.stderr or "").strip()}, "tools": {}}
    for tool in tools or []:
        res = run([tool, "--version"])
        reading["tools"][tool] = {"found": res.ok, "version": (res.stdout.strip().splitlines() or [None])[0] if res.ok else None}
    link = os.path.join(root, "current")
    reading["current"] = os.path.realpath(link) if os.path.islink(link) else ""
    try:
        reading["venvs"] = list_venvs(root)
    except VenvError as exc:
        exc.reading = reading
        raise
    return reading


def inputs_plan(host, root, options, prune=None):
    """The venv these inputs name, and whether it has to be built: the preflight's decision.

    host: the venv probe's reading (python.version, venvs, current); root: sglang_venv_root without a trailing slash;
    options: python, requirements (the lock file's sha256, or the packages), no_index, index_url, extra_index_urls,
    find_links, patches (their sha256s), no_deps (packages installed without dependencies), bytecode.
    The venv's name is the first 16 hex digits of the sha256 of the inputs as sorted JSON. Keys are added only when
    their option is not the default (no_deps when set, bytecode when off), so venvs built before those options keep
    their names. Returns {inputs, hash, dir, site, this, build, previous, switch (current is to point at dir: it is built
    now, or current points elsewhere)}.

    prune: {keep, local_facts} (sglang_venv_keep, ansible_local): adds `prune`, whether the prune phase has anything to
    do: a switch (it decides again then), or prune_plan would remove a directory with current left where it is."""
    version = (host.get("python") or {}).get("version") or ""
    inputs = {
        "python": options["python"],
        "python_version": version,
        "requirements": options["requirements"],
        # without their credentials: the inputs go into the 0644 marker, and a changed token is no new venv
        "index_url": "" if options.get("no_index") else secrets.redact(options.get("index_url", "")),
        "extra_index_urls": [] if options.get("no_index") else [secrets.redact(u) for u in options.get("extra_index_urls") or []],
        "find_links": list(options.get("find_links") or []),
        "patches": list(options.get("patches") or []),
    }
    if options.get("no_deps"):
        inputs["no_deps"] = list(options["no_deps"])
    if not options.get("bytecode", True):
        inputs["bytecode"] = False
    name = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode("utf-8")).hexdigest()[:16]
    this = next((v for v in host.get("venvs") or [] if v.get("name") == name), {})
    directory = "%s/venvs/%s" % (root, name)
    out = {
        "inputs": inputs,
        "hash": name,
        "dir": directory,
        "site": "%s/lib/python%s/site-packages" % (directory, ".".join(version.split(".")[:2])),
        "this": this,
        "build": not this.get("complete", False),
        "previous": host.get("current"),
    }
    # current is read resolved: compared with this venv's real path (a root under a symlink), else its own
    out["switch"] = out["build"] or out["previous"] != (this.get("real") or directory)
    if prune is not None:
        pruned = prune_plan(host.get("venvs") or [], directory, out["previous"], prune.get("local_facts") or {}, prune["keep"])
        out["prune"] = bool(out["switch"] or pruned["remove"] or pruned["stopped"])
    return out


def read_current(root):
    """The marker of the venv <root>/current points at (parsed), None when it cannot be read (no current, no marker).
    A marker that is there but not JSON raises VenvError: the build writes it whole, so it was changed by hand."""
    marker = "%s/current/%s" % (root, MARKER)
    try:
        with open(marker, encoding="utf-8") as fh:
            text = fh.read()
    except OSError:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise VenvError("%s is not JSON (%s): the build writes it whole, so it was changed since" % (marker, exc)) from exc


def current(meta, root, inputs_hash, changed, switched=False, previous=None):
    """sglang_venv_current, the venv role's result, from the marker (.blackwell-venv.json, parsed; {} or None when
    there is none) of the venv current points at: path (the stable link), dir, hash, versions, torch_cuda, patches,
    no_deps, pip_check_set_aside, matches_inputs (it is the venv of these inputs: inputs_hash), changed (built,
    switched or pruned in this run, as the role says), switched (current moved in this run) and previous (where
    current pointed before this run: a later refusal of the run puts it back)."""
    meta = meta if isinstance(meta, dict) else {}
    return {
        "path": "%s/current" % root,
        "dir": "%s/venvs/%s" % (root, meta.get("hash", "")),
        "hash": meta.get("hash"),
        "versions": meta.get("versions", {}),
        "torch_cuda": meta.get("torch_cuda"),
        "patches": meta.get("patches", []),
        "no_deps": meta.get("no_deps", []),
        "pip_check_set_aside": meta.get("pip_check_set_aside", 0),
        "matches_inputs": meta.get("hash", "") == inputs_hash,
        "changed": bool(changed),
        "switched": bool(switched),
        "previous": previous or None,
    }


# sources pip's environment file ($0, when there is one) and runs pip ($@)
SOURCE_ENV = 'if [ -e "$0" ]; then set -a; . "$0"; set +a; fi; exec "$@"'


def pip_install(directory, lock, options, env_file):
    """pip install into the venv being built (directory), under its build lock, with the role's wheelhouses: options
    no_index, find_links, bytecode (False: --no-compile). The index URLs and proxies, which may carry credentials, are
    not in argv (ps shows it to every user): pip reads them from its environment, which sh sources from env_file (the
    role writes it 0600: PIP_INDEX_URL, PIP_EXTRA_INDEX_URL, http_proxy, https_proxy, no_proxy)."""
    argv = ["flock", "--exclusive", "--nonblock", lock, "/bin/sh", "-c", SOURCE_ENV, env_file]
    argv += [directory + "/bin/python", "-m", "pip", "install", "--disable-pip-version-check", "--no-input"]
    argv += [] if options.get("bytecode", True) else ["--no-compile"]
    argv += ["--no-index"] if options.get("no_index") else []
    return argv + ["--find-links=%s" % f for f in options.get("find_links") or []]


def refusals(host, options):
    """What the sglang_venv role refuses of the host as the probe read it: an interpreter that cannot make venvs, and
    patches without GNU patch. options: python, patches (given)."""
    out = []
    python = host.get("python") or {}
    if python.get("version") is None:
        out.append(
            "sglang_venv_python=%s cannot create venvs here (%s): install its venv package (python3-venv) or point"
            " sglang_venv_python at another interpreter." % (options["python"], python.get("stderr"))
        )
    if options.get("patches") and not ((host.get("tools") or {}).get("patch") or {}).get("found"):
        out.append("sglang_venv_patches needs GNU patch on the host: install the patch package, or empty sglang_venv_patches.")
    return out


def role_plan(host, options):
    """The sglang_venv role's plan, worked out once from the venv probe's reading (host): inputs_plan()'s keys with the
    prune's, and root (without a trailing /), lock (the venv's build lock, hidden beside it), pip_env_file (pip's
    environment, hidden beside it, written 0600 for the build and removed after it), pip_install (pip's argv into it:
    pip_install()), requirements (what pip installs: the lock file, or the packages), link_target (where
    current points once the switch ran: the venv when it switches, not in check mode, else where it pointed), remove
    (the venvs the prune removes then: prune_plan), prune_stopped (why it removes nothing: a local fact that cannot be
    read, or '') and refusals (of the host: refusals()).

    options: the role's variables without their sglang_venv_ prefix - root, python, packages, lock_file,
    lock_file_sha256 (a list: the lock file's sha256, or none), no_index, index_url, extra_index_urls, find_links,
    patches (their sha256s), packages_no_deps, bytecode, keep - and local_facts (ansible_local), check_mode."""
    root = re.sub("(?<=.)/+$", "", str(options["root"]))
    lock_sha = list(options.get("lock_file_sha256") or [])
    plan = inputs_plan(
        host,
        root,
        {
            "python": options["python"],
            "requirements": lock_sha[0] if lock_sha else options.get("packages") or [],
            "no_index": options.get("no_index"),
            "index_url": options.get("index_url", ""),
            "extra_index_urls": options.get("extra_index_urls"),
            "find_links": options.get("find_links"),
            "patches": options.get("patches"),
            "no_deps": options.get("packages_no_deps"),
            "bytecode": options.get("bytecode", True),
        },
        {"keep": int(options["keep"]), "local_facts": options.get("local_facts") or {}},
    )
    directory = plan["dir"]
    lock = "%s/venvs/.%s.lock" % (root, plan["hash"])
    env_file = "%s/venvs/.%s.pip.env" % (root, plan["hash"])
    link_target = directory if plan["switch"] and not options.get("check_mode") else plan["previous"]
    plan.update(
        root=root,
        lock=lock,
        pip_env_file=env_file,
        pip_install=pip_install(directory, lock, options, env_file),
        requirements=["--require-hashes", "-r", directory + "/requirements.lock"] if options.get("lock_file") else list(options.get("packages") or []),
        link_target=link_target,
        refusals=refusals(host, options),
    )
    pruned = prune_plan(host.get("venvs") or [], directory, link_target, options.get("local_facts") or {}, int(options["keep"]))
    plan.update(remove=pruned["remove"], prune_stopped=pruned["stopped"])
    return plan


_PINNED = re.compile(r"^[A-Za-z0-9._-]+(\[[A-Za-z0-9,._-]+\])?==\S+$")


def variable_refusals(v):
    """The sglang_venv role's variables checked before any change: [] when they are all good, else one refusal per
    variable that is wrong, each naming it. v: the role's variables by name (sglang_venv_*). The lock file and the
    patches are files on the controller (relative paths from its working directory, as Ansible's `file` test)."""
    packages, lock_file = v["sglang_venv_packages"] or [], v["sglang_venv_lock_file"] or ""
    patches = v["sglang_venv_patches"] or []
    root_refusal = owned_paths.venv_root_refusal(v["sglang_venv_root"])
    checks = [
        (root_refusal == "", "sglang_venv_root: a directory of its own: %s." % root_refusal),
        (
            values.to_int(v["sglang_venv_keep"]) >= 2,
            "sglang_venv_keep: >= 2, the current venv counts and a rollback needs the previous one (got %s)." % v["sglang_venv_keep"],
        ),
        (
            str(v.get("sglang_venv_python") or "").strip() != "",
            "sglang_venv_python: an interpreter, a name on PATH or a path (got '%s')." % v.get("sglang_venv_python"),
        ),
        (values.to_int(v["sglang_venv_build_timeout"]) > 0, "sglang_venv_build_timeout: seconds > 0 (got %s)." % v["sglang_venv_build_timeout"]),
        (
            len(lock_file) > 0 or (len(packages) > 0 and all(_PINNED.match(str(p)) for p in packages)),
            "sglang_venv_packages: pinned requirements name==version, at least one, unless there is a lock file (got %s)." % (packages,),
        ),
        (
            no_deps_accepted(v["sglang_venv_packages_no_deps"], packages, lock_file),
            "sglang_venv_packages_no_deps: pinned requirements name==version, none of them also in sglang_venv_packages, and "
            "none with sglang_venv_lock_file (got %s)." % (v["sglang_venv_packages_no_deps"],),
        ),
        (lock_file == "" or os.path.isfile(lock_file), "sglang_venv_lock_file: a file on the controller (got '%s')." % lock_file),
        (all(os.path.isfile(str(p)) for p in patches), "sglang_venv_patches: files on the controller (got %s)." % (patches,)),
    ]
    proxies = [secrets.proxy_refusal(name, v.get(name, "")) for name in ("sglang_venv_http_proxy", "sglang_venv_https_proxy")]
    proxies.append(secrets.no_proxy_refusal("sglang_venv_no_proxy", v.get("sglang_venv_no_proxy", "")))
    return [msg for ok, msg in checks if not ok] + [msg for msg in proxies if msg]
