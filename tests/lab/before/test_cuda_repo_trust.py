"""Nothing unverified reaches apt's trusted places (issue 13 item 4, issue 47 item 2): the cuda-keyring package and the
repository key are downloaded where apt never reads, the package's sha256 checked (cuda_toolkit_repo_keyring_sha256,
required when the role downloads it), their keys' fingerprints checked (trusted_key: no gpg on the host, as on a minimal
Debian, every armored block read), and only then installed; the key file written is exactly the packets checked. On the
before image; each test starts without cuda-keyring (purged), so the role has to fetch it. The lab mirror's key is a
throwaway made with the mirror, so its fingerprint and its package's sha256 are read from the host: the lab sets its
mirror's (ct200 keeps the cuda-keyring it was found with, so its converge downloads nothing).
"""

import base64
import os

from ansible_collections.blackwell.inference.plugins.module_utils.common import openpgp

from ..conftest import MIRROR, playbook

NVIDIA = "EB693B3035CD5710E231E123A4B469963BF863CC"
KEYRING_DEB = MIRROR + "/debian12/x86_64/cuda-keyring_1.1-1_all.deb"
DOWNLOADS = "/var/lib/blackwell-inference/downloads"
TAMPERED = "/srv/tampered-mirror"
# apt's trusted places and its sources: nothing in them may change when a key is refused
TRUSTED = "/etc/apt/keyrings /etc/apt/trusted.gpg.d /usr/share/keyrings /etc/apt/sources.list.d"
# two keys that are not the mirror's (the unit tests' GnuPG-made keyring)
OTHER_KEYS = os.path.join(os.path.dirname(__file__), "..", "..", "unit", "plugins", "module_utils", "data", "lab-keys-two.gpg")
REPO_ONLY = ("--tags", "cuda_toolkit_preflight,cuda_toolkit_repo")
KEYRING = "/etc/apt/keyrings/cuda-archive-keyring.asc"
SOURCE = "/etc/apt/sources.list.d/cuda-toolkit.sources"
# repo.yml's tasks that write the deb822 source and fetch its key (skipped when both are in place)
OWN_SOURCE = "Own the apt source (deb822, signed-by)"
DOWNLOAD_KEY = "Download the repository signing key"


def sha256(run, path):
    return run("sha256sum %s" % path).split()[0]


def tampered_keyring(run, change):
    """The mirror's cuda-keyring rebuilt with `change` (a shell command run in its unpacked tree /tmp/k), on a mirror
    beside the lab's (which is read-only); its sha256."""
    deb = TAMPERED + "/debian12/x86_64/cuda-keyring_1.1-1_all.deb"
    unpack = "rm -rf /tmp/k && mkdir -p %s && dpkg-deb -R %s /tmp/k" % (os.path.dirname(deb), KEYRING_DEB)
    run("%s && %s && dpkg-deb --build /tmp/k %s >/dev/null" % (unpack, change, deb))
    return sha256(run, deb)


def trusted(run):
    return run("for d in %s; do [ -d $d ] && find $d -type f -exec md5sum {} + ; done | sort; echo" % TRUSTED)


def lab_key_without_keyring(run):
    """The mirror's key (bytes, fingerprint), then cuda-keyring purged (its key and source gone with it)."""
    data = base64.b64decode(run("base64 -w0 /usr/share/keyrings/cuda-archive-keyring.gpg"))
    run("dpkg --purge cuda-keyring >/dev/null && rm -rf " + DOWNLOADS)
    assert run("test -e /usr/share/keyrings/cuda-archive-keyring.gpg || echo gone").strip() == "gone"
    return data, openpgp.fingerprints(data)[0]


def armor(data):
    """An ASCII-armored public key block (RFC 4880 section 6: base64, CRC-24), as NVIDIA publishes 3bf863cc.pub."""
    text = base64.b64encode(data).decode()
    lines = [text[i : i + 64] for i in range(0, len(text), 64)]
    checksum = base64.b64encode(openpgp.crc24(data).to_bytes(3, "big")).decode()
    return "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n%s\n=%s\n-----END PGP PUBLIC KEY BLOCK-----\n" % ("\n".join(lines), checksum)


def flat(out):
    return " ".join(out.split())


def test_a_keyring_package_with_another_key_is_refused_before_apt_trusts_it(fresh, run, host):
    _data, lab_fpr = lab_key_without_keyring(run)
    before = trusted(run)
    mirror_sha = {"cuda_toolkit_repo_keyring_sha256": sha256(run, KEYRING_DEB)}
    # no sha256 for a package the role would download: refused in the preflight, nothing fetched
    rc, out, _recap = playbook(*REPO_ONLY)
    assert rc != 0 and "cuda_toolkit_repo_keyring_sha256 must be set: cuda-keyring is not installed, so this run would download" in flat(out), out[-3000:]
    assert trusted(run) == before and run("ls %s 2>/dev/null; echo" % DOWNLOADS).strip() == ""
    # NVIDIA's fingerprint (the default) against the lab mirror's package: refused, the lab key is not NVIDIA's
    rc, out, _recap = playbook(*REPO_ONLY, extra_vars=mirror_sha)
    assert rc != 0 and "Refused, nothing written where apt reads keys: /usr/share/keyrings/cuda-archive-keyring.gpg: its key(s) %s, not %s" % (
        lab_fpr,
        NVIDIA,
    ) in flat(out), out[-3000:]
    assert trusted(run) == before and not host.package("cuda-keyring").is_installed
    assert run("ls %s" % DOWNLOADS).strip() == ""  # the refused download is not kept
    # a tampered package on a mirror (the lab's is read-only: a copy beside it): the mirror's cuda-keyring rebuilt
    # around two other keys, its own sha256 given (the operator checked the wrong file), checked against the mirror's key
    with open(OTHER_KEYS, "rb") as fh:
        other = base64.b64encode(fh.read()).decode()
    other_sha = tampered_keyring(run, "echo %s | base64 -d > /tmp/k/usr/share/keyrings/cuda-archive-keyring.gpg" % other)
    tampered = {"cuda_toolkit_repo_key_fingerprint": lab_fpr, "cuda_toolkit_repo_base_url": "file:" + TAMPERED, "cuda_toolkit_repo_keyring_sha256": other_sha}
    rc, out, _recap = playbook(*REPO_ONLY, extra_vars=tampered)
    assert rc != 0 and "/usr/share/keyrings/cuda-archive-keyring.gpg: its key(s) 215F48EE8D74C7137D22DB932CCCB6054D5D4E37, " in flat(out), out[-3000:]
    assert trusted(run) == before and not host.package("cuda-keyring").is_installed
    # the mirror's own package with the mirror's fingerprint: checked, installed, the repository usable
    rc, out, recap = playbook(*REPO_ONLY, extra_vars=dict(mirror_sha, cuda_toolkit_repo_key_fingerprint=lab_fpr))
    assert rc == 0 and recap["changed"] > 0, out[-3000:]
    assert host.package("cuda-keyring").is_installed and "cuda-nvcc-13-0" in run("apt-cache policy cuda-nvcc-13-0")


def test_a_repository_key_with_the_wrong_fingerprint_is_never_written_where_apt_reads_and_one_in_place_is_not_fetched_again(fresh, run, host):
    data, lab_fpr = lab_key_without_keyring(run)
    key = armor(data)
    run("echo %s | base64 -d > /srv/lab-key.asc" % base64.b64encode(key.encode()).decode())
    before = trusted(run)
    deb822 = {"cuda_toolkit_repo_source": "deb822", "cuda_toolkit_repo_key_url": "file:/srv/lab-key.asc"}
    rc, out, _recap = playbook(*REPO_ONLY, extra_vars=deb822)  # NVIDIA's fingerprint expected
    assert rc != 0 and "%s/cuda-archive-key.asc: its key(s) %s, not %s" % (DOWNLOADS, lab_fpr, NVIDIA) in flat(out), out[-3000:]
    assert trusted(run) == before  # no key in /etc/apt/keyrings, no cuda-toolkit.sources
    pinned = dict(deb822, cuda_toolkit_repo_key_fingerprint=lab_fpr)
    rc, out, recap = playbook(*REPO_ONLY, extra_vars=pinned)
    assert rc == 0 and recap["changed"] > 0 and OWN_SOURCE in out, out[-3000:]
    assert host.file(KEYRING).content_string == key
    assert "Signed-By: %s" % KEYRING in run("cat %s" % SOURCE)
    assert "cuda-nvcc-13-0" in run("apt-cache policy cuda-nvcc-13-0")
    # in place now: the next run reads the source and the key and skips the repo phase (no download, no write)
    rc, out, recap = playbook(*REPO_ONLY, extra_vars=pinned)
    assert rc == 0 and recap["changed"] == 0 and OWN_SOURCE not in out and DOWNLOAD_KEY not in out, out[-3000:]
    # another key where apt reads this one (two other keys, binary), and the source edited by hand: both put back
    with open(OTHER_KEYS, "rb") as fh:
        run("echo %s | base64 -d > %s" % (base64.b64encode(fh.read()).decode(), KEYRING))
    run("echo 'Architectures: amd64' >> %s" % SOURCE)
    assert run("md5sum < %s" % KEYRING) != run("md5sum < /srv/lab-key.asc") and "Architectures: amd64" in run("cat %s" % SOURCE)  # both hit
    rc, out, recap = playbook(*REPO_ONLY, extra_vars=pinned)
    assert rc == 0 and recap["changed"] >= 2 and OWN_SOURCE in out, out[-3000:]
    assert host.file(KEYRING).content_string == key and "Architectures" not in run("cat %s" % SOURCE)
    # the same key, unreadable for apt's _apt user: the mode is put right, the content left alone
    run("chmod 600 %s" % KEYRING)
    assert host.file(KEYRING).mode == 0o600  # the fault hit
    rc, out, recap = playbook(*REPO_ONLY, extra_vars=pinned)
    assert rc == 0 and recap["changed"] == 1 and host.file(KEYRING).mode == 0o644, out[-3000:]


def test_a_keyring_package_with_an_added_maintainer_script_is_refused_by_its_sha256_before_anything_reads_it(fresh, run, host):
    _data, lab_fpr = lab_key_without_keyring(run)
    before = trusted(run)
    mirror_sha = sha256(run, KEYRING_DEB)
    # the mirror's package, its key untouched (the fingerprint check alone would pass it), plus a postinst that runs as root
    script = "printf '#!/bin/sh\\ntouch /root/keyring-postinst-ran\\n' > /tmp/k/DEBIAN/postinst && chmod 755 /tmp/k/DEBIAN/postinst"
    bad_sha = tampered_keyring(run, script)
    assert bad_sha != mirror_sha and "keyring-postinst-ran" in run("dpkg-deb -I %s/debian12/x86_64/cuda-keyring_1.1-1_all.deb postinst" % TAMPERED)
    extra = {"cuda_toolkit_repo_base_url": "file:" + TAMPERED, "cuda_toolkit_repo_key_fingerprint": lab_fpr, "cuda_toolkit_repo_keyring_sha256": mirror_sha}
    rc, out, _recap = playbook(*REPO_ONLY, extra_vars=extra)
    # get_url names both: the sha256 given and the one the download has
    assert rc != 0 and "did not match %s; it was %s" % (mirror_sha, bad_sha) in flat(out), out[-3000:]
    assert "The keys it would make apt trust" not in out  # refused before the package was looked into
    assert trusted(run) == before and not host.package("cuda-keyring").is_installed
    assert run("test -e /root/keyring-postinst-ran && echo ran || echo never").strip() == "never"
    assert run("ls %s" % DOWNLOADS).strip() == ""  # the download that did not match is not kept


def test_a_repository_key_file_with_a_second_block_is_refused_naming_the_keys_and_nothing_is_written(fresh, run, host):
    data, lab_fpr = lab_key_without_keyring(run)
    with open(OTHER_KEYS, "rb") as fh:
        other = fh.read()
    # the mirror's key, then a second armored block (two other keys) appended: apt would trust all three
    two = armor(data) + "\n" + armor(other)
    run("echo %s | base64 -d > /srv/lab-key-two-blocks.asc" % base64.b64encode(two.encode()).decode())
    before = trusted(run)
    extra = {"cuda_toolkit_repo_source": "deb822", "cuda_toolkit_repo_key_url": "file:/srv/lab-key-two-blocks.asc"}
    extra["cuda_toolkit_repo_key_fingerprint"] = lab_fpr
    rc, out, _recap = playbook(*REPO_ONLY, extra_vars=extra)
    others = ", ".join(openpgp.fingerprints(other))
    assert rc != 0 and "%s/cuda-archive-key.asc: it holds more keys than the expected one: %s, %s" % (DOWNLOADS, lab_fpr, others) in flat(out), out[-3000:]
    assert trusted(run) == before and OWN_SOURCE not in out  # no key in /etc/apt/keyrings, no cuda-toolkit.sources
