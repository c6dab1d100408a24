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


# lab-key-two-blocks.asc: lab-key-ed25519.asc followed by a second block, the RSA key (`gpg --armor --export`), as an
# attacker would append one; `gpg --show-keys` lists both keys of it, and so does apt
TWO_BLOCKS = "lab-key-two-blocks.asc"


@pytest.mark.parametrize(
    "name,found",
    [
        ("lab-key-ed25519.asc", [ED25519]),
        (TWO_BLOCKS, [ED25519, RSA2048]),  # every block is read, not the first only
        ("lab-keys-two.gpg", [ED25519, RSA2048]),
    ],
)
def test_every_block_of_a_key_file_is_read(name, found):
    assert openpgp.fingerprints(read(name)) == found
    assert openpgp.checked_file(read(name))[0] == found


def test_a_second_block_after_the_expected_key_is_refused_naming_it():
    found, _data = openpgp.checked_file(read(TWO_BLOCKS))
    assert openpgp.verdict(found, ED25519) == "it holds more keys than the expected one: %s, %s" % (ED25519, RSA2048)


@pytest.mark.parametrize(
    "data,written",
    [
        # gpg's own armor comes back byte for byte
        (read("lab-key-ed25519.asc"), read("lab-key-ed25519.asc")),
        # text around the block (a comment, trailing lines) is not written: only the packets checked
        (b"NVIDIA CUDA repository key\n" + read("lab-key-ed25519.asc") + b"\nhello\n", read("lab-key-ed25519.asc")),
        # armor headers dropped, the packets kept
        (read("lab-key-ed25519.asc").replace(b"BLOCK-----\n\n", b"BLOCK-----\nVersion: GnuPG v2\nComment: x\n\n", 1), read("lab-key-ed25519.asc")),
        # a binary keyring is written as it is (every packet of it was parsed)
        (read("lab-keys-two.gpg"), read("lab-keys-two.gpg")),
    ],
)
def test_what_is_written_is_exactly_the_packets_checked(data, written):
    assert openpgp.checked_file(data)[1] == written


def test_the_two_block_file_written_would_be_both_keys_in_one_block():
    # (refused by the verdict; were both expected, apt would get one block with exactly the packets checked)
    _found, data = openpgp.checked_file(read(TWO_BLOCKS))
    assert data.count(b"BEGIN PGP PUBLIC KEY BLOCK") == 1 and openpgp.fingerprints(data) == [ED25519, RSA2048]


def test_a_block_without_its_end_line_is_refused():
    cut = read(TWO_BLOCKS).rsplit(b"-----END", 1)[0]
    with pytest.raises(openpgp.OpenPGPError, match="no end line"):
        openpgp.checked_file(cut)
