"""The responder as a real `evbench-agent serve` process on 127.0.0.1."""

from __future__ import annotations

import json
import signal
import socket
import struct
import subprocess
import sys
import time

import pytest
from link_sockets import closed

from evbench_agent.link import client, framing, handshake, messages
from evbench_agent.link.service import start_responder

SEED_MESSAGE = "evbench.seed.BackendDataPacket"


@pytest.fixture(scope="module")
def responder():
    with start_responder(max_frame=4096, max_connections=2) as process:
        yield process


def _hello(codec="json", profile="seed", message=SEED_MESSAGE, mode="ack") -> handshake.Hello:
    return handshake.Hello(codec, profile, message, mode)


def _raw(address) -> tuple[socket.socket, framing.FrameReader]:
    sock = socket.create_connection(address, timeout=5)
    sock.settimeout(None)
    framing.configure(sock, 5.0)
    return sock, framing.FrameReader(sock)


@pytest.mark.parametrize("mode", ["ack", "echo"])
@pytest.mark.parametrize("codec", ["json", "protobuf"])
def test_every_message_is_answered_and_counted(responder, mode, codec):
    assert responder.address[0] == "127.0.0.1"  # loopback by default
    link = messages.bind(codec, "seed")
    with client.Connection(responder.address, link, mode) as connection:
        result = client.run_periodic(connection, link.sample_data(3, 1), 200.0, 6, 2, 0.5)
    assert result.error is None and result.lost == 0
    assert sorted(result.replies) == list(range(2, 8))
    assert result.responder["messages"] == 6 and result.responder["cpu_ns"] > 0


@pytest.mark.parametrize(
    ("hello", "reason"),
    [
        (_hello(message="evbench.Other"), "carries evbench.seed.BackendDataPacket, not evbench"),
        (_hello(codec="no-such-codec"), "unknown codec 'no-such-codec'"),
        (_hello(profile="no-such-profile"), "unknown profile"),
        (_hello(mode="mirror"), "unknown mode 'mirror'"),
    ],
)
def test_a_handshake_mismatch_is_refused_with_the_reason(responder, hello, reason):
    sock, reader = _raw(responder.address)
    with sock, pytest.raises(handshake.HandshakeError, match=reason):
        handshake.request(reader, hello, 5.0)


def test_garbage_bytes_close_that_connection_only(responder):
    sock, _ = _raw(responder.address)
    with sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: evbench\r\n\r\n")
        assert closed(sock, 5.0)
    link = messages.bind("json", "seed")
    with client.Connection(responder.address, link, "ack") as connection:
        assert connection.accepted["ok"] is True


@pytest.mark.parametrize(
    ("codec", "sent"),
    [
        ("json", struct.pack("<I", 5000) + b"\x01" + b"\x00" * 100),  # a frame over the cap
        ("protobuf", framing.pack(framing.MESSAGE, 0, b"\xff\xff\xff")),  # does not decode
    ],
    ids=["over the cap", "undecodable"],
)
def test_a_frame_over_the_cap_or_a_message_that_does_not_decode_closes_the_connection(
    responder, codec, sent
):
    with client.Connection(responder.address, messages.bind(codec, "seed"), "ack") as connection:
        connection.sock.sendall(sent)
        assert closed(connection.sock, 5.0)
    assert responder.alive()


def test_the_connection_limit_is_a_clear_refusal():
    # A responder of its own: the shared one frees a slot only once it has read the end of
    # an earlier test's connection, late on a loaded machine (a CI run refused a second
    # client). The holders send a message just before the third asks, once, by hand: the
    # client's own retries would take a holder's slot after its idle budget (docs/link.md).
    link = messages.bind("json", "seed")
    body = link.encode(link.sample_data(1, 1)[0])
    hello = _hello(link.codec, link.profile.name, messages.message_name(link.profile))
    with (
        start_responder(max_frame=4096, max_connections=2) as responder,
        client.Connection(responder.address, link, "ack") as first,
        client.Connection(responder.address, link, "ack") as second,
    ):
        for holder in (first, second):
            holder.send(holder.pack(framing.MESSAGE, 1, body))
            assert holder.wait_frames(5_000_000_000), "no reply to a holder's message"
        with socket.create_connection(responder.address, timeout=5) as sock:
            reader = framing.FrameReader(sock, 4096)
            with pytest.raises(handshake.HandshakeError, match=r"connection limit \(2\)"):
                handshake.request(reader, hello, 5.0)


def test_sigterm_stops_it_cleanly_with_a_client_connected():
    argv, pipe = [sys.executable, "-m", "evbench_agent", "serve", "--port", "0"], subprocess.PIPE
    process = subprocess.Popen(argv, stdout=pipe, stderr=pipe, text=True)
    try:
        event = json.loads(process.stdout.readline())
        link = messages.bind("json", "seed")
        with client.Connection((event["host"], event["port"]), link, "ack") as connection:
            process.send_signal(signal.SIGTERM)
            started = time.monotonic()
            returncode = process.wait(15)
            assert time.monotonic() - started < 10
            assert closed(connection.sock, 5.0)
        stderr = process.stderr.read()
    finally:
        process.kill()
        process.wait()
        process.stdout.close()
        process.stderr.close()
    assert returncode == 0
    assert "listening on 127.0.0.1:" in stderr and "loopback only" in stderr
    assert "stopped" in stderr


def test_a_port_in_use_is_a_one_line_user_error():
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        argv = [sys.executable, "-m", "evbench_agent", "serve", "--port", str(port)]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
