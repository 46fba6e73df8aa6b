"""Link framing over a real TCP connection on 127.0.0.1: partial reads, several
frames per read, oversize lengths, garbage and truncated frames."""

from __future__ import annotations

import socket

import pytest

from evbench_agent.link import framing

DEFAULT = framing.DEFAULT_MAX_FRAME


@pytest.fixture
def tcp_pair():
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname())
        server, _ = listener.accept()
    framing.configure(client, 5.0)
    framing.configure(server, 5.0)
    server.settimeout(5.0)  # a broken test fails instead of hanging
    yield client, server
    client.close()
    server.close()


def test_pack_layout_is_the_documented_one():
    data = framing.pack(framing.MESSAGE, 0x0102030405060708, b"abc")
    # length 12 = kind 1 + sequence 8 + body 3, little-endian; kind MESSAGE = 1;
    # the sequence little-endian; the body
    assert data == bytes.fromhex("0c000000 01 0807060504030201") + b"abc"


def test_a_reply_carries_the_processing_time_first():
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
    ("sent", "max_frame", "refused"),
    [
        # a length over the cap, refused before reading it: 100001 = 0x186a1
        (bytes.fromhex("a1860100") + b"x" * 20, 100_000, r"100001 bytes is outside 9\.\.100000"),
        (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", DEFAULT, "not an evbench link peer"),
        (bytes.fromhex("09000000 63 0100000000000000"), DEFAULT, "unknown frame kind 99"),
    ],
    ids=["over the cap", "garbage", "unknown kind"],
)
def test_a_length_over_the_cap_garbage_or_an_unknown_kind_is_an_error_not_a_frame(
    tcp_pair, sent, max_frame, refused
):
    client, server = tcp_pair
    client.sendall(sent)
    with pytest.raises(framing.FrameError, match=refused):
        framing.FrameReader(server, max_frame).receive()


@pytest.mark.parametrize(
    ("sent", "raised", "said"),
    [
        (framing.pack(framing.MESSAGE, 1, b"0123456789")[:-4], framing.FrameError, "in the middle"),
        (b"", framing.PeerClosed, None),  # a clean close between frames
    ],
    ids=["cut short", "between frames"],
)
def test_a_close_says_whether_it_cut_a_frame_short(tcp_pair, sent, raised, said):
    client, server = tcp_pair
    client.sendall(sent)
    client.close()
    reader = framing.FrameReader(server)
    with pytest.raises(raised, match=said) as caught:
        while True:
            reader.receive()
    assert caught.type is raised  # PeerClosed is a FrameError: a cut frame is not a clean end
