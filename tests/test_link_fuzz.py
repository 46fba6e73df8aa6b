"""Link framing over real sockets on 127.0.0.1: the documented layout by hand, partial reads,
several frames a read, oversize, garbage and cut frames; and fuzzing (hypothesis, a budget
for the fast tier; benchmarks/fuzz/ has the long runs): the frame reader and the handshake
refuse any input with the project's own errors, never another exception, and never hang."""

import json
import socket
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evbench_agent.link import framing, handshake
from evbench_agent.link.framing import FrameError, PeerClosed
from evbench_core.errors import EvbenchError

BUDGET = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DEFAULT = framing.DEFAULT_MAX_FRAME


@pytest.fixture
def tcp_pair():
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname())
        server, _ = listener.accept()
    framing.configure(client, 5.0)
    framing.configure(server, 5.0)
    server.settimeout(5.0)  # a broken test fails instead of hanging
    with client, server:
        yield client, server


def test_pack_layout_is_the_documented_one_and_a_reply_carries_the_processing_time_first():
    data = framing.pack(framing.MESSAGE, 0x0102030405060708, b"abc")
    # length 12 = kind 1 + sequence 8 + body 3; kind MESSAGE = 1; sequence; all little-endian
    assert data == bytes.fromhex("0c000000 01 0807060504030201") + b"abc"
    data = framing.pack_reply(5, 300_000, b"ok")
    # length 19 = 1 + 8 + processing 8 + 2; kind REPLY = 2; sequence 5; 300000 = 0x493e0
    assert data == bytes.fromhex("13000000 02 0500000000000000 e093040000000000") + b"ok"
    frame = framing.Frame(2, 5, data[13:])
    assert framing.split_reply(frame.body) == (300_000, b"ok")
    with pytest.raises(framing.FrameError, match="no processing time"):
        framing.split_reply(b"\x01\x02")


def test_a_frame_sent_byte_by_byte_is_cut_out_whole(tcp_pair):
    client, server = tcp_pair
    assert client.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1  # configure()'s
    reader = framing.FrameReader(server)
    data = framing.pack(framing.MESSAGE, 7, b"payload")
    got = []
    for index in range(len(data)):
        client.sendall(data[index : index + 1])
        frames = reader.receive()
        got += frames
        if index < len(data) - 1:
            assert frames == []
    assert got == [framing.Frame(framing.MESSAGE, 7, b"payload")]


def test_several_frames_in_one_read_come_out_in_order_and_those_handed_back_come_again(tcp_pair):
    client, server = tcp_pair
    hello = bytes.fromhex("0b000000 00 0000000000000000") + b"{}"
    message = bytes.fromhex("0a000000 01 0700000000000000") + b"m"
    client.sendall(hello + message + b"".join(framing.pack(2, n, bytes([n]) * n) for n in range(5)))
    reader, frames = framing.FrameReader(server), []
    while len(frames) < 7:
        frames += reader.receive()
    assert frames[:2] == [framing.Frame(0, 0, b"{}"), framing.Frame(1, 7, b"m")]
    assert [(f.kind, f.sequence, f.body) for f in frames[2:]] == [
        (framing.REPLY, n, bytes([n]) * n) for n in range(5)
    ]
    reader.unread(frames[1:])
    assert reader.receive() == frames[1:]  # no recv(): they were kept


@pytest.mark.parametrize(
    ("sent", "max_frame", "raised", "said"),
    [
        # a length over the cap, refused before reading it: 100001 = 0x186a1
        (bytes.fromhex("a1860100") + b"x" * 20, 100_000, FrameError,
         r"100001 bytes is outside 9\.\.100000"),
        (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", DEFAULT, FrameError, "not an evbench link peer"),
        (bytes.fromhex("09000000 63 0100000000000000"), DEFAULT, FrameError,
         "unknown frame kind 99"),
        (framing.pack(framing.MESSAGE, 1, b"0123456789")[:-4], DEFAULT, FrameError,
         "in the middle"),
        (b"", DEFAULT, PeerClosed, None),  # a clean close between frames
    ],
    ids=["over the cap", "garbage", "unknown kind", "cut short", "between frames"],
)  # fmt: skip
def test_a_bad_or_cut_frame_is_an_error_not_a_frame_and_a_close_between_frames_a_clean_end(
    tcp_pair, sent, max_frame, raised, said
):
    client, server = tcp_pair
    client.sendall(sent)
    client.close()
    reader = framing.FrameReader(server, max_frame)
    with pytest.raises(raised, match=said) as caught:
        while True:
            reader.receive()
    assert caught.type is raised  # PeerClosed is a FrameError: a cut frame is not a clean end


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


def _hello_frame(body: bytes) -> bytes:
    return struct.pack("<I", 9 + len(body)) + b"\x00" * 9 + body  # kind HELLO, sequence 0


@settings(BUDGET, max_examples=600)  # about 300 a kind (the two tests had 300, 100)
@given(st.binary(max_size=600)  # any first bytes, or a HELLO frame of any body
       | (st.binary(min_size=4090, max_size=4200) | st.binary(max_size=200)
          | hello_like.map(lambda d: json.dumps(d).encode())).map(_hello_frame))  # fmt: skip
def test_any_hello_or_first_bytes_are_accepted_or_refused_with_a_handshake_error(data):
    try:
        hello = _handshake(data)
    except EvbenchError:
        return
    assert hello.mode in handshake.MODES and isinstance(hello.codec, str)
