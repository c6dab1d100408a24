"""The role's own apt source (deb822) read from files and judged against what the repo phase writes: a converged host
skips the phase only when the source and its key are exactly that."""

import os
import shutil

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.common import apt_repo

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")
ED25519 = "215F48EE8D74C7137D22DB932CCCB6054D5D4E37"  # lab-key-ed25519.asc (test_openpgp.py)
URL = "file:/srv/cuda-mirror/debian12/x86_64/"
# /etc/apt/sources.list.d/cuda-toolkit.sources as ansible.builtin.deb822_repository (ansible-core 2.18) wrote it on the
# lab host (fields in the order of its option names)
WRITTEN = """X-Repolib-Name: cuda-toolkit
Signed-By: /etc/apt/keyrings/cuda-archive-keyring.asc
Suites: /
Types: deb
URIs: file:/srv/cuda-mirror/debian12/x86_64/
"""


def host(tmp_path, source=WRITTEN, key="lab-key-ed25519.asc", source_mode=0o644, key_mode=0o644):
    """A source file and a key file under tmp_path; the source's Signed-By names the key's real path."""
    key_path = str(tmp_path / "cuda-archive-keyring.asc")
    src_path = str(tmp_path / "cuda-toolkit.sources")
    if key is not None:
        shutil.copy(os.path.join(DATA, key), key_path)
        os.chmod(key_path, key_mode)
    if source is not None:
        with open(src_path, "w") as fh:
            fh.write(source.replace("/etc/apt/keyrings/cuda-archive-keyring.asc", key_path))
        os.chmod(src_path, source_mode)
    return src_path, key_path


def why(tmp_path, fingerprint=ED25519, url=URL, **files):
    src, key = host(tmp_path, **files)
    return apt_repo.in_place(apt_repo.read(src, key), "cuda-toolkit", url, fingerprint)


def test_the_source_as_deb822_repository_wrote_it_and_the_checked_key_are_in_place(tmp_path):
    src, key = host(tmp_path)
    reading = apt_repo.read(src, key)
    assert reading["source"]["stanzas"] == [apt_repo.wanted_fields("cuda-toolkit", URL, key)]
    assert reading["key"] == {"path": key, "present": True, "mode": "0644", "armored": True, "fingerprints": [ED25519], "error": None}
    assert apt_repo.in_place(reading, "cuda-toolkit", URL, ED25519) == []
    assert apt_repo.in_place(reading, "cuda-toolkit", URL, " ".join(ED25519[i : i + 4] for i in range(0, 40, 4)).lower()) == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"fingerprint": ""}, "no key fingerprint to check"),  # the key at the URL is the truth: fetched each run
        ({"fingerprint": "EB693B3035CD5710E231E123A4B469963BF863CC"}, "its key(s) %s, not EB693B30" % ED25519),  # a new pin
        ({"url": "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/"}, "is not the one stanza"),
        ({"source": WRITTEN.replace("Suites: /", "Suites: /\nArchitectures: amd64")}, "is not the one stanza"),
        ({"source": WRITTEN + "\nTypes: deb-src\nURIs: %s\nSuites: /\n" % URL}, "is not the one stanza"),
        ({"source": "Types deb\n"}, "cannot be read: line 1 is not 'Field: value'"),
        ({"source": None}, "cuda-toolkit.sources is missing"),
        ({"source_mode": 0o600}, "has mode 0600, not 0644"),
        ({"key": None}, "cuda-archive-keyring.asc is missing"),
        ({"key": "lab-keys-two.gpg"}, "it holds more keys than the expected one"),
        ({"key_mode": 0o640}, "has mode 0640, not 0644"),
        ({"fingerprint": "not-a-fingerprint"}, "is not a key fingerprint"),
    ],
)
def test_anything_else_leaves_the_repo_phase_work(tmp_path, change, expected):
    got = why(tmp_path, **change)
    assert got and expected in " ".join(got), got


def test_a_binary_key_under_an_asc_name_is_not_in_place(tmp_path):
    # apt reads a key file by its name: .asc armored. lab-keys-two.gpg holds two keys: both reasons are said.
    got = why(tmp_path, key="lab-keys-two.gpg", fingerprint=ED25519)
    assert any("is binary" in w for w in got) and any("more keys" in w for w in got)


def test_a_key_that_is_no_key_file_and_a_directory_in_its_place_are_reported_not_raised(tmp_path):
    src, key = host(tmp_path, key=None)
    with open(key, "wb") as fh:
        fh.write(b"not a key")
    assert apt_repo.read(src, key)["key"]["error"] == "byte 0 is not a packet header"
    os.unlink(key)
    os.mkdir(key)
    got = apt_repo.read(src, key)["key"]
    assert got["present"] is True and got["error"] == "not a regular file"
    assert apt_repo.in_place(None, "cuda-toolkit", URL, ED25519) == ["the source and its key were not read"]


@pytest.mark.parametrize(
    ("text", "stanzas"),
    [
        (WRITTEN, [{"X-Repolib-Name": "cuda-toolkit", "Signed-By": "/etc/apt/keyrings/cuda-archive-keyring.asc", "Suites": "/", "Types": "deb", "URIs": URL}]),
        ("# comment\nTypes: deb\n\n\nTypes: deb-src\n", [{"Types": "deb"}, {"Types": "deb-src"}]),
        # an inline key (deb822_repository with key data in signed_by): continuation lines, '.' for a blank line
        (
            "Types: deb\nSigned-By:\n -----BEGIN PGP PUBLIC KEY BLOCK-----\n .\n abc\n",
            [{"Types": "deb", "Signed-By": "-----BEGIN PGP PUBLIC KEY BLOCK-----\n.\nabc"}],
        ),
        ("", []),
    ],
)
def test_parse_deb822(text, stanzas):
    assert apt_repo.parse_deb822(text) == stanzas


@pytest.mark.parametrize("text", [" Types: deb\n", "Types deb\n", "Two words: x\n"])
def test_parse_deb822_refuses_what_is_no_field(text):
    with pytest.raises(ValueError):
        apt_repo.parse_deb822(text)


# The source the cuda-keyring package wrote on the lab host (its mirror's URL), and a deb822 one as the role writes it.
KEYRING_LIST = "deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] file:/srv/cuda-mirror/debian12/x86_64/ /\n"
DEB822 = "Types: deb\nURIs: file:/srv/cuda-mirror/debian12/x86_64/\nSuites: /\nSigned-By: /etc/apt/keyrings/cuda-archive-keyring.asc\n"
# Debian 12's own sources (debootstrap's one-line file), and a .list whose options hold a space
DEBIAN_LIST = "deb http://deb.debian.org/debian bookworm main\ndeb-src http://deb.debian.org/debian bookworm main\n"
SPACED = "deb [ arch=amd64 signed-by=/k.gpg ] https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/ /\n"


def test_source_uris_reads_list_and_sources_files_at_any_depth_as_apt_would(tmp_path):
    d = tmp_path / "sources.list.d"
    d.mkdir()
    (d / "cuda-debian12-x86_64.list").write_text(KEYRING_LIST)
    (d / "cuda-toolkit.sources").write_text(DEB822)
    (d / "debian.sources").write_text("Types: deb\nURIs: http://deb.debian.org/debian http://mirror.example/debian\nSuites: bookworm\n")
    (d / "off.sources").write_text("Enabled: no\n" + DEB822)  # apt skips a disabled stanza
    (d / "broken.sources").write_text("URIs: file:/srv/x/\nnot a field\n")  # read line by line
    (d / "nvidia.list").write_text(SPACED)
    (d / "cuda.list.save").write_text(KEYRING_LIST)  # not a source apt reads
    (tmp_path / "sources.list").write_text("# " + KEYRING_LIST + DEBIAN_LIST)  # a commented line fetches nothing
    got = apt_repo.source_uris(str(tmp_path))
    assert got == {
        str(tmp_path / "sources.list"): ["http://deb.debian.org/debian", "http://deb.debian.org/debian"],
        str(d / "broken.sources"): ["file:/srv/x/"],
        str(d / "cuda-debian12-x86_64.list"): ["file:/srv/cuda-mirror/debian12/x86_64/"],
        str(d / "cuda-toolkit.sources"): ["file:/srv/cuda-mirror/debian12/x86_64/"],
        str(d / "debian.sources"): ["http://deb.debian.org/debian", "http://mirror.example/debian"],
        str(d / "nvidia.list"): ["https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/"],
        str(d / "off.sources"): [],
    }
    mirror = apt_repo.naming(got, "file:/srv/cuda-mirror/debian12/x86_64")
    assert mirror == [str(d / "cuda-debian12-x86_64.list"), str(d / "cuda-toolkit.sources")]
    assert apt_repo.naming(got, "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/") == [str(d / "nvidia.list")]
    assert apt_repo.naming(got, "file:/srv/cuda-mirror") == []  # a URL is named whole, not as a prefix
    assert apt_repo.naming(got, "") == [] and apt_repo.source_uris(str(tmp_path / "absent")) == {}
