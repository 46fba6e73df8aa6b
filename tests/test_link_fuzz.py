"""Fuzz tier: the frame reader and the handshake refuse any input with the project's own
errors, never another exception, and never hang (hypothesis, a bounded budget that fits
the fast tier; benchmarks/fuzz/ has the long atheris campaigns)."""

from __future__ import annotations

import contextlib
import json
import socket
import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evbench_agent.link import framing, handshake
from evbench_core.errors import EvbenchError

BUDGET = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _read_all(data: bytes, max_frame: int = 4096) -> list[framing.Frame]:
    """Every frame a reader cuts from `data` sent over a real socket pair, then EOF."""
    left, right = socket.socketpair()
    with left, right:
        right.settimeout(5)
        left.sendall(data)
        left.shutdown(socket.SHUT_WR)
        reader, frames = framing.FrameReader(right, max_frame), []
        while True:
            try:
                frames += reader.receive()
            except framing.PeerClosed:
                return frames


@BUDGET
@given(st.binary(max_size=2048))
def test_any_bytes_give_frames_or_a_frame_error(data):
    try:
        frames = _read_all(data)
    except framing.FrameError:
        return
    # whatever came out is exactly what went in, frame by frame
    assert b"".join(framing.pack(*frame) for frame in frames) == data


kinds = st.sampled_from(sorted(framing.KINDS))
frame_strategy = st.tuples(kinds, st.integers(0, 2**64 - 1), st.binary(max_size=300))


@BUDGET
@given(st.lists(frame_strategy, max_size=8), st.data())
def test_frames_split_anywhere_come_out_whole_and_in_order(frames, data):
    stream = b"".join(framing.pack(*frame) for frame in frames)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=6)))
    left, right = socket.socketpair()
    with left, right:
        right.settimeout(5)
        reader, got, start = framing.FrameReader(right), [], 0
        for cut in [*cuts, len(stream)]:
            if cut > start:
                # one chunk sent, one recv(): the reader sees exactly this split
                left.sendall(stream[start:cut])
                got += reader.receive()
                start = cut
    assert got == [framing.Frame(*frame) for frame in frames]


def _handshake(data: bytes) -> handshake.Hello:
    left, right = socket.socketpair()
    with left, right:
        left.sendall(data)
        left.shutdown(socket.SHUT_WR)
        return handshake.receive(framing.FrameReader(right), 2.0, token=None)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=6,
)
hello_like = st.fixed_dictionaries(
    {},
    optional={
        "codec": json_values | st.sampled_from(["json", "protobuf"]),
        "profile": json_values | st.just("seed"),
        "message": json_values,
        "mode": json_values | st.sampled_from(["ack", "echo"]),
        "protocol": st.just("evbench-link") | json_values,
        "version": st.just(2) | json_values,
        "reply_delay_ns": json_values,
        "token": json_values,
    },
)


@settings(BUDGET, max_examples=100)
@given(st.binary(min_size=4090, max_size=4200) | st.binary(max_size=200)
       | hello_like.map(lambda d: json.dumps(d).encode()))  # fmt: skip
def test_any_hello_body_is_accepted_or_refused_with_a_handshake_error(body):
    data = struct.pack("<I", 9 + len(body)) + b"\x00" * 9 + body  # kind HELLO, sequence 0
    try:
        hello = _handshake(data)
    except EvbenchError:
        return
    assert hello.mode in handshake.MODES and isinstance(hello.codec, str)


@BUDGET
@given(st.binary(max_size=600))
def test_any_first_bytes_are_a_hello_or_a_clear_error(data):
    with contextlib.suppress(EvbenchError):
        _handshake(data)
