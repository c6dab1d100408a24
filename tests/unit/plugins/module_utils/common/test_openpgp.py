"""Key fingerprints without gpg: key files made by GnuPG 2.2 (Debian 12), with the fingerprints gpg printed for them
(`gpg --with-colons --list-keys`)."""

import os

import pytest

from ansible_collections.blackwell.inference.plugins.module_utils.common import openpgp

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")
ED25519 = "215F48EE8D74C7137D22DB932CCCB6054D5D4E37"  # lab-key-ed25519.asc: `gpg --armor --export`
RSA2048 = "89194B4571AE8D63F2B6179B323B0DF88B41F6E6"
NVIDIA = "EB693B3035CD5710E231E123A4B469963BF863CC"


def read(name):
    with open(os.path.join(DATA, name), "rb") as fh:
        return fh.read()


def test_an_armored_key_has_the_fingerprint_gpg_prints():
    assert openpgp.fingerprints(read("lab-key-ed25519.asc")) == [ED25519]


def test_a_binary_keyring_with_two_keys_lists_both_primaries():
    # each key also carries a user id and a self-signature; old-format packet headers (gpg --export)
    assert openpgp.fingerprints(read("lab-keys-two.gpg")) == [ED25519, RSA2048]


@pytest.mark.parametrize(
    "found,expected,why",
    [
        ([ED25519], "", ""),  # no fingerprint asked: reported only
        ([ED25519], ED25519.lower(), ""),
        ([ED25519], " ".join(ED25519[i : i + 4] for i in range(0, 40, 4)), ""),
        ([RSA2048], ED25519, "its key(s) %s, not %s" % (RSA2048, ED25519)),
        ([ED25519, RSA2048], ED25519, "it holds more keys than the expected one"),
    ],
)
def test_verdict(found, expected, why):
    got = openpgp.verdict(found, expected)
    assert got.startswith(why) if why else got == ""


@pytest.mark.parametrize("data", [b"", b"not a key", b"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n!!!!\n-----END PGP PUBLIC KEY BLOCK-----\n"])
def test_what_is_not_a_key_file_is_refused(data):
    with pytest.raises(openpgp.OpenPGPError):
        openpgp.fingerprints(data)


def test_a_truncated_file_is_refused():
    with pytest.raises(openpgp.OpenPGPError, match="past the end"):
        openpgp.fingerprints(read("lab-keys-two.gpg")[:-20])


def test_fingerprints_are_normalized_or_refused():
    assert openpgp.normalize("eb69 3b30 35cd 5710 e231 e123 a4b4 6996 3bf8 63cc") == NVIDIA
    with pytest.raises(openpgp.OpenPGPError):
        openpgp.normalize("3BF863CC")  # a key id is not a fingerprint
