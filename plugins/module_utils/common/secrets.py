# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Credentials in URLs (an index with a token, a repository or a proxy with user:password) kept apart from what
everyone can read.

What every user may read - argv (ps), a 0644 file, the marker, a plan the play prints - gets the URL without its
credentials (redact). The credentials go only into files created 0600 by the secret_file module: apt's
auth.conf.d (netrc: apt_logins) and the environment pip runs with (env_file: PIP_INDEX_URL, PIP_EXTRA_INDEX_URL and
the proxies, which pip reads as its --index-url, --extra-index-url and proxies)."""

from __future__ import annotations

import re
import shlex
from urllib.parse import unquote, urlsplit, urlunsplit


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
