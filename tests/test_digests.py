"""evbench_core.digests: SHA-256 and constant-time comparison without OpenSSL, against the
FIPS 180-2 examples (appendix B) and hashlib/hmac (OpenSSL here); that calling them loads no
OpenSSL is tests/test_import_weight.py's run-path check."""

import hashlib
import hmac
import os

import pytest

from evbench_core import digests

#: FIPS 180-2, appendix B.1 and B.2, and the empty message.
KNOWN = {
    b"": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    b"abc": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
    b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq": (
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
    ),
}


@pytest.mark.parametrize("message", list(KNOWN))
def test_sha256_of_the_fips_examples(message: bytes) -> None:
    assert digests.sha256(message).hexdigest() == KNOWN[message]


def test_sha256_fed_in_pieces_agrees_with_hashlib() -> None:
    data = os.urandom(3 * 65536 + 17)
    digest = digests.sha256()
    for start in range(0, len(data), 5000):
        digest.update(data[start : start + 5000])
    assert digest.hexdigest() == hashlib.sha256(data).hexdigest()
    assert digest.digest() == hashlib.sha256(data).digest()


def test_compare_digest_agrees_with_hmac() -> None:
    cases = [("token", "token"), ("token", "tokem"), ("token", "toke"), (b"\x00\x01", b"\x00\x01")]
    for a, b in cases:
        assert digests.compare_digest(a, b) is hmac.compare_digest(a, b)
    with pytest.raises(TypeError):
        digests.compare_digest("token", b"token")  # as hmac: no mixing str and bytes
