# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cuda_toolkit role's plan (pure logic): which exact NVIDIA packages make up the toolkits wanted, and what a run
has to do from one reading of the host (role_plan, returned by the toolkit_probe action with its reading)."""

from __future__ import annotations

import json
import re

from ansible_collections.blackwell.inference.plugins.module_utils.common import apt_repo, failure, owned_paths, secrets, values
from ansible_collections.blackwell.inference.plugins.module_utils.cuda import arch as cuda_arch

RELEASE_RE = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")
SLIM_COMPONENTS = (
    "cuda-nvcc",
    "cuda-crt",
    "cuda-nvvm",
    "cuda-cudart",
    "cuda-cudart-dev",
    "cuda-cccl",
    "libcurand",
    "libcurand-dev",
    "cuda-nvrtc",
    "cuda-nvrtc-dev",
    "cuda-driver-dev",
)
# Pull the driver or float: never part of a plan.
FORBIDDEN = re.compile(r"^(cuda|cuda-\d+-\d+|cuda-runtime-.*|cuda-drivers.*|cuda-toolkit|cuda-toolkit-\d+|nvidia-.*|libnvidia-.*)$")


class PlanError(ValueError):
    pass


def release_parts(release):
    m = RELEASE_RE.match(str(release))
    if not m:
        raise PlanError("cuda_toolkit_versions: %r is not a full CUDA release X.Y.Z (e.g. 13.0.2)" % (release,))
    return tuple(int(x) for x in m.groups())


def package_names(release, components):
    """Package names of one release, config-common packages first (they register the alternatives)."""
    major, minor, _patch = release_parts(release)
    xy = "%d-%d" % (major, minor)
    names = ["cuda-toolkit-config-common", "cuda-toolkit-%d-config-common" % major, "cuda-toolkit-%s-config-common" % xy]
    names += ["%s-%s" % (c, xy) for c in SLIM_COMPONENTS]
    if components == "full":
        names.append("cuda-toolkit-%s" % xy)
    elif components != "slim":
        raise PlanError("cuda_toolkit_components must be one of slim, full; got %r" % (components,))
    return names


def plan(releases, components, known, overrides=None):
    """[{release, version: "X.Y", home_suffix, packages: ["name=version", ...]}] or PlanError.

    known: {release: {min_driver, packages: {name: version}}}; overrides: {release: {name: version}}.
    """
    overrides = overrides or {}
    out = []
    for release in releases:
        major, minor, _patch = release_parts(release)
        pins = dict((known.get(release) or {}).get("packages") or {})
        pins.update(overrides.get(release) or {})
        names = package_names(release, components)
        missing = [n for n in names if n not in pins]
        if missing:
            raise PlanError(
                "no pinned versions for CUDA %s packages %s: add them to cuda_toolkit_package_versions['%s'] "
                "(the role pins every component; known releases: %s)"
                % (release, ", ".join(missing), release, ", ".join(sorted(r for r, v in known.items() if v.get("packages"))) or "none")
            )
        bad = [n for n in names if FORBIDDEN.match(n)]
        if bad:
            raise PlanError("refusing packages that pull the driver or float: %s" % ", ".join(bad))
        out.append({"release": release, "version": "%d.%d" % (major, minor), "packages": ["%s=%s" % (n, pins[n]) for n in names]})
    return out


def newest(releases):
    """The newest release wanted, compared as numbers (13.0.2 over 12.9.1), as it was given."""
    if not releases:
        raise PlanError("cuda_toolkit_versions must list at least one release (got %r)" % (releases,))
    return max(releases, key=release_parts)


def home(releases, root="/usr/local"):
    """Where the toolkit a service should use lives: <root>/cuda-X.Y of the newest release wanted (13.0.2 over 12.9.1),
    the directory apt's packages and NVIDIA's runfile both install to. The toolkit role's answer to the service role."""
    major, minor, _patch = release_parts(newest(releases))
    return "%s/cuda-%d.%d" % (str(root).rstrip("/"), major, minor)


# NVIDIA names a repository's architecture x86_64 or sbsa (aarch64 servers)
_REPO_ARCH = {"x86_64": "x86_64", "aarch64": "sbsa"}


def repo_url(base_url, distro, arch, facts):
    """NVIDIA's repository for a host: <base>/<distro><version>/<arch>/, e.g. .../debian12/x86_64/. distro and arch
    are the role's overrides (empty: from the host's facts: Debian by its major version, Ubuntu as 2404). Without the
    base URL's credentials (they go to apt's auth.conf.d: the .sources file, the plan and the play's output are
    world-readable)."""
    if not distro:
        name = facts["distribution"]
        version = facts["distribution_major_version"] if name == "Debian" else str(facts["distribution_version"]).replace(".", "")
        distro = "%s%s" % (name.lower(), version)
    if not arch:
        arch = _REPO_ARCH.get(facts["architecture"], facts["architecture"])
    return "%s/%s/%s/" % (re.sub("/+$", "", secrets.redact(base_url)), distro, arch)


_KEYRING_INSTALLED = re.compile(r"^\S+ ok installed$")


def work(plan_, reading, options):
    """What the change phases have to do, decided once from one reading of the host (toolkit_probe's or the lock's).

    options: method (apt, runfile), repo_source (deb822, keyring, none), hold, repo_url (the role's repository); for
    deb822 also repo_name and key_fingerprint (what the repo phase writes: apt_repo.in_place). Returns {host: the
    reading, changes (changes()), dpkg (dpkg_state()), keyring_installed, repo (a deb822 source or its key not yet as
    the phase writes them, or the cuda-keyring package still to install), repo_why (why, for deb822), sources_naming
    (the reading's apt source files that fetch from repo_url: apt_repo.naming), apt (a pinned package missing, unfinished or
    below its pin, a dpkg run left unfinished, a pin not held yet), links (to pin, record or put back), any (one of
    them, or a runfile install, checked each run)}."""
    stdout = (reading.get("packages") or {}).get("stdout") or ""
    changes_ = changes(plan_, parse_installed(stdout))
    dpkg = dpkg_state(stdout)
    apt = options["method"] == "apt"
    keyring_installed = bool(_KEYRING_INSTALLED.match(dpkg["status"].get("cuda-keyring", "")))
    repo_why = []
    # the source files that fetch from the role's repository (the preflight refuses a second one for deb822)
    naming = apt_repo.naming(reading.get("apt_sources"), options.get("repo_url")) if apt else []
    if apt and options["repo_source"] == "deb822":
        repo_why = apt_repo.in_place(reading.get("apt_repo"), options.get("repo_name"), options.get("repo_url"), options.get("key_fingerprint"))
    repo = apt and (bool(repo_why) or (options["repo_source"] == "keyring" and not keyring_installed))
    apt_work = apt and (changes_["apt"] or bool(dpkg["interrupted"]) or (bool(options["hold"]) and bool(changes_["unheld"])))
    links = bool((reading.get("links") or {}).get("needed"))
    return {
        "host": reading,
        "changes": changes_,
        "dpkg": dpkg,
        "keyring_installed": keyring_installed,
        "repo": repo,
        "repo_why": repo_why,
        "sources_naming": naming,
        "apt": apt_work,
        "links": links,
        "any": links or repo or apt_work or options["method"] == "runfile",
    }


def download_urls(url, o, keyring_url):
    """The downloads of the role: {key, keyring, runfiles: {release: src}} (their URLs as the variables give them)."""
    key = (o.get("repo_key_url") or (url + "3bf863cc.pub")) if url else ""
    return {"key": key, "keyring": keyring_url or "", "runfiles": {str(r): (v or {}).get("src", "") for r, v in (o.get("runfiles") or {}).items()}}


def download_proxy_login(o, downloads):
    """For each download (download_urls), the proxy variable whose login it needs (secrets.proxy_login_for; '' for none)."""

    def which(u):
        return secrets.proxy_login_for(u, o.get("http_proxy"), o.get("https_proxy"), o.get("no_proxy"))

    return {"key": which(downloads["key"]), "keyring": which(downloads["keyring"]), "runfiles": {r: which(u) for r, u in downloads["runfiles"].items()}}


def apt_logins_urls(options):
    """The URLs whose credentials go to apt's logins file (tasks/apt_access.yml): the repository, the key, the proxies."""
    return [str(u) for u in (options.get(k) for k in ("repo_base_url", "repo_key_url", "http_proxy", "https_proxy")) if u]


def apt_access_work(access, proxy_text, auth_text, auth_matches=None):
    """Whether tasks/apt_access.yml has anything to do (a changed, new or removed credential or proxy), from the
    probe's apt_access reading: apt's proxy file not holding proxy_text (root's, 0644; absent when it is ''), or its
    logins file not as auth_text wants it (absent when it is ''; else root's, 0600, and secret_file said it holds that
    text: auth_matches). True when the files were not read."""
    if not access:
        return True
    proxy, auth = access.get("proxy") or {}, access.get("auth") or {}
    if proxy_text:
        proxy_ok = bool(proxy.get("exists")) and (proxy.get("mode"), proxy.get("uid"), proxy.get("content")) == (0o644, 0, proxy_text)
    else:
        proxy_ok = not proxy.get("exists")
    if not auth_text:
        return not (proxy_ok and not auth.get("exists"))
    return not (proxy_ok and bool(auth.get("exists")) and (auth.get("mode"), auth.get("uid")) == (0o600, 0) and auth_matches is True)


def driver_too_old(driver_version, min_driver):
    """True when driver_version (e.g. 570.124.06) is below min_driver (580.95.05)."""

    def key(v):
        return tuple(int(x) for x in str(v).split("."))

    return key(driver_version) < key(min_driver)


def _blackwell(cc):
    """Whether a compute capability (cuda_arch's spelling) is 10.0 or newer; False for one that does not parse."""
    try:
        return cuda_arch.parse_entry(cc)[:2] >= (10, 0)
    except ValueError:
        return False


def host_refusals(facts, wanted, options):
    """What the cuda_toolkit role refuses of the host as cuda_facts read it, each message naming what to change.

    facts: ansible_facts['blackwell_cuda'] (toolkits, driver, compute_capabilities); wanted: the X.Y of every toolkit
    wanted; options: root, default (cuda_toolkit_default), newest (the newest release wanted), min_driver (its minimum
    driver, None when unknown), check_driver, require_open_kernel_module, live (--tags verify), check_mode, links (the
    probe's reading of the links: error, verify_refusal)."""
    facts = facts or {}
    known = [t.get("dir_version") for t in facts.get("toolkits") or []] + list(wanted or [])
    default = options.get("default") or ""
    driver = facts.get("driver") or {}
    answers = bool(driver.get("present")) and isinstance(driver.get("version"), str)
    minimum = options.get("min_driver")
    blackwell = [cc for cc in facts.get("compute_capabilities") or [] if _blackwell(cc)]
    links = options.get("links") or {}
    refusals = []
    if default and not (re.match(r"^\d+\.\d+$", default) and default in known):
        refusals.append(
            "cuda_toolkit_default=%s must be the X.Y of a toolkit that is installed under %s or wanted in cuda_toolkit_versions"
            " (known here: %s)." % (default, options.get("root"), ", ".join(str(k) for k in dict.fromkeys(known)))
        )
    if options.get("check_driver") and not (answers and (minimum is None or not driver_too_old(driver["version"], minimum))):
        why = (
            "no NVIDIA driver answers (%s)" % driver.get("error")
            if not answers
            else "driver %s (R%s, CUDA <= %s) is too old for CUDA %s, which needs >= %s"
            % (driver["version"], driver.get("branch"), driver.get("cuda_version"), options.get("newest"), minimum)
        )
        refusals.append(
            why + ". Upgrade the driver, or set cuda_toolkit_versions to releases it supports (or cuda_toolkit_check_driver=false for a host without GPUs)."
        )
    if options.get("require_open_kernel_module") and blackwell and driver.get("open_kernel_module") is False:
        refusals.append(
            "GPUs of compute capability %s (Blackwell) need NVIDIA's open kernel module, but the proprietary one is loaded:"
            " reinstall the driver with the open modules, or set cuda_toolkit_require_open_kernel_module=false." % ", ".join(blackwell)
        )
    # --tags verify changes nothing: a link away from where the record says fails it here (a run without puts it back)
    if options.get("live") and (links.get("error") is not None or (not options.get("check_mode") and links.get("verify_refusal") != "")):
        refusals.append(links.get("error") or links.get("verify_refusal"))
    return refusals


def _recorded(record, toolkit, arch):
    """True when the record says this arch compiled with the toolkit's compile chain as it is now."""
    entry = (record or {}).get(toolkit.get("path")) or {}
    return bool(toolkit.get("identity")) and entry.get(arch) == toolkit.get("identity")


def compile_needed(record, toolkits, version, arch, live):
    """Whether the verify phase compiles for this toolkit (X.Y) and arch: always when live (--tags verify), else unless a
    compile passed with the toolkit's compile chain as it is now (compile_record)."""
    if live:
        return True
    toolkit = next((t for t in toolkits or [] if t.get("dir_version") == version), None)
    return toolkit is None or not _recorded(record, toolkit, arch)


def jit_ready(toolkit):
    """Whether a toolkit (cuda_facts' entry) has what FlashInfer's JIT needs: curand headers and the driver stubs."""
    return bool(toolkit.get("has_curand_headers") and toolkit.get("has_driver_stubs"))


def verify_work(facts, versions, archs, reading, options):
    """Whether the verify phase has anything to check or record, or every one of its steps would be skipped or pass on
    what the host was read as (the role then skips them with one condition: tasks/verify.yml).

    facts: ansible_facts.blackwell_cuda (None when not read); versions: the toolkits wanted (X.Y); archs: the compile
    targets; reading: the preflight's (compile_record, links). options: live (--tags verify: compile every one),
    method (a runfile install is checked each run), changed (this run installed, finished or relinked something),
    check_mode (a toolkit not installed yet is not checked then). True when one of those says so, or a toolkit wanted
    does not report its release or lacks what FlashInfer's JIT needs, a compile is not on record for the toolkit as it
    is now, the links are not where they belong, or the record keeps an entry that no longer holds."""
    if options.get("live") or options.get("method") == "runfile" or options.get("changed") or not facts:
        return True
    toolkits = facts.get("toolkits") or []
    record = (reading or {}).get("compile_record") or {}
    for version in versions:
        toolkit = next((t for t in toolkits if t.get("dir_version") == version), None)
        if toolkit is None:
            if options.get("check_mode"):
                continue
            return True
        if toolkit.get("version") != version or not jit_ready(toolkit):
            return True
        if any(compile_needed(record, toolkits, version, arch, False) for arch in archs):
            return True
    if ((reading or {}).get("links") or {}).get("pending"):
        return True
    return compile_record(toolkits, [], record) != record


# the kernel verify compiles, on nvcc's stdin
KERNEL = "__global__ void scale(float *x, float a) { x[threadIdx.x] *= a; }"


def compile_argv(root, version, arch):
    """nvcc's argument list for one toolkit (X.Y) under root and one arch: a cubin of KERNEL, written nowhere."""
    return ["%s/cuda-%s/bin/nvcc" % (root, version), "-arch=%s" % arch, "-cubin", "-x", "cu", "-o", "/dev/null", "/dev/stdin"]


def compiles(versions, archs, toolkits, record, live):
    """The verify phase's compiles, one per toolkit wanted (X.Y) and arch, in that order: {version, arch, needed}.
    needed: the toolkit is there (cuda_facts' toolkits) and compile_needed says so."""
    present = {t.get("dir_version") for t in toolkits or []}
    return [{"version": v, "arch": a, "needed": v in present and compile_needed(record, toolkits, v, a, live)} for v in versions or [] for a in archs or []]


def compile_failure(compile_results):
    """The message for the compiles that failed, each with nvcc, its rc and the line that says why; '' when none did."""
    failed = []
    for r in compile_results or []:
        if not r.get("skipped") and r.get("rc") != 0:
            why = failure.cause(r.get("stderr"), r.get("stdout"))
            failed.append("%s -arch=%s: rc %s%s" % (r["cmd"][0], r["arch"], r.get("rc"), ": " + why if why else ""))
    return "the verify kernel did not compile (non-zero return code): " + "; ".join(failed) if failed else ""


def compile_record(toolkits, compile_results, record):
    """The record after this run: per toolkit path and arch, the toolkit's identity when a compile passed with it (this
    run, or an earlier one the identity still matches). Toolkits that are gone and stale entries drop out.

    compile_results: the cuda_compile module's results ({version, arch, skipped, rc})."""
    by_version = {t.get("dir_version"): t for t in toolkits or []}
    out = {}
    for t in toolkits or []:
        for arch, ident in ((record or {}).get(t.get("path")) or {}).items():
            if ident and ident == t.get("identity"):
                out.setdefault(t["path"], {})[arch] = ident
    for res in compile_results or []:
        if res.get("skipped") or res.get("rc") != 0:
            continue
        t = by_version.get(res["version"])
        if t and t.get("identity"):
            out.setdefault(t["path"], {})[res["arch"]] = t["identity"]
    return out


def compile_record_text(record):
    """The record file's content: JSON as the role has always written it (indent 4, sorted keys, a final newline)."""
    return json.dumps(record, indent=4, sort_keys=True, separators=(",", ": ")) + "\n"


def read_compile_record(path):
    """The record file's content ({toolkit path: {arch: identity}}), {} when absent or not of that shape."""
    if not path:
        return {}
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: {a: i for a, i in v.items() if isinstance(i, str)} for k, v in data.items() if isinstance(v, dict)}


def summarize(toolkits, compile_results, default, wanted=(), record=None, archs=()):
    """Per toolkit: version, release, path, jit_ready, wanted, compiled_for (archs that built: this run, or a compile
    the record vouches for with the toolkit as it is now), recorded (the archs of those taken from the record), default.

    compile_results: the cuda_compile module's results ({version, arch, skipped, rc}). archs: what each toolkit wanted
    compiles for; a (toolkit, arch) with no result (the verify phase's checks were skipped: verify_work) counts as a
    compile the module skipped."""
    built, recorded = {}, {}
    by_version = {t.get("dir_version"): t for t in toolkits or []}

    def from_record(version, arch):
        toolkit = by_version.get(version)
        if toolkit and _recorded(record, toolkit, arch):
            built.setdefault(version, []).append(arch)
            recorded.setdefault(version, []).append(arch)

    seen = set()
    for res in compile_results or []:
        version, arch = res["version"], res["arch"]
        seen.add((version, arch))
        if res.get("skipped"):
            from_record(version, arch)
            continue
        if res.get("rc") != 0:
            continue
        built.setdefault(version, []).append(arch)
    for version in wanted or ():
        for arch in archs or ():
            if (version, arch) not in seen:
                from_record(version, arch)
    default_path = (default or {}).get("path")
    return [
        {
            "version": t.get("version"),
            "release": t.get("release"),
            "path": t["path"],
            "jit_ready": jit_ready(t),
            "wanted": t.get("dir_version") in wanted,
            "compiled_for": built.get(t.get("dir_version"), []),
            "recorded": recorded.get(t.get("dir_version"), []),
            "default": t["path"] == default_path,
        }
        for t in toolkits
    ]


def summary_line(entry):
    recorded = entry.get("recorded") or []
    return "%s: CUDA %s%s, JIT-ready: %s, compiles: %s%s%s" % (
        entry["path"],
        entry["release"] or entry["version"] or "?",
        "" if entry["version"] else " (nvcc unusable)",
        "yes" if entry["jit_ready"] else "no",
        " ".join(entry["compiled_for"]) or ("FAILED" if entry["wanted"] else "not checked (not managed here)"),
        " (%s as recorded: the toolkit is unchanged since; --tags verify compiles again)" % " ".join(recorded) if recorded else "",
        " [/usr/local/cuda]" if entry["default"] else "",
    )


def _order(char):
    """dpkg's weight of one non-digit character: ~ sorts before the end, letters before other characters."""
    if char == "~":
        return -1
    if char.isalpha():
        return ord(char)
    return ord(char) + 256


def _verrevcmp(a, b):
    """dpkg's comparison of an upstream version or a revision: non-digit runs by _order, digit runs as numbers."""
    i = j = 0
    while i < len(a) or j < len(b):
        while (i < len(a) and not a[i].isdigit()) or (j < len(b) and not b[j].isdigit()):
            ac = _order(a[i]) if i < len(a) and not a[i].isdigit() else 0
            bc = _order(b[j]) if j < len(b) and not b[j].isdigit() else 0
            if ac != bc:
                return -1 if ac < bc else 1
            i, j = i + 1, j + 1
        si = i
        while i < len(a) and a[i].isdigit():
            i += 1
        sj = j
        while j < len(b) and b[j].isdigit():
            j += 1
        na, nb = int(a[si:i] or 0), int(b[sj:j] or 0)
        if na != nb:
            return -1 if na < nb else 1
    return 0


def _split_version(version):
    version = str(version).strip()
    epoch, sep, rest = version.partition(":")
    if not sep:
        epoch, rest = "0", version
    upstream, sep, revision = rest.rpartition("-")
    if not sep:
        upstream, revision = rest, ""
    return int(epoch or 0), upstream, revision


def compare_versions(a, b):
    """-1, 0 or 1 as `dpkg --compare-versions a lt|eq|gt b` says (epoch, upstream version, revision)."""
    ea, ua, ra = _split_version(a)
    eb, ub, rb = _split_version(b)
    if ea != eb:
        return -1 if ea < eb else 1
    return _verrevcmp(ua, ub) or _verrevcmp(ra, rb)


def parse_installed(stdout):
    """`dpkg-query -W -f='${Package} ${Version} ${Status}\\n' NAMES...` -> {name: {version, held}} of installed ones."""
    out = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) >= 5 and parts[-1] == "installed":
            out[parts[0]] = {"version": parts[1], "held": parts[2] == "hold"}
    return out


# dpkg's settled states: anything else (half-installed, unpacked, half-configured, triggers-awaited/-pending) is a dpkg
# run that did not finish, which `dpkg --audit` would report and `dpkg --configure --pending` finishes
_SETTLED = ("installed", "not-installed", "config-files")


def dpkg_state(stdout):
    """`dpkg-query -W -f='${Package} ${Version} ${Status}\\n'` (every package, no names) -> {status: {name: "want ok
    state"}, interrupted: [names of packages a dpkg run left unfinished, sorted]}: one read for the keyring's state and
    for an interrupted dpkg (a killed play, a power loss), instead of a dpkg-query and a dpkg --audit of their own."""
    status, interrupted = {}, set()
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) < 4:
            continue
        words = parts[-3:]
        status[parts[0]] = " ".join(words)
        if words[1] != "ok" or words[2] not in _SETTLED:
            interrupted.add(parts[0])
    return {"status": status, "interrupted": sorted(interrupted)}


def changes(plan_, installed):
    """What installing the plan does to each of its packages, given parse_installed's result.

    {install: [name], upgrade: [{name, installed, wanted, held}], downgrade: [...], unchanged: [name], unheld: [name],
    downgrades: the downgrades in words, apt: whether apt has anything to install or upgrade}:
    a downgrade is refused by the role (nothing pinned goes backwards behind the operator's back); an upgrade of a
    held package is a pin bump, which the role makes and holds again; unheld lists those the role has to hold after
    the install: not held yet, or upgraded (apt-get --allow-change-held-packages leaves an upgraded package unheld).
    """
    res = {"install": [], "upgrade": [], "downgrade": [], "unchanged": [], "unheld": []}
    for release in plan_:
        for spec in release["packages"]:
            name, _sep, wanted = spec.partition("=")
            have = installed.get(name)
            if have is None:
                res["install"].append(name)
            else:
                cmp = compare_versions(have["version"], wanted)
                entry = {"name": name, "installed": have["version"], "wanted": wanted, "held": have["held"]}
                if cmp < 0:
                    res["upgrade"].append(entry)
                elif cmp > 0:
                    res["downgrade"].append(entry)
                else:
                    res["unchanged"].append(name)
            # apt drops the hold of a package it upgrades through it (seen in the lab): hold those again too
            if not (have and have["held"]) or name in (u["name"] for u in res["upgrade"]):
                res["unheld"].append(name)
    res["downgrades"] = ", ".join("%(name)s from %(installed)s to %(wanted)s" % d for d in res["downgrade"])
    res["apt"] = bool(res["install"] or res["upgrade"])  # apt has work; without it the dry-run and the install are skipped
    return res


# apt's dry run must not list any of these: they are the driver, which this role never installs
DRIVER_PACKAGE = re.compile(r"^(nvidia-|libnvidia-|cuda-drivers)")


def _simulated(stdout, action):
    """The package names of `apt-get --simulate`'s lines for an action ('Inst', 'Remv'): `Inst name [old] (new ...)`."""
    out = []
    for line in (stdout or "").splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == action:
            out.append(parts[1])
    return out


def dry_run_argv(packages):
    """apt's dry run of the pinned packages; the packages the role holds itself may change (a pin bump: the preflight
    refused any downgrade)."""
    return ["apt-get", "--simulate", "--no-install-recommends", "--allow-change-held-packages", "install", *(packages or [])]


def dry_run(result, repo_base_url=""):
    """The verdict on `apt-get --simulate --no-install-recommends install PACKAGES` (a command result: rc, stdout,
    stderr): {ok, installs, msg}. Refused: apt cannot plan them, the plan installs a driver package (DRIVER_PACKAGE),
    or it removes any package (nothing may be lost). msg says what apt would install, or why it is refused and
    which variables to check."""
    result = result or {}
    installs = _simulated(result.get("stdout"), "Inst")
    drivers = [name for name in installs if DRIVER_PACKAGE.match(name)]
    removed = _simulated(result.get("stdout"), "Remv")
    if result.get("rc") != 0:
        why = (result.get("stderr") or "").strip() or "rc %s" % result.get("rc")
        msg = "apt cannot plan the pinned packages (%s): check cuda_toolkit_versions, cuda_toolkit_package_versions" % why
        msg += " and the repository (cuda_toolkit_repo_base_url=%s)" % secrets.redact(repo_base_url)
    elif drivers:
        msg = "the plan would install driver packages (%s): this role never touches the driver; check cuda_toolkit_package_versions" % ", ".join(drivers)
    elif removed:
        msg = "the plan would remove %s: nothing may be lost; check cuda_toolkit_versions and cuda_toolkit_package_versions" % ", ".join(removed)
    else:
        return {"ok": True, "installs": installs, "msg": "apt would install %d package(s): %s" % (len(installs), ", ".join(installs) or "none (all present)")}
    return {"ok": False, "installs": installs, "msg": msg}


_URL = re.compile(r"^(https?|file):")


def variable_refusals(v):
    """The cuda_toolkit role's variables checked before any change: [] when they are all good, else one refusal per
    variable that is wrong, each naming it. v: the role's variables by name (cuda_toolkit_*). The releases and pins the
    plan cannot make are refused by plan()."""
    versions, archs = v["cuda_toolkit_versions"], v["cuda_toolkit_verify_archs"] or []
    bad_archs = cuda_arch.nvcc_refusals(archs)
    # the URLs as a refusal may show them: without credentials
    base, distro, arch = secrets.redact(v["cuda_toolkit_repo_base_url"]), str(v["cuda_toolkit_repo_distro"]), str(v["cuda_toolkit_repo_arch"])
    key_url, fingerprint, source = secrets.redact(v["cuda_toolkit_repo_key_url"]), str(v["cuda_toolkit_repo_key_fingerprint"]), v["cuda_toolkit_repo_source"]
    key_source = key_url if source == "deb822" and key_url else base
    runfiles = v["cuda_toolkit_runfiles"] or {}
    # a file and a sha256 per release (NVIDIA publishes md5 only, which does not resist a forged file)
    no_runfile = [
        str(r)
        for r in versions or []
        if not isinstance(runfiles.get(str(r)), dict)
        or not (runfiles[str(r)].get("src") or "")
        or re.match(r"^sha256:[0-9a-f]{64}$", str(runfiles[str(r)].get("checksum") or "")) is None
    ]
    checks = [
        (len(versions or []) > 0, "cuda_toolkit_versions must list at least one release (got %s)." % (versions,)),
        (
            owned_paths.path_refusal(v["cuda_toolkit_root"]) == "",
            "cuda_toolkit_root must be %s." % owned_paths.path_refusal(v["cuda_toolkit_root"]),
        ),
        (
            not bad_archs,
            "cuda_toolkit_verify_archs entries must be nvcc archs like sm_120a, sm_120f or sm_89 (got %s in %s)." % (", ".join(map(str, bad_archs)), archs),
        ),
        (bool(_URL.match(base)), "cuda_toolkit_repo_base_url must be an http(s):// or file: URL (got %s)." % base),
        (
            distro == "" or re.match(r"^[a-z]+[0-9]+$", distro) is not None,
            "cuda_toolkit_repo_distro must be empty or NVIDIA's name like debian12, ubuntu2404 (got '%s')." % distro,
        ),
        (arch in ("", "x86_64", "sbsa"), "cuda_toolkit_repo_arch must be empty, x86_64 or sbsa (got '%s')." % arch),
        (key_url == "" or bool(_URL.match(key_url)), "cuda_toolkit_repo_key_url must be empty or an http(s):// or file: URL (got '%s')." % key_url),
        (
            fingerprint == "" or re.match(r"^[0-9A-Fa-f]{40}$", fingerprint.replace(" ", "")) is not None,
            "cuda_toolkit_repo_key_fingerprint must be empty (no check) or 40 hex digits (got '%s')." % fingerprint,
        ),
        (
            v["cuda_toolkit_method"] != "apt" or source == "none" or fingerprint != "" or not key_source.startswith("http:"),
            "cuda_toolkit_repo_key_fingerprint must be set when the %s comes over plain http (%s): anyone on the path could swap it."
            % ("key" if source == "deb822" else "cuda-keyring package", key_source),
        ),
        (
            re.match(r"^([0-9A-Fa-f]{64})?$", str(v.get("cuda_toolkit_repo_keyring_sha256") or "")) is not None,
            "cuda_toolkit_repo_keyring_sha256 must be empty or the cuda-keyring .deb's sha256, 64 hex digits (got '%s')."
            % v.get("cuda_toolkit_repo_keyring_sha256"),
        ),
        (values.to_int(v["cuda_toolkit_apt_retries"]) >= 0, "cuda_toolkit_apt_retries must be an integer >= 0 (got %s)." % v["cuda_toolkit_apt_retries"]),
        (
            values.to_int(v["cuda_toolkit_apt_retry_delay"]) >= 0,
            "cuda_toolkit_apt_retry_delay must be an integer >= 0 (got %s)." % v["cuda_toolkit_apt_retry_delay"],
        ),
        (
            values.to_int(v["cuda_toolkit_apt_lock_timeout"]) >= 0,
            "cuda_toolkit_apt_lock_timeout must be an integer >= 0 (got %s)." % v["cuda_toolkit_apt_lock_timeout"],
        ),
    ]
    checks += [
        (
            False,
            "cuda_toolkit_method=runfile needs cuda_toolkit_runfiles['%s'] with src (path or URL) and checksum sha256:<64 hex digits> "
            "(NVIDIA publishes md5 only, which does not resist a forged file: take the sha256 of the runfile you checked)" % r,
        )
        for r in (no_runfile if v["cuda_toolkit_method"] == "runfile" else [])
    ]
    proxies = [secrets.proxy_refusal(name, v.get(name, "")) for name in ("cuda_toolkit_http_proxy", "cuda_toolkit_https_proxy")]
    proxies.append(secrets.no_proxy_refusal("cuda_toolkit_no_proxy", v.get("cuda_toolkit_no_proxy", "")))
    return [msg for ok, msg in checks if not ok] + [msg for msg in proxies if msg]


def released(releases, components, known, overrides=None):
    """plan() with the refusal as the role says it: the releases and pins asked for, the releases known, and why."""
    try:
        return plan(releases, components, known, overrides)
    except PlanError as exc:
        raise PlanError(
            "cuda_toolkit_versions=%s with cuda_toolkit_package_versions=%s (known releases: %s): %s"
            % (_plain(releases), _plain(overrides or {}), ", ".join(str(k) for k in known), exc)
        ) from exc


def _plain(value):
    """A role variable as Jinja prints it (lists and dicts as Python's repr of plain str, int and bool)."""
    if isinstance(value, dict):
        return repr({str(k): _plain_item(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return repr([_plain_item(v) for v in value])
    return str(value)


def _plain_item(value):
    if isinstance(value, dict):
        return {str(k): _plain_item(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain_item(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return value
    return str(value)


def verify_archs(verify_archs_, compute_capabilities):
    """What verify compiles for: cuda_toolkit_verify_archs, else the GPUs' archs, else sm_120a (no GPUs)."""
    return list(verify_archs_ or []) or [cuda_arch.nvcc_for_entry(cc) for cc in compute_capabilities or []] or ["sm_120a"]


# a second apt source for the role's repository URL (the deb822 source)
_SECOND_SOURCE = (
    "%s already point(s) at %s (e.g. from the cuda-keyring package); a second source with another Signed-By makes apt"
    " update fail. Set cuda_toolkit_repo_source=keyring to use that source, or remove it and keep"
    " cuda_toolkit_repo_source=deb822."
)


def role_plan(reading, host_facts, options):
    """What the cuda_toolkit role does on a host, decided once from one reading of it (toolkit_probe's or the lock's).

    reading: the probe's result (packages, apt_sources, apt_repo, links, compile_record; ansible_facts when the module
    read); host_facts: the host's facts (distribution, distribution_major_version, distribution_version, architecture,
    for the repository's URL; blackwell_cuda when the reading has none). options: the role's variables without their
    prefix - versions, components, releases (the role's table), package_versions, method, repo_source, hold,
    repo_name, source_file, repo_base_url, repo_distro, repo_arch, repo_key_url, key_fingerprint, keyring_sha256, root, default,
    check_driver, require_open_kernel_module, verify_archs, http_proxy, https_proxy, no_proxy, runfiles - and live (--tags
    verify), check_mode.

    Returns work()'s keys (without host) and: releases (plan()), versions (X.Y), packages (every pin), newest,
    min_driver, repo_url, repo_base_url (named by apt's dry run), key_url and keyring_url (the apt method; without
    credentials), apt_proxy (apt's proxy
    configuration, without credentials: secrets.apt_proxy_conf; '' for none), apt_access (apt's proxy or logins file
    is not as the variables want it: apt_access_work; `any` then too), download_proxies ({http, https}: the
    proxies without credentials, for the key's and the keyring's download), download_proxy_login ({key, keyring,
    runfiles: {release: ...}}: the proxy variable whose login each download needs, '' for none), archs (what verify compiles for), refusals (of the
    host: host_refusals), change_refusals (a downgrade, a second source for the repository's URL), verify (whether the
    verify phase has anything to check when this run changes nothing: verify_work), live (--tags verify) and keep (the
    toolkit that keeps <root>/cuda after a runfile install). change_refusals also name a cuda-keyring package this run
    would download without keyring_sha256. Raises PlanError (released)."""
    o = options
    known = o.get("releases") or {}
    releases = released(o["versions"], o["components"], known, o.get("package_versions"))
    versions = [r["version"] for r in releases]
    cuda = ((reading.get("ansible_facts") or {}).get("blackwell_cuda")) or (host_facts or {}).get("blackwell_cuda") or {}
    newest_ = newest(o["versions"])
    min_driver = (known.get(newest_) or {}).get("min_driver")
    apt = o["method"] == "apt"
    url = repo_url(o.get("repo_base_url") or "", o.get("repo_distro"), o.get("repo_arch"), host_facts) if apt else None
    out = work(releases, reading, dict(o, repo_url=url))
    out.pop("host")
    links = reading.get("links") or {}
    archs = verify_archs(o.get("verify_archs"), cuda.get("compute_capabilities"))
    checks = {"root": o.get("root"), "default": o.get("default"), "newest": newest_, "min_driver": min_driver, "links": links}
    checks.update({k: o.get(k) for k in ("check_driver", "require_open_kernel_module", "live", "check_mode")})
    change_refusals = []
    if apt and out["changes"]["downgrade"]:
        change_refusals.append(
            "cuda_toolkit_versions=%s would downgrade %s: the role never moves an installed toolkit backwards (pin the installed"
            " release or a newer one in cuda_toolkit_versions and cuda_toolkit_package_versions)." % (_plain(o["versions"]), out["changes"]["downgrades"])
        )
    keyring_url = (url + "cuda-keyring_1.1-1_all.deb") if apt else None
    if apt and o["repo_source"] == "keyring" and not out["keyring_installed"] and not o.get("keyring_sha256"):
        change_refusals.append(
            "cuda_toolkit_repo_keyring_sha256 must be set: cuda-keyring is not installed, so this run would download %s and"
            " install it as root; give the sha256 of the package you checked (NVIDIA's differs per distro and architecture)." % keyring_url
        )
    others = [f for f in out["sources_naming"] if f != o.get("source_file")]
    if apt and o["repo_source"] == "deb822" and others:
        change_refusals.append(_SECOND_SOURCE % (", ".join(others), url))
    verify = verify_work(cuda or None, versions, archs, reading, {"live": o.get("live"), "method": o["method"], "check_mode": o.get("check_mode")})
    apt_proxy = secrets.apt_proxy_conf(o.get("http_proxy"), o.get("https_proxy"), o.get("no_proxy")) if apt else ""
    access = reading.get("apt_access")
    apt_access = apt and apt_access_work(access, apt_proxy, secrets.apt_logins(apt_logins_urls(o)), (access or {}).get("auth_matches"))
    out.update(
        releases=releases,
        versions=versions,
        packages=[p for r in releases for p in r["packages"]],
        newest=newest_,
        min_driver=min_driver,
        repo_url=url,
        repo_base_url=secrets.redact(o.get("repo_base_url") or "") if apt else None,
        key_url=(secrets.redact(o.get("repo_key_url")) or (url + "3bf863cc.pub")) if apt else None,
        keyring_url=keyring_url,
        apt_proxy=apt_proxy,
        apt_access=apt_access,
        any=out["any"] or apt_access,
        download_proxies={"http": secrets.redact(o.get("http_proxy") or ""), "https": secrets.redact(o.get("https_proxy") or "")},
        download_proxy_login=download_proxy_login(o, download_urls(url, o, keyring_url)),
        archs=archs,
        refusals=host_refusals(cuda, versions, checks),
        change_refusals=change_refusals,
        verify=verify,
        live=bool(o.get("live")),
        keep=(links.get("kept") or {}).get("version") or o.get("default") or min(versions, key=lambda v: tuple(int(x) for x in v.split("."))),
    )
    return out
