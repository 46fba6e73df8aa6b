"""What the link carries, per codec: the profile's message and the small ack.

Both sides bind the same codec to the same profile. "Decoding" here means
decode and then read every field the profile's access path names (the codec
suite's `decode_access`): protobuf creates Python objects for fields only
when they are read, so a bare decode would flatter it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evbench_agent import codecs, payloads
from evbench_agent.payloads import Payload, Profile
from evbench_agent.schema import link_pb2
from evbench_core.errors import UserError

#: The ack as a profile, so every codec binds to it as to any message type.
ACK_PROFILE = Profile(
    name="link-ack",
    description="the link responder's acknowledgement",
    message_type=link_pb2.Ack,
    generate=lambda _rng, index: {"sequence": index, "receive_ns": 0},
)


@dataclass(frozen=True)
class LinkCodec:
    """Encode and decode callables for one codec and one profile."""

    codec: str
    profile: Profile
    encode: Callable[[Any], bytes]
    decode: Callable[[bytes], int]  # decode and read: returns the leaf count
    encode_ack: Callable[[int, int], bytes]
    decode_ack: Callable[[bytes], tuple[int, int]]
    data: Callable[[Payload], Any]

    def sample_data(self, count: int, seed: int) -> list[Any]:
        """`count` payloads of the profile, converted for this codec in advance."""
        return [self.data(item) for item in self.profile.payloads(count, seed)]


def message_name(profile: Profile) -> str:
    return profile.message_type.DESCRIPTOR.full_name


def bind(codec_name: str, profile_name: str) -> LinkCodec:
    """Bind `codec_name` to a profile and to the ack; raises UserError if unknown."""
    codec = codecs.get(codec_name)
    profile = payloads.get(profile_name)
    bound = codec.bind(profile)
    ack = codec.bind(ACK_PROFILE)
    ack_encode, ack_decode = ack.encode, ack.decode
    decode, access = bound.decode, bound.access

    def decode_message(blob: bytes) -> int:
        return access(decode(blob))

    if ack.carries == codecs.MESSAGE:

        def encode_ack(sequence: int, receive_ns: int) -> bytes:
            return ack_encode(link_pb2.Ack(sequence=sequence, receive_ns=receive_ns))

        def decode_ack(blob: bytes) -> tuple[int, int]:
            message = ack_decode(blob)
            return message.sequence, message.receive_ns

    else:

        def encode_ack(sequence: int, receive_ns: int) -> bytes:
            return ack_encode({"sequence": sequence, "receive_ns": receive_ns})

        def decode_ack(blob: bytes) -> tuple[int, int]:
            value = ack_decode(blob)
            try:
                return int(value["sequence"]), int(value["receive_ns"])
            except (TypeError, KeyError, ValueError) as error:
                raise UserError(f"an ack without sequence and receive_ns: {value!r}") from error

    return LinkCodec(
        codec_name, profile, bound.encode, decode_message, encode_ack, decode_ack, bound.data
    )


__all__ = ["ACK_PROFILE", "LinkCodec", "bind", "message_name"]
