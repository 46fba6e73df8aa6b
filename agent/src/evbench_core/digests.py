"""SHA-256 and a constant-time comparison without loading OpenSSL into the agent.

hashlib and hmac load OpenSSL's libcrypto as they are imported: about 3.4 MiB of
the run manager's peak RSS on the lab PC (OpenSSL 3), against a 30 MiB aim (issue
21), for the SHA-256 of the results' SHA256SUMS and one comparison in the link's
handshake. CPython ships its own SHA-256 (`_sha2` from 3.12, `_sha256` before; in
Yocto's python3-crypt, like hashlib) and the comparison hmac.compare_digest falls
back to without OpenSSL (`_operator._compare_digest`, also constant-time). Both give
the same answers as hashlib and hmac; where a Python lacks them, those are used.
A few MB of results hash at tens of MB/s on a Cortex-A53 without OpenSSL's
ARMv8 instructions: negligible beside a run.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Protocol


class Hash(Protocol):
    """What hashlib.sha256() returns, as far as evbench uses it."""

    def update(self, data: bytes, /) -> None: ...

    def digest(self) -> bytes: ...

    def hexdigest(self) -> str: ...


def _builtin(modules: tuple[str, ...], name: str) -> Any:
    """`name` of the first of CPython's private C modules that this Python has, or None.

    Imported by name: typeshed describes neither _sha2 nor _sha256.
    """
    for module in modules:
        try:
            return getattr(importlib.import_module(module), name)
        except ImportError:
            continue
    return None


#: CPython's own implementation, no libcrypto: _sha2 from 3.12, _sha256 before.
_own_sha256: Callable[[bytes], Hash] | None = _builtin(("_sha2", "_sha256"), "sha256")
#: What hmac.compare_digest is where OpenSSL is absent.
_compare_digest: Callable[[bytes, bytes], bool] | None = _builtin(("_operator",), "_compare_digest")


def sha256(data: bytes = b"") -> Hash:
    """A SHA-256 hash object (update, digest, hexdigest), as hashlib.sha256(data)."""
    if _own_sha256 is not None:
        return _own_sha256(data)
    import hashlib  # a Python built without its own SHA-256: OpenSSL's

    return hashlib.sha256(data)


def compare_digest(a: bytes, b: bytes) -> bool:
    """a == b in time that does not depend on where they differ (hmac.compare_digest)."""
    if _compare_digest is not None:
        return _compare_digest(a, b)
    import hmac

    return hmac.compare_digest(a, b)
