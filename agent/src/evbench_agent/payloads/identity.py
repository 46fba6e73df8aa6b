"""The payload set's digest: the `payload_digest` param of every codec and link record.

Two runs measure the same thing only if they carry the same messages. A profile's
name does not say that: a user's schema profile may be generated in one run and
read from a samples file in the next, change its JSON style, or its .proto. The
digest is a SHA-256 over what decides the bytes on the wire:

- the message type's full name and the descriptors of its .proto file and of every
  file it imports (the schema), as the runtime holds them serialized;
- the JSON style of a user's profile (``proto3``, ``fields``, a JSON map), when it has one;
- the number of payloads asked for and the seed;
- every payload's plain form (what the JSON-family codecs carry and what the protobuf
  message is filled from) as canonical JSON: the generator's rules, a generator file
  and a samples file's contents all show there.

Protobuf's own encoding is left out on purpose: it belongs to the runtime, and a
comparison of two runtimes (``evbench run --arm``) must see one payload set.

The digest is an identity param (evbench_core.analysis.identity: unknown params are
identity), so records of different payload sets never share a row in a run, a
comparison or the history. It is computed once per profile, count and seed in the
run's managing process, before any sample is timed.
"""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

from evbench_agent import payloads
from evbench_core import digests

log = logging.getLogger(__name__)

PARAM = "payload_digest"
#: Hex digits kept of the SHA-256: 64 bits, plenty to tell payload sets apart.
DIGEST_HEX = 16
#: Versions the way the digest is computed; a new way must not match old digests.
SCHEME = b"evbench payload set 1\n"

#: (profile name, count, seed) -> (the profile object it was computed for, digest): a
#: user's profile re-activated under the same name is a new object, computed anew.
_computed: dict[tuple[str, int, int], tuple[payloads.Profile, str]] = {}


def _plain_default(value: Any) -> Any:
    """JSON for what the plain form may hold besides JSON types (bytes, in built-in profiles)."""
    if isinstance(value, (bytes, bytearray)):
        return {"base64": base64.b64encode(bytes(value)).decode("ascii")}
    raise TypeError(f"a payload holds {type(value).__name__}, which has no JSON form")


def _schema_files(descriptor: Any) -> list[tuple[str, bytes]]:
    """The message's .proto file and every file it imports, by name, serialized."""
    found: dict[str, bytes] = {}
    pending = [descriptor.file]
    while pending:
        file = pending.pop()
        if file.name in found:
            continue
        found[file.name] = bytes(file.serialized_pb)
        pending.extend(file.dependencies)
    return sorted(found.items())


def compute(
    profile: payloads.Profile, count: int, seed: int, items: list[payloads.Payload] | None = None
) -> str:
    """The digest of `count` payloads of `profile` made from `seed` (see the module).

    `items`: those payloads when the caller has made them already (making them is
    most of the cost: 0.4 s for ev-full's 200 on a PC, the hashing 0.06 s).
    """
    hasher = digests.sha256(SCHEME)
    descriptor = profile.message_type.DESCRIPTOR
    style = getattr(profile, "style", None)
    head = {
        "message": descriptor.full_name,
        "json_style": getattr(style, "name", None),
        "count": count,
        "seed": seed,
    }
    hasher.update(json.dumps(head, sort_keys=True).encode() + b"\n")
    for name, serialized in _schema_files(descriptor):
        hasher.update(f"file {name} {len(serialized)}\n".encode() + serialized)
    for payload in profile.payloads(count, seed) if items is None else items:
        text = json.dumps(
            payload.plain, sort_keys=True, separators=(",", ":"), default=_plain_default
        )
        hasher.update(text.encode("utf-8") + b"\n")
    return hasher.hexdigest()[:DIGEST_HEX]


def payload_digest(
    profile_name: str, count: int, seed: int, items: list[payloads.Payload] | None = None
) -> str:
    """The digest of a profile's payload set, computed once per process and profile
    (`items`: its payloads, when the caller has made them already)."""
    profile = payloads.get(profile_name)
    key = (profile_name, count, seed)
    known = _computed.get(key)
    if known is None or known[0] is not profile:
        known = _computed[key] = (profile, compute(profile, count, seed, items))
        log.debug("payload set of %s (%d, seed %d): %s", profile_name, count, seed, known[1])
    return known[1]


def params(
    profile_name: str, count: int, seed: int, items: list[payloads.Payload] | None = None
) -> dict[str, str]:
    """{PARAM: digest}, to merge into a record's params."""
    return {PARAM: payload_digest(profile_name, count, seed, items)}
