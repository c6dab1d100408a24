# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Credentials in URLs (an index with a token, a repository or a proxy with user:password) kept apart from what
everyone can read.

What every user may read - argv (ps), a 0644 file, the marker, a plan the play prints - gets the URL without its
credentials (redact). The credentials go only into files created 0600 by the secret_file module: apt's
auth.conf.d (netrc: apt_logins) and the environment pip runs with (env_file: PIP_INDEX_URL, PIP_EXTRA_INDEX_URL and
the proxies, which pip reads as its --index-url, --extra-index-url and proxies).

A secret file's checksum is never shown as it is (a sha256 lets anyone who reads it test guesses): what the role
reports and fingerprints in its place is an HMAC-SHA256 under a random key of the host's, root's alone (keyed)."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import re
import shlex
from urllib.parse import unquote, urlsplit, urlunsplit
from urllib.request import proxy_bypass_environment


def split(url):
    """(url without its credentials, login, password) of url; login and password are '' when it has none (a token
    alone, https://TOKEN@host/, is a login with an empty password). Not a URL with a host: (url, '', '')."""
    url = str(url or "")
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return url, "", ""
    if "@" not in parts.netloc or not host:
        return url, "", ""
    login = unquote(parts.username or "")
    password = unquote(parts.password or "")
    netloc = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment)), login, password


_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)?[^/?#]*@")


def redact(url):
    """url without its credentials (what a 0644 file, argv or the play's output may show); a value that is no URL
    with a host but has an @ (a wrong variable, about to be refused) has what comes before it masked."""
    bare, login, password = split(url)
    if not (login or password) and "@" in bare:
        return _USERINFO.sub(lambda m: (m.group(1) or "") + "***@", bare, count=1)
    return bare


def _netrc_word(value):
    """A netrc token: apt splits on white space and reads a double-quoted token whole."""
    value = str(value)
    if not value or any(c.isspace() or c == '"' for c in value):
        return '"%s"' % value.replace('"', '\\"')
    return value


def apt_logins(urls):
    """apt's auth.conf.d text (netrc: `machine host[:port]/path login L password P`) for each URL that carries
    credentials (a repository, a proxy); '' when none does. The machine names the URL's host, port and path without
    the scheme, so it matches the repository's URIs and the proxy apt.conf names."""
    lines = []
    for url in urls or []:
        bare, login, password = split(url)
        if not (login or password):
            continue
        parts = urlsplit(bare)
        machine = parts.netloc + parts.path.rstrip("/")
        line = "machine %s login %s password %s" % (machine, _netrc_word(login), _netrc_word(password))
        if line not in lines:
            lines.append(line)
    return "".join(line + "\n" for line in lines)


def apt_proxy_conf(http_proxy="", https_proxy="", no_proxy=""):
    """An apt.conf.d file for the proxies, without their credentials (apt reads those from auth.conf.d: apt_logins);
    each host of no_proxy (comma-separated, as the environment variable) goes DIRECT. '' when no proxy is set."""
    http_proxy, https_proxy = str(http_proxy or ""), str(https_proxy or "")
    if not (http_proxy or https_proxy):
        return ""
    lines = []
    for scheme, proxy in (("http", http_proxy), ("https", https_proxy)):
        if proxy:
            lines.append('Acquire::%s::Proxy "%s";' % (scheme, redact(proxy)))
    for host in [h.strip() for h in str(no_proxy or "").split(",") if h.strip()]:
        for scheme, proxy in (("http", http_proxy), ("https", https_proxy)):
            if proxy:
                lines.append('Acquire::%s::Proxy::%s "DIRECT";' % (scheme, host))
    return "".join(line + "\n" for line in lines)


def proxy_login_for(url, http_proxy="", https_proxy="", no_proxy=""):
    """Which proxy variable's login a download of url needs ('http_proxy', 'https_proxy' or '' for none): the proxy of
    url's scheme, when it carries credentials and no_proxy does not exempt url's host (Python's own rule, the one the
    download follows). The download's environment names the proxy without them (it travels in the module's command
    line); the role sends them as a Proxy-Authorization header (urllib gives it to the proxy only: in the CONNECT of an
    https URL, never to the server) from a task with no_log."""
    try:
        parts = urlsplit(str(url or ""))
        host = parts.hostname
    except ValueError:
        return ""
    name = {"http": "http_proxy", "https": "https_proxy"}.get(parts.scheme)
    proxy = {"http_proxy": http_proxy, "https_proxy": https_proxy}.get(name) or ""
    _bare, login, password = split(proxy)
    if not host or not (login or password):
        return ""
    if no_proxy and proxy_bypass_environment(parts.netloc.rpartition("@")[2], {"no": str(no_proxy)}):
        return ""
    return name


def env_file(env):
    """A file `sh` sources (set -a; . FILE) for env {variable: value}: one NAME='value' line each, sorted."""
    return "".join("%s=%s\n" % (k, shlex.quote(str(v))) for k, v in sorted((env or {}).items()))


def proxy_refusal(name, value):
    """A refusal of a proxy variable, or None: empty (off), or an http(s):// URL with a host and nothing after it but
    a path of /."""
    value = str(value if value is not None else "")
    if value == "":
        return None
    try:
        parts = urlsplit(value)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.path in ("", "/") and not parts.query
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        ok = False
    if ok:
        return None
    return "%s: empty (no proxy) or a proxy URL http://[user:password@]host:port (got %s)." % (name, redact(value))


def no_proxy_refusal(name, value):
    """A refusal of a no_proxy variable, or None: hosts or domains separated by commas, no spaces inside one."""
    value = str(value if value is not None else "")
    if all(h.strip() and not any(c.isspace() or c in "\"';" for c in h.strip()) for h in value.split(",")) or value == "":
        return None
    return "%s: host names, domains or addresses separated by commas, as the no_proxy environment variable (got %s)." % (name, value)


KEY_BYTES = 32
KEYED_PREFIX = "hmac-sha256:"
# in place of a keyed digest while the host has no key yet (a check-mode run before the first real one)
UNKEYED = KEYED_PREFIX + "no-key"


def digest_key(path, create=False):
    """The host's key for the digests of secret files (bytes), read from path; None when it is absent and not create.
    Created once from os.urandom: written 0600 to a temporary file and linked into place (never there half-written or
    wider, and a second creator keeps the first one's key). A file that is no key of KEY_BYTES is refused."""
    try:
        with open(path, "rb") as fh:
            key = fh.read()
    except FileNotFoundError:
        if not create:
            return None
        os.makedirs(os.path.dirname(path) or ".", mode=0o755, exist_ok=True)
        tmp = "%s.%d.tmp" % (path, os.getpid())
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(os.urandom(KEY_BYTES))
                fh.flush()
                os.fsync(fh.fileno())
            with contextlib.suppress(FileExistsError):  # made meanwhile: that key stands
                os.link(tmp, path)
        finally:
            os.unlink(tmp)
        return digest_key(path)
    if len(key) != KEY_BYTES:
        raise ValueError("%s is not a digest key (%d bytes, not %d): remove it and a new one is made" % (path, len(key), KEY_BYTES))
    return key


def keyed(key, sha256):
    """What may be shown in place of a secret file's sha256 (hex): HMAC-SHA256 of it under the host's key, prefixed
    KEYED_PREFIX; UNKEYED without a key; None (absent) stays None."""
    if sha256 is None:
        return None
    if key is None:
        return UNKEYED
    return KEYED_PREFIX + hmac.new(key, str(sha256).encode("ascii"), hashlib.sha256).hexdigest()


def keyed_observations(observed, paths, key):
    """files.observe_all's map with the sha256 of each of `paths` (a file) replaced by keyed()."""
    wanted = {os.path.normpath(str(p)) for p in paths or []}
    out = {}
    for path, seen in (observed or {}).items():
        secret = os.path.normpath(path) in wanted and seen.get("sha256")
        out[path] = dict(seen, sha256=keyed(key, seen["sha256"])) if secret else seen
    return out
