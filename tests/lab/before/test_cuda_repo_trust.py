"""Nothing unverified reaches apt's trusted places (issue 13 item 4): the cuda-keyring package and the repository key
are downloaded where apt never reads, their keys' fingerprints checked (trusted_key: no gpg on the host, as on a minimal
Debian), and only then installed. On the before image; each test starts without cuda-keyring (purged), so the role has
to fetch it. The lab mirror's key is a throwaway made with the mirror, so its fingerprint is read from the host.
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
    crc = 0xB704CE
    for byte in data:
        crc ^= byte << 16
        for _bit in range(8):
            crc <<= 1
            if crc & 0x1000000:
                crc ^= 0x1864CFB
    text = base64.b64encode(data).decode()
    lines = [text[i : i + 64] for i in range(0, len(text), 64)]
    checksum = base64.b64encode((crc & 0xFFFFFF).to_bytes(3, "big")).decode()
    return "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n%s\n=%s\n-----END PGP PUBLIC KEY BLOCK-----\n" % ("\n".join(lines), checksum)


def flat(out):
    return " ".join(out.split())


def test_a_keyring_package_with_another_key_is_refused_before_apt_trusts_it(fresh, run, host):
    _data, lab_fpr = lab_key_without_keyring(run)
    before = trusted(run)
    # NVIDIA's fingerprint (the default) against the lab mirror's package: refused, the lab key is not NVIDIA's
    rc, out, _recap = playbook(*REPO_ONLY)
    assert rc != 0 and "Refused, nothing written where apt reads keys: /usr/share/keyrings/cuda-archive-keyring.gpg: its key(s) %s, not %s" % (
        lab_fpr,
        NVIDIA,
    ) in flat(out), out[-3000:]
    assert trusted(run) == before and not host.package("cuda-keyring").is_installed
    assert run("ls %s" % DOWNLOADS).strip() == ""  # the refused download is not kept
    # a tampered package on a mirror (the lab's is read-only: a copy beside it): the mirror's cuda-keyring rebuilt
    # around two other keys, checked against the mirror's key
    with open(OTHER_KEYS, "rb") as fh:
        other = base64.b64encode(fh.read()).decode()
    run(
        "rm -rf /tmp/k && mkdir -p %(tampered)s && dpkg-deb -R %(deb)s /tmp/k && "
        "echo %(other)s | base64 -d > /tmp/k/usr/share/keyrings/cuda-archive-keyring.gpg && "
        "dpkg-deb --build /tmp/k %(tampered)s/cuda-keyring_1.1-1_all.deb >/dev/null"
        % {"deb": KEYRING_DEB, "other": other, "tampered": TAMPERED + "/debian12/x86_64"}
    )
    tampered = {"cuda_toolkit_repo_key_fingerprint": lab_fpr, "cuda_toolkit_repo_base_url": "file:" + TAMPERED}
    rc, out, _recap = playbook(*REPO_ONLY, extra_vars=tampered)
    assert rc != 0 and "/usr/share/keyrings/cuda-archive-keyring.gpg: its key(s) 215F48EE8D74C7137D22DB932CCCB6054D5D4E37, " in flat(out), out[-3000:]
    assert trusted(run) == before and not host.package("cuda-keyring").is_installed
    # the mirror's own package with the mirror's fingerprint: checked, installed, the repository usable
    rc, out, recap = playbook(*REPO_ONLY, extra_vars={"cuda_toolkit_repo_key_fingerprint": lab_fpr})
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
