"""Credentials in URLs (module_utils/common/secrets.py): what world-readable places get (the URL without them), and
what goes to the 0600 files only (apt's auth.conf.d logins, pip's environment)."""

import hashlib
import hmac
import os
import subprocess

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.common import secrets


@pytest.mark.parametrize(
    "url, bare, login, password",
    [
        ("https://user:s3cret@mirror.example/cuda/repos", "https://mirror.example/cuda/repos", "user", "s3cret"),
        # a token alone is a login with an empty password (pip's and requests' reading of it)
        ("https://TOKEN123@idx.example/simple/", "https://idx.example/simple/", "TOKEN123", ""),
        # percent-encoded characters in the credentials, a port, a query
        ("https://me%40corp:p%3Ass@idx.example:8443/simple?x=1", "https://idx.example:8443/simple?x=1", "me@corp", "p:ss"),
        ("http://proxyuser:pw@proxy.example:3128", "http://proxy.example:3128", "proxyuser", "pw"),
        # nothing to take out
        ("https://pypi.org/simple", "https://pypi.org/simple", "", ""),
        ("file:/srv/cuda-mirror", "file:/srv/cuda-mirror", "", ""),
        ("", "", "", ""),
        ("not a url", "not a url", "", ""),
    ],
)
def test_split_takes_the_credentials_out(url, bare, login, password):
    assert secrets.split(url) == (bare, login, password)
    assert secrets.redact(url) == bare


@pytest.mark.parametrize(
    "value, shown",
    [
        ("k:hunter2@x", "***@x"),
        ("ftp://u:hunter2@host:x/y", "ftp://host:x/y"),
        ("ftp://u:hunter2@h@st/y", "ftp://st/y"),
        ("user:hunter2@proxy:3128", "***@proxy:3128"),
    ],
)
def test_redact_masks_what_precedes_an_at_in_a_value_that_is_no_url(value, shown):
    assert secrets.redact(value) == shown


def test_apt_logins_name_host_port_and_path_of_each_url_with_credentials():
    text = secrets.apt_logins(
        [
            "https://user:s3cret@mirror.example/cuda/repos/",
            "https://mirror.example/other",  # no credentials: no line
            "http://proxyuser:p w@proxy.example:3128",
            "https://user:s3cret@mirror.example/cuda/repos/",  # once
        ]
    )
    assert text == ('machine mirror.example/cuda/repos login user password s3cret\nmachine proxy.example:3128 login proxyuser password "p w"\n')
    assert secrets.apt_logins(["https://pypi.org/simple", ""]) == ""
    assert secrets.apt_logins(None) == ""


@pytest.mark.parametrize(
    "http, https, no_proxy, want",
    [
        ("", "", "localhost", ""),
        ("http://u:pw@proxy.example:3128", "", "", 'Acquire::http::Proxy "http://proxy.example:3128";\n'),
        (
            "http://proxy.example:3128",
            "http://u:pw@proxy.example:3129/",
            "localhost, mirror.lan",
            'Acquire::http::Proxy "http://proxy.example:3128";\nAcquire::https::Proxy "http://proxy.example:3129/";\n'
            'Acquire::http::Proxy::localhost "DIRECT";\nAcquire::https::Proxy::localhost "DIRECT";\n'
            'Acquire::http::Proxy::mirror.lan "DIRECT";\nAcquire::https::Proxy::mirror.lan "DIRECT";\n',
        ),
    ],
)
def test_apt_proxy_conf_has_the_proxies_without_their_credentials(http, https, no_proxy, want):
    assert secrets.apt_proxy_conf(http, https, no_proxy) == want
    assert "pw" not in want


def test_env_file_is_what_sh_reads_back_exactly(tmp_path):
    env = {"PIP_INDEX_URL": "https://t0k'en@idx.example/simple", "PIP_EXTRA_INDEX_URL": "https://a/x https://b/y", "no_proxy": "localhost,.lan"}
    path = tmp_path / "pip.env"
    path.write_text(secrets.env_file(env))
    script = 'set -a; . "$0"; set +a; printf "%s\\n%s\\n%s\\n" "$PIP_INDEX_URL" "$PIP_EXTRA_INDEX_URL" "$no_proxy"'
    out = subprocess.run(["/bin/sh", "-c", script, str(path)], capture_output=True, text=True, check=True, env={"PATH": "/usr/bin:/bin"})
    assert out.stdout.splitlines() == [env["PIP_INDEX_URL"], env["PIP_EXTRA_INDEX_URL"], env["no_proxy"]]
    assert secrets.env_file({}) == ""


@pytest.mark.parametrize(
    "value, ok",
    [
        ("", True),
        ("http://proxy.example:3128", True),
        ("http://user:pw@proxy.example:3128/", True),
        ("https://proxy.example", True),
        ("proxy.example:3128", False),
        ("socks5://proxy.example:1080", False),
        ("http://proxy.example:31x8", False),
        ("http://proxy.example:3128/path", False),
        ("http://", False),
    ],
)
def test_proxy_refusal(value, ok):
    msg = secrets.proxy_refusal("cuda_toolkit_http_proxy", value)
    assert (msg is None) is ok
    if msg:
        assert msg.startswith("cuda_toolkit_http_proxy: ") and "pw" not in msg


def test_a_refused_proxy_is_shown_without_its_credentials():
    msg = secrets.proxy_refusal("sglang_venv_https_proxy", "ftp://user:hunter2@proxy.example:21")
    assert "hunter2" not in msg and "ftp://proxy.example:21" in msg


@pytest.mark.parametrize("value, ok", [("", True), ("localhost,127.0.0.1,.lan", True), ("a, b", True), ("a b", False), ("a,,b", False), ('a"', False)])
def test_no_proxy_refusal(value, ok):
    assert (secrets.no_proxy_refusal("sglang_venv_no_proxy", value) is None) is ok


def test_the_digest_key_is_made_once_random_and_0600_from_the_start(tmp_path, monkeypatch):
    path = tmp_path / "state" / "digest.key"
    assert secrets.digest_key(str(path)) is None and not path.exists()  # read only: nothing made
    made = []
    real_open = secrets.os.open
    monkeypatch.setattr(secrets.os, "open", lambda p, flags, mode=0o777: made.append(mode) or real_open(p, flags, mode))
    old = os.umask(0)  # the mode given at creation is all there is: never widened, never narrowed afterwards
    try:
        key = secrets.digest_key(str(path), create=True)
    finally:
        os.umask(old)
    assert made == [0o600] and len(key) == secrets.KEY_BYTES and oct(path.stat().st_mode & 0o777) == "0o600"
    assert secrets.digest_key(str(path), create=True) == key == secrets.digest_key(str(path))  # made once
    assert os.listdir(path.parent) == ["digest.key"]  # no temporary file left
    assert secrets.digest_key(str(tmp_path / "other.key"), create=True) != key  # random, per host
    path.write_bytes(b"short")
    with pytest.raises(ValueError, match="not a digest key"):
        secrets.digest_key(str(path))


@pytest.mark.parametrize(
    "key, sha256, shown",
    [
        (b"k" * 32, None, None),  # an absent file stays absent
        (None, "a" * 64, secrets.UNKEYED),  # no key yet (check mode before the first run): never the sha256
    ],
)
def test_keyed_without_a_file_or_a_key(key, sha256, shown):
    assert secrets.keyed(key, sha256) == shown


def test_a_keyed_digest_follows_the_content_and_cannot_be_tested_without_the_key():
    key, other = b"k" * 32, b"o" * 32
    sha = hashlib.sha256(b'HF_TOKEN="hf_abc"\n').hexdigest()
    got = secrets.keyed(key, sha)
    assert got.startswith(secrets.KEYED_PREFIX) and sha not in got
    assert got == secrets.keyed(key, sha)  # the same secret: the same digest (no revalidation)
    assert got != secrets.keyed(key, hashlib.sha256(b'HF_TOKEN="hf_abd"\n').hexdigest())  # a changed one revalidates
    assert got != secrets.keyed(other, sha)  # a guess cannot be tested without the host's key
    assert got == secrets.KEYED_PREFIX + hmac.new(key, sha.encode(), hashlib.sha256).hexdigest()


def test_keyed_observations_change_only_the_secret_files_sha256():
    seen = {
        "/etc/x/s.env": {"exists": True, "type": "file", "sha256": "a" * 64, "mode": 0o600},
        "/etc/x/u.conf": {"exists": True, "type": "file", "sha256": "b" * 64, "mode": 0o644},
        "/etc/x/gone.env": {"exists": False},
    }
    got = secrets.keyed_observations(seen, ["/etc/x//s.env", "/etc/x/gone.env"], b"k" * 32)
    assert got["/etc/x/s.env"] == dict(seen["/etc/x/s.env"], sha256=secrets.keyed(b"k" * 32, "a" * 64))
    assert got["/etc/x/u.conf"] == seen["/etc/x/u.conf"] and got["/etc/x/gone.env"] == {"exists": False}


@pytest.mark.parametrize(
    "url, http_proxy, https_proxy, no_proxy, which",
    [
        ("https://developer.download.nvidia.com/x.deb", "", "http://u:p@proxy.example:3128", "", "https_proxy"),
        ("http://mirror.example/x.deb", "http://u:p@proxy.example:3128", "", "", "http_proxy"),
        ("http://mirror.example/x.deb", "", "http://u:p@proxy.example:3128", "", ""),  # the other scheme's proxy
        ("https://developer.download.nvidia.com/x.deb", "", "http://proxy.example:3128", "", ""),  # no login: none needed
        ("https://mirror.corp.example/x.run", "", "http://u:p@proxy.example:3128", "corp.example", ""),  # no_proxy: direct
        ("https://mirror.corp.example:8443/x.run", "", "http://u:p@proxy.example:3128", ".corp.example,localhost", ""),
        ("https://nvidia.com/x.run", "", "http://u:p@proxy.example:3128", "corp.example", "https_proxy"),
        ("file:/srv/mirror/x.deb", "http://u:p@proxy.example:3128", "http://u:p@proxy.example:3128", "", ""),
        ("", "http://u:p@proxy.example:3128", "", "", ""),
    ],
)
def test_which_proxy_login_a_download_needs(url, http_proxy, https_proxy, no_proxy, which):
    assert secrets.proxy_login_for(url, http_proxy, https_proxy, no_proxy) == which
