"""Link figures against values worked by hand (a phase whose times and sizes are set
here), and against what a live phase on 127.0.0.1 really sent and timed."""

from __future__ import annotations

import itertools
import time

import pytest

from evbench_agent.link import client, figures, messages, saturation
from evbench_agent.link.service import start_responder

MS = 1_000_000  # ns


def _hand_phase() -> client.PhaseResult:
    """Three messages 50 ms apart; the third's reply comes 2 s after its send, past the
    1 s lost_after of a 1 ms deadline (client.MIN_LOST_AFTER_S)."""
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


def test_phase_figures_worked_by_hand():
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


def test_wire_bytes_by_hand():
    # MSS = 1500 - IPv4 20 - TCP 20 - timestamps 12 = 1448 bytes per segment
    assert figures.wire_bytes(100) == 190
    assert figures.wire_bytes(1448) == 1448 + 90
    assert figures.wire_bytes(1449) == 1449 + 180


def test_rfc3550_jitter_follows_the_estimator():
    # D = 10 then 0: J = 10/16, then J = 10/16 - (10/16)/16
    assert figures.rfc3550_jitter([5.0, 15.0, 15.0]) == pytest.approx(10 / 16 * 15 / 16)
    assert figures.rfc3550_jitter([1.0]) == 0.0


@pytest.fixture(scope="module")
def responder():
    # Slots to spare: an earlier test's slot is freed only once the responder has read
    # the end of its connection, which a loaded machine can delay past the next test's
    # start, and one test here holds two connections.
    with start_responder(max_connections=4) as process:
        yield process


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
    # send_k - lateness_k - k x period is that start plus one encode, the same for every k
    # (a sender that drifted, or measured from its previous send, would not give this)
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


def test_interleaved_capacity_blocks_alternate_a_b_b_a_and_never_overlap(responder):
    # Two codecs, 4 blocks each over 0.2 s: A B, B A, A B, B A (the counterbalanced
    # order), each block 0.05 s measured after its warm-up, its replies all taken in
    # before the other codec's block opens.
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
