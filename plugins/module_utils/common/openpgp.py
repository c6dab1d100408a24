# Copyright: blackwell.inference contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fingerprints of the OpenPGP keys in a key file (armored or binary), without gpg on the host.

apt trusts whatever key file its source names; the role checks a downloaded key (or the keys a cuda-keyring package
carries) against the expected fingerprint before the file goes anywhere apt reads. A fresh Debian host has gpgv but
not gpg, so the packets are read here (RFC 4880 framing; RFC 4880 section 12.2 v4 fingerprints, RFC 9580 v6)."""

from __future__ import annotations

import base64
import hashlib
import re

TAG_PUBLIC_KEY = 6
TAG_PUBLIC_SUBKEY = 14
_FPR = re.compile(r"^[0-9A-F]{40}([0-9A-F]{24})?$")


class OpenPGPError(ValueError):
    """Not a key file this reader understands."""


def normalize(fingerprint):
    """'EB69 3B30 35CD ...' / lower case -> 'EB693B3035CD...'; '' stays ''. Raises OpenPGPError for anything else."""
    text = (fingerprint or "").replace(" ", "").upper()
    if text and not _FPR.match(text):
        raise OpenPGPError("%r is not a key fingerprint (40 hex digits, or 64 for a v6 key)" % fingerprint)
    return text


BEGIN = "-----BEGIN PGP PUBLIC KEY BLOCK-----"
END = "-----END PGP PUBLIC KEY BLOCK-----"
_BLOCK = re.compile(re.escape(BEGIN) + "(.*?)" + re.escape(END), re.S)


def armored(data):
    text = data.decode("ascii", "replace") if isinstance(data, bytes) else data
    return BEGIN in text


def _block(body):
    lines = body.strip().splitlines()
    # armor headers (Version: ..., Comment: ...) end at the first empty line
    if any(not line.strip() for line in lines):
        lines = lines[next(i for i, line in enumerate(lines) if not line.strip()) + 1 :]
    payload = "".join(line.strip() for line in lines if line.strip() and not line.startswith("="))
    try:
        return base64.b64decode(payload, validate=True)
    except ValueError as exc:
        raise OpenPGPError("the armored key is not valid base64 (%s)" % exc) from exc


def dearmor(data):
    """The binary packets of every ASCII-armored block, one after the other (checksum lines dropped), or the data as it
    is when not armored. A block that opens and never ends is refused: apt's reader would see another file than this."""
    text = data.decode("ascii", "replace") if isinstance(data, bytes) else data
    if BEGIN not in text:
        return data if isinstance(data, bytes) else data.encode("latin-1")
    bodies = _BLOCK.findall(text)
    if len(bodies) != text.count(BEGIN):
        raise OpenPGPError("an armored block has no end line")
    return b"".join(_block(body) for body in bodies)


def crc24(data):
    """RFC 4880 section 6.1."""
    crc = 0xB704CE
    for byte in data:
        crc ^= byte << 16
        for _bit in range(8):
            crc <<= 1
            if crc & 0x1000000:
                crc ^= 0x1864CFB
    return crc & 0xFFFFFF


def armor(binary):
    """One armored public key block of these packets (no headers, 64-column base64, CRC-24)."""
    text = base64.b64encode(binary).decode()
    lines = [text[i : i + 64] for i in range(0, len(text), 64)]
    checksum = base64.b64encode(crc24(binary).to_bytes(3, "big")).decode()
    return ("%s\n\n%s\n=%s\n%s\n" % (BEGIN, "\n".join(lines), checksum, END)).encode("ascii")


def checked_file(data):
    """(fingerprints, the bytes to write): the primary keys' fingerprints of every packet in the file (every armored
    block), and exactly those packets again - one armored block when the file was armored, the binary packets when
    not - so that apt never reads a packet that was not checked (text around or between blocks, a second block).
    Raises OpenPGPError."""
    binary = dearmor(data)
    found = fingerprints(binary)
    return found, armor(binary) if armored(data) else binary


def packets(data):
    """(tag, body) of every packet, old and new header formats."""
    pos, out = 0, []
    while pos < len(data):
        head = data[pos]
        if not head & 0x80:
            raise OpenPGPError("byte %d is not a packet header" % pos)
        if head & 0x40:  # new format
            tag, pos = head & 0x3F, pos + 1
            first = data[pos]
            if first < 192:
                length, pos = first, pos + 1
            elif first < 224:
                length, pos = ((first - 192) << 8) + data[pos + 1] + 192, pos + 2
            elif first == 255:
                length, pos = int.from_bytes(data[pos + 1 : pos + 5], "big"), pos + 5
            else:
                raise OpenPGPError("partial body lengths are not used in key files")
        else:  # old format
            tag, kind, pos = (head >> 2) & 0x0F, head & 0x03, pos + 1
            if kind == 3:
                raise OpenPGPError("indeterminate lengths are not used in key files")
            size = (1, 2, 4)[kind]
            length, pos = int.from_bytes(data[pos : pos + size], "big"), pos + size
        if pos + length > len(data):
            raise OpenPGPError("a packet runs past the end of the file")
        out.append((tag, data[pos : pos + length]))
        pos += length
    return out


def fingerprint_of(body):
    """The fingerprint of one public key packet body (v4: SHA-1; v6: SHA-256; v5: SHA-256)."""
    version = body[0]
    if version == 4:
        return hashlib.sha1(b"\x99" + len(body).to_bytes(2, "big") + body, usedforsecurity=False).hexdigest().upper()
    if version == 5:
        return hashlib.sha256(b"\x9a" + len(body).to_bytes(4, "big") + body).hexdigest().upper()
    if version == 6:
        return hashlib.sha256(b"\x9b" + len(body).to_bytes(4, "big") + body).hexdigest().upper()
    raise OpenPGPError("key packet version %d is not supported" % version)


def fingerprints(data):
    """The primary keys' fingerprints in a key file (subkeys are not what apt's Signed-By is checked against)."""
    found = [fingerprint_of(body) for tag, body in packets(dearmor(data)) if tag == TAG_PUBLIC_KEY]
    if not found:
        raise OpenPGPError("no public key in the file")
    return found


def verdict(found, expected):
    """'' when the file holds exactly the expected key (or no fingerprint is expected); else why not."""
    expected = normalize(expected)
    if not expected:
        return ""
    if found == [expected]:
        return ""
    if expected in found:
        return "it holds more keys than the expected one: %s" % ", ".join(found)
    return "its key(s) %s, not %s" % (", ".join(found), expected)
