"""The responder as a real `evbench-agent serve` process on 127.0.0.1, how SIGTERM stops its
serve loop, and the link figures: worked by hand, and of a live phase to it."""

import itertools
import json
import signal
import socket
import struct
import subprocess
import sys
import time

import pytest
from link_sockets import closed

from evbench_agent.link import client, figures, framing, handshake, messages, saturation
from evbench_agent.link.service import start_responder

SEED_MESSAGE = "evbench.seed.BackendDataPacket"
MS = 1_000_000  # ns


@pytest.fixture(scope="module")
def responder():
    # a slot for every connection the tests open (fewer than 20): a slot is freed only once
    # the responder has read the end of its connection, late on a loaded machine
    with start_responder(max_frame=4096, max_connections=32) as process:
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
    # A responder of its own (the shared one frees slots late). The holders send a message
    # just before the third asks once, by hand: the client's retries would take a holder's
    # slot after its idle budget (docs/link.md).
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
    with subprocess.Popen(argv, stdout=pipe, stderr=pipe, text=True) as process:
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
            process.kill()  # nothing once it has exited; Popen's exit waits and closes
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


#: timeout(1) signals its child, then its process group: the child may have left its serve
#: loop and put back the host CLI's handler (here a stand-in: SIGTERM -> exit 130) by then.
TWICE = """
import os, signal, time
from evbench_agent.link.stop_signal import until_sigterm

def host_cli(signum, frame):
    print("interrupted", flush=True)
    os._exit(130)

signal.signal(signal.SIGTERM, host_cli)
with until_sigterm():
    print("serving", flush=True)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(30)
    print("not stopped", flush=True)
os.kill(os.getpid(), signal.SIGTERM)
print("stopped cleanly", flush=True)
"""
UNSTOPPED = """
import signal
from evbench_agent.link.stop_signal import until_sigterm
signal.signal(signal.SIGTERM, mine := lambda *_: None)
with until_sigterm():
    pass
print("handler back:", signal.getsignal(signal.SIGTERM) is mine)
"""


@pytest.mark.parametrize(
    ("script", "printed"),
    [(TWICE, "serving stopped cleanly"), (UNSTOPPED, "handler back: True")],
    ids=["a second SIGTERM after the stop is the same request", "without a stop"],
)
def test_a_sigterm_stops_the_serve_loop_once_and_the_previous_handler_comes_back(script, printed):
    argv = [sys.executable, "-c", script]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout.split()) == (0, printed.split())


def _hand_phase() -> client.PhaseResult:
    """Three messages 50 ms apart; the third's reply 2 s after its send, past the 1 s
    lost_after of a 1 ms deadline (client.MIN_LOST_AFTER_S)."""
    # (encode_start, send, payload_bytes, frame_bytes): sent 1 us after encoding began
    sent = {k: client.Sent(k * 50 * MS, k * 50 * MS + 1_000, 10 * (k + 1), 23 + 10 * k)
            for k in range(3)}  # fmt: skip
    replies = {
        # (arrival, decoded, responder's processing)
        0: (1_000 + 300_000, 1_400_000, 100_000),
        1: (50 * MS + 1_000 + 500_000, 50 * MS + 600_000, 250_000),
        2: (100 * MS + 1_000 + 2_000 * MS, 2_200 * MS, 10_000),
    }
    return client.PhaseResult(
        sent=sent, replies=replies, lateness=[5_000, 7_000, 9_000], client_cpu_ns=3 * MS,
        responder={"messages": 3, "cpu_ns": 600_000}, lost_after_ns=1_000 * MS,
    )  # fmt: skip


def test_phase_figures_wire_bytes_and_rfc3550_jitter_worked_by_hand():
    result = _hand_phase()
    # the third reply came, but past its own timeout: lost
    assert 2 in result.replies and result.answered() == [0, 1] and result.lost == 1
    measured = figures.PhaseFigures(result, 20.0, 0.001)
    # transport: arrival - send - processing = 300 - 100 and 500 - 250 us
    assert measured.rtt_transport == pytest.approx([200e-6, 250e-6])
    # end to end: decoded - encode start = 1.4 ms and 0.6 ms; the lost one has none
    assert measured.rtt == pytest.approx([1.4e-3, 0.6e-3])
    assert measured.lost == 1 and measured.late == 1  # 1.4 ms > the 1 ms deadline
    assert measured.send_lateness == pytest.approx([5e-6, 7e-6, 9e-6])
    # bandwidth: sends at 1 us and 100.001 ms span 0.1 s; the bytes of the first two
    assert measured.bandwidth_payload == pytest.approx((10 + 20) / 0.1)
    # on the wire, per frame: Ethernet 14 + FCS 4 + preamble 8 + gap 12, IPv4 20,
    # TCP 20 + timestamps 12 = 90 bytes around each segment
    assert measured.bandwidth_wire == pytest.approx((23 + 90 + 33 + 90) / 0.1)
    assert measured.cpu_per_msg_client == pytest.approx(1e-3)  # 3 ms over 3 messages
    assert measured.cpu_per_msg_responder == pytest.approx(200e-6)
    # MSS = 1500 - IPv4 20 - TCP 20 - timestamps 12 = 1448 bytes per segment
    assert figures.wire_bytes(100) == 190
    assert figures.wire_bytes(1448) == 1448 + 90
    assert figures.wire_bytes(1449) == 1449 + 180
    # RFC 3550 jitter: D = 10 then 0: J = 10/16, then J = 10/16 - (10/16)/16
    assert figures.rfc3550_jitter([5.0, 15.0, 15.0]) == pytest.approx(10 / 16 * 15 / 16)
    assert figures.rfc3550_jitter([1.0]) == 0.0


def test_a_live_phase_figures_match_what_was_sent_and_timed(responder):
    link = messages.bind("protobuf", "seed")
    started = time.perf_counter_ns()
    with client.Connection(responder.address, link, "ack") as connection:
        result = client.run_periodic(connection, link.sample_data(4, 1), 100.0, 20, 5, 0.5)
    wall = time.perf_counter_ns() - started
    measured = figures.PhaseFigures(result, 100.0, 0.5)
    assert result.total_sent == 25 and len(result.sent) == 20 and measured.lost == 0
    sends = [result.sent[s].send for s in sorted(result.sent)]
    # lateness is against absolute ticks start + k x 10 ms, taken just before encoding:
    # send_k - lateness_k - k x period is that start plus one encode, for every k
    period = 10_000_000
    lateness = zip(sends, result.lateness, strict=True)
    starts = [send - late - k * period for k, (send, late) in enumerate(lateness)]
    assert min(result.lateness) >= 0 and max(starts) - min(starts) < period
    # bandwidth: 19 intervals between 20 sends, each message's payload as encoded here
    sizes = [len(link.encode(link.sample_data(4, 1)[s % 4])) for s in sorted(result.sent)]
    span_s = (sends[-1] - sends[0]) / 1e9
    assert measured.bandwidth_payload == pytest.approx(sum(sizes[:-1]) / span_s)
    # CPU time of the sending thread cannot exceed the wall time it ran
    assert 0 < measured.cpu_per_msg_client * 20 < wall / 1e9
    # each transport RTT is below its raw send-to-reply time, by the responder's time
    for sequence in result.answered():
        arrival, _decoded, processing = result.replies[sequence]
        assert 0 < processing < arrival - result.sent[sequence].send


def test_a_ping_pong_cannot_exceed_one_message_per_round_trip(responder):
    link = messages.bind("json", "seed")
    with client.Connection(responder.address, link, "ack") as connection:
        result = saturation.run_saturation(connection, link.sample_data(4, 1), 1, 0.3, 0.05, 0.5)
    assert result.error is None and result.messages == len(result.rtt_transport) > 10
    assert 0 < result.seconds <= 0.3
    # with one message in flight, each takes at least its transport RTT
    assert result.messages / result.seconds <= 1 / min(result.rtt_transport)
    assert result.total_sent >= result.messages


def test_a_window_of_large_echo_messages_keeps_moving():
    # 1000 messages of 60 KB in flight each way, beyond the kernel's socket buffers: a client
    # that only waits to write deadlocks with the responder; one that reads meanwhile does not
    link = messages.bind("json", "seed")
    data = [dict(item, pad="x" * 60_000) for item in link.sample_data(4, 1)]
    with (
        start_responder(max_frame=1 << 20, max_connections=2) as large,
        client.Connection(large.address, link, "echo") as connection,
    ):
        result = saturation.run_saturation(connection, data, 1000, 0.3, 0.05, 0.5)
    assert result.error is None and result.total_sent >= 1000
    # replies that came while the window's first sends waited for room count too
    assert result.messages == len(result.rtt_transport) > 0


def test_interleaved_capacity_blocks_alternate_a_b_b_a_and_never_overlap(responder):
    # two codecs, 4 blocks each over 0.2 s, counterbalanced, each 0.05 s measured after its
    # warm-up, its replies all taken in before the other codec's block opens
    json_link, proto_link = messages.bind("json", "seed"), messages.bind("protobuf", "seed")
    with (
        client.Connection(responder.address, json_link, "ack") as first,
        client.Connection(responder.address, proto_link, "ack") as second,
    ):
        results = saturation.run_interleaved(
            [(first, json_link.sample_data(4, 1)), (second, proto_link.sample_data(4, 1))],
            window=4, duration_s=0.2, warmup_s=0.01, blocks=4, deadline_s=0.5,
        )  # fmt: skip
    a, b = results
    assert [r.error for r in results] == [None, None]
    assert len(a.spans) == len(b.spans) == 4
    timeline = sorted([(*span, "A") for span in a.spans] + [(*span, "B") for span in b.spans])
    assert "".join(name for _start, _end, name in timeline) == "ABBAABBA"
    for (_s1, end, _n1), (start, _e2, _n2) in itertools.pairwise(timeline):
        assert end <= start  # one codec saturating at a time
    for result in results:
        # each codec's measured time is its 4 blocks' 0.05 s (less the last reply's gap)
        assert 0.15 < result.seconds <= 0.2
        assert result.messages == len(result.rtt_transport) > 20 and result.payload_bytes > 0
        assert result.total_sent >= result.messages + 4 * 4  # each block's window, at least
