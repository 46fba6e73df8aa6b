"""Link framing over a real TCP connection on 127.0.0.1: partial reads, several
frames per read, oversize lengths, garbage and truncated frames."""

from __future__ import annotations

import socket

import pytest

from evbench_agent.link import figures, framing

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


def test_frames_after_the_first_are_kept_for_the_next_receive(tcp_pair):
    client, server = tcp_pair
    hello = bytes.fromhex("0b000000 00 0000000000000000") + b"{}"
    message = bytes.fromhex("0a000000 01 0700000000000000") + b"m"
    client.sendall(hello + message)
    reader = framing.FrameReader(server)
    frames = []
    while len(frames) < 2:
        frames += reader.receive()
    reader.unread(frames[1:])
    assert reader.receive() == [framing.Frame(1, 7, b"m")]  # no recv(): it was kept


def test_a_frame_sent_byte_by_byte_is_cut_out_whole(tcp_pair):
    client, server = tcp_pair
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


def test_several_frames_in_one_read_all_come_out_in_order(tcp_pair):
    client, server = tcp_pair
    client.sendall(b"".join(framing.pack(framing.REPLY, n, bytes([n]) * n) for n in range(5)))
    reader, frames = framing.FrameReader(server), []
    while len(frames) < 5:
        frames += reader.receive()
    assert [(f.sequence, f.body) for f in frames] == [(n, bytes([n]) * n) for n in range(5)]


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


def test_a_frame_cut_short_by_close_says_so(tcp_pair):
    client, server = tcp_pair
    client.sendall(framing.pack(framing.MESSAGE, 1, b"0123456789")[:-4])
    client.close()
    reader = framing.FrameReader(server)
    with pytest.raises(framing.FrameError, match="in the middle of a frame"):
        while True:
            reader.receive()


def test_a_clean_close_between_frames_is_peer_closed(tcp_pair):
    client, server = tcp_pair
    client.close()
    with pytest.raises(framing.PeerClosed):
        framing.FrameReader(server).receive()


def test_nodelay_is_set(tcp_pair):
    client, _server = tcp_pair
    assert client.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1


def test_rfc3550_jitter_follows_the_estimator():
    # D = 10 then 0: J = 10/16, then J = 10/16 - (10/16)/16
    assert figures.rfc3550_jitter([5.0, 15.0, 15.0]) == pytest.approx(10 / 16 * 15 / 16)
    assert figures.rfc3550_jitter([1.0]) == 0.0
