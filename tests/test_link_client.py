"""The link client against misbehaving peers: real TCP peers on 127.0.0.1,
written here, that reorder, drop, duplicate, refuse or never answer."""

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable

import pytest

from evbench_agent.link import client, figures, framing, handshake, messages

Behaviour = Callable[[socket.socket, framing.FrameReader, messages.LinkCodec], None]


def _stats_reply(sock: socket.socket, frame: framing.Frame) -> None:
    body = json.dumps({"messages": 0, "cpu_ns": 0}).encode()
    framing.send(sock, framing.pack(framing.STATS_REPLY, frame.sequence, body))


def answer_stats(sock: socket.socket, reader: framing.FrameReader, _link) -> None:
    """Answer STATS, nothing else, until the client closes."""
    while True:
        for frame in reader.receive():
            if frame.kind == framing.STATS:
                _stats_reply(sock, frame)


class ScriptedPeer:
    """A responder that reads each HELLO, then treats its n-th connection as `script[n]`:
    "close" (no answer), "silent" (never answers), "busy" (refused: every slot held),
    "refuse" (refused for another reason) or "serve" (accepted, then `behaviour`)."""

    def __init__(self, script: list[str], behaviour: Behaviour = answer_stats) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.address = self.listener.getsockname()[:2]
        self.script, self.behaviour, self.seen = script, behaviour, 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        held = []
        self.listener.settimeout(0.1)
        try:
            while not self.done.is_set() and self.seen < len(self.script):
                try:
                    sock, _ = self.listener.accept()
                except TimeoutError:
                    continue
                held.append(sock)
                action = self.script[self.seen]
                self.seen += 1
                framing.configure(sock, 5.0)
                reader = framing.FrameReader(sock)
                hello = handshake.receive(reader, 5.0)
                if action in ("busy", "refuse"):
                    reason = handshake.BUSY if action == "busy" else None
                    handshake.answer(sock, error=f"scripted {action}", reason=reason)
                if action in ("close", "busy", "refuse"):
                    sock.close()
                elif action == "serve":
                    handshake.answer(sock)
                    with contextlib.suppress(framing.PeerClosed, OSError):
                        self.behaviour(sock, reader, messages.bind(hello.codec, hello.profile))
            self.done.wait(30)
        finally:
            for sock in held:
                sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *_exc: object) -> None:
        self.done.set()
        self.thread.join(10)
        self.listener.close()


def _ack(sock: socket.socket, link: messages.LinkCodec, sequence: int) -> None:
    framing.send(sock, framing.pack_reply(sequence, 0, link.encode_ack(sequence, 1)))


def _collect(reader: framing.FrameReader, count: int) -> list[framing.Frame]:
    """The first `count` messages the client sent; any more one read brought are left
    unanswered, as a peer that stops after `count` would."""
    received: list[framing.Frame] = []
    while len(received) < count:
        received += [frame for frame in reader.receive() if frame.kind == framing.MESSAGE]
    return received[:count]


def reorder_and_drop(sock: socket.socket, reader: framing.FrameReader, link) -> None:
    """Answer 12 messages in reverse order, except 3 and 8; then answer STATS."""
    for frame in reversed(_collect(reader, 12)):
        if frame.sequence not in (3, 8):
            _ack(sock, link, frame.sequence)
    answer_stats(sock, reader, link)


def _connection(peer: ScriptedPeer, codec: str = "protobuf") -> client.Connection:
    return client.Connection(peer.address, messages.bind(codec, "seed"), "ack", timeout_s=5.0)


def _data(codec: str = "protobuf") -> list:
    return messages.bind(codec, "seed").sample_data(4, 1)


# 40 Hz is slow enough for the wait in a blocking recv() after each send
# (client.BLOCKING_MIN_PERIOD_S); 1000 Hz waits in select() only.
@pytest.mark.parametrize(("codec", "rate_hz"), [("protobuf", 1000.0), ("json", 40.0)])
def test_reordered_and_missing_replies_are_matched_by_sequence(codec, rate_hz):
    with ScriptedPeer(["serve"], reorder_and_drop) as peer, _connection(peer, codec) as connection:
        result = client.run_periodic(connection, _data(codec), rate_hz, 12, 0, 0.05)
    assert result.error is None
    assert sorted(result.sent) == list(range(12))
    assert sorted(result.replies) == [n for n in range(12) if n not in (3, 8)]
    assert result.lost == 2
    # the last message was answered first: its reply came no later than the first's
    assert result.replies[11][0] <= result.replies[0][0]
    for sequence, (arrival, decoded, _processing) in result.replies.items():
        assert result.sent[sequence].send < arrival <= decoded


def _two_then(bad_reply: Callable[[messages.LinkCodec], bytes]) -> Behaviour:
    """Answer messages 0 and 1, then send `bad_reply`: no responder sends such a reply."""

    def behaviour(sock: socket.socket, reader: framing.FrameReader, link) -> None:
        for frame in _collect(reader, 3)[:2]:
            _ack(sock, link, frame.sequence)
        framing.send(sock, bad_reply(link))
        answer_stats(sock, reader, link)

    return behaviour


@pytest.mark.parametrize(
    ("bad_reply", "said"),
    [
        (lambda link: framing.pack_reply(2, 0, link.encode_ack(7, 1)), "acknowledges 7"),
        (lambda link: framing.pack_reply(1, 0, link.encode_ack(1, 1)), "a second reply to"),
        # 10 s of processing inside a round trip of a few milliseconds on loopback
        (lambda link: framing.pack_reply(2, 10**10, link.encode_ack(2, 1)), "more than the whole"),
    ],
    ids=["wrong-ack", "twice", "slower-than-its-round-trip"],
)
def test_a_reply_no_responder_sends_ends_the_phase_with_what_was_measured(bad_reply, said):
    with ScriptedPeer(["serve"], _two_then(bad_reply)) as peer, _connection(peer) as connection:
        result = client.run_periodic(connection, _data(), 100.0, 3, 0, 0.5)
    assert result.error and "sent what no responder sends" in result.error and said in result.error
    assert sorted(result.replies) == [0, 1]
    assert result.lost == 1


def test_a_peer_that_never_answers_messages_loses_them_within_the_deadline():
    def silent(_sock, reader, _link):
        while True:
            reader.receive()

    started = time.monotonic()
    with ScriptedPeer(["serve"], silent) as peer, _connection(peer) as connection:
        result = client.run_periodic(connection, _data(), 100.0, 5, 1, 0.05)
    assert result.lost == 5 and not result.replies and result.responder is None
    # 6 ticks at 10 ms, then the wait for replies: 1 s (client.MIN_LOST_AFTER_S)
    assert time.monotonic() - started < 10


def test_a_peer_that_closes_mid_phase_ends_it_with_what_was_measured():
    def three_then_close(sock, reader, link):
        for frame in _collect(reader, 3):
            _ack(sock, link, frame.sequence)
        # SHUT_WR only: a full shutdown makes Linux answer the next message with a reset,
        # which discards replies the client has not read yet
        sock.shutdown(socket.SHUT_WR)

    with ScriptedPeer(["serve"], three_then_close) as peer, _connection(peer) as connection:
        result = client.run_periodic(connection, _data(), 200.0, 20, 0, 0.5)
    assert result.error and "went away" in result.error
    assert sorted(result.replies) == [0, 1, 2]
    assert result.lost == len(result.sent) - 3 >= 0


def test_a_wrong_peer_address_is_a_user_error():
    with socket.create_server(("127.0.0.1", 0)) as unused:
        address = unused.getsockname()[:2]
    with pytest.raises(client.UserError, match="cannot connect to the responder"):
        client.Connection(address, messages.bind("json", "seed"), "ack")


def test_replies_later_than_the_deadline_count_as_late_not_lost():
    """Odd messages are held 150 ms, past the 100 ms deadline whatever the machine does; the
    even ones, 250 ms apart (4 Hz), are answered at once and on time."""

    def slow(sock, reader, link):
        while True:
            for frame in reader.receive():
                if frame.kind == framing.MESSAGE:
                    time.sleep(0.15 if frame.sequence % 2 else 0)
                    _ack(sock, link, frame.sequence)
                elif frame.kind == framing.STATS:
                    _stats_reply(sock, frame)

    with ScriptedPeer(["serve"], slow) as peer, _connection(peer) as connection:
        result = client.run_periodic(connection, _data(), 4.0, 6, 0, 0.1)
    measured = figures.PhaseFigures(result, 4.0, 0.1)
    assert result.lost == 0 and measured.late == 3
    assert all(measured.rtt[n] > 0.1 for n in (1, 3, 5))


ATTEMPTS = 1 + len(client.RETRY_WAITS_S)


@pytest.mark.parametrize(
    ("script", "timeout_s", "seen", "raised"),
    [
        # closed (a crowd's newcomer took its pending place), busy or unanswered: tried again
        (["close", "close", "serve"], 1.0, 3, None),
        (["busy", "busy", "serve"], 1.0, 3, None),
        (["silent", "serve"], 1.0, 2, None),
        # a refusal that is not busy is not tried again
        (["refuse", "serve"], 1.0, 1, (handshake.HandshakeError, "scripted refuse")),
        # never answered: an error, not a hang (the retries wait in its listen queue)
        (["silent"], 0.5, 1, (handshake.HandshakeError, "did not complete the handshake")),
        # lost every time: the error after bounded attempts
        (["close"] * (ATTEMPTS + 3), 5.0, ATTEMPTS, (client.UserError, "closed the connection")),
    ],
    ids=["closed twice", "busy twice", "timed out", "refused", "never answered", "lost every time"],
)
def test_a_lost_handshake_is_tried_again_and_a_refused_one_or_the_last_attempt_is_an_error(
    script, timeout_s, seen, raised
):
    started = time.monotonic()
    link = messages.bind("json", "seed")
    with ScriptedPeer(script) as peer:
        if raised is None:
            with client.Connection(peer.address, link, "ack", timeout_s=timeout_s) as connection:
                assert connection.accepted["ok"] is True and connection.attempts == seen
                exchange = client.Exchange(connection, [])
                exchange.request_stats()
                assert exchange.wait(5_000_000_000) and exchange.stats
        else:
            with pytest.raises(raised[0], match=raised[1]):
                client.Connection(peer.address, link, "ack", timeout_s=timeout_s)
    assert peer.seen == seen
    # retried: the waits before the attempts (0.1, 0.2 s) and one 1 s timeout at most;
    # an error: every wait; plus slack
    waits = client.RETRY_WAITS_S[:2] if raised is None else client.RETRY_WAITS_S
    assert time.monotonic() - started < (
        1.0 + sum(waits) + 3.0 if raised is None else sum(waits) + 5.0
    )
