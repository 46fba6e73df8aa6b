"""The responder under attack on 127.0.0.1: slow loris, clients stalled holding a slot, a
deeply nested HELLO, frames in the HELLO's write, a first frame claiming 1 MiB, the token.
Slot and deadline tests run a real `Responder` in a thread, with deadlines of about a second
(the command's are 5 s and 120 s); the others the real `evbench-agent serve` process."""

import contextlib
import json
import os
import select
import selectors
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest
from link_sockets import answer, closed, connect_from, hello_bytes, read_frames

from evbench_agent.link import client, framing, handshake, messages
from evbench_agent.link.responder import Responder
from evbench_agent.link.service import start_responder

DEADLINE_S = 1.0


@contextlib.contextmanager
def serving(**options) -> Iterator[Responder]:
    """A real Responder (these `options`, log dropped unless given) serving in a thread."""
    responder = Responder(port=0, **{"log": lambda _line: None, **options})
    thread = threading.Thread(target=responder.serve_forever, daemon=True)
    thread.start()
    try:
        yield responder
    finally:
        responder.close()
        thread.join(5)


@pytest.fixture
def live():
    """A real Responder with short deadlines, serving in a thread; 2 slots."""
    logged: list[str] = []
    deadlines = {"handshake_deadline_s": DEADLINE_S, "idle_budget_s": DEADLINE_S}
    with serving(max_connections=2, log=logged.append, idle_timeout_s=1.5, **deadlines) as live:
        yield live, logged


@pytest.fixture
def opened() -> Iterator[list[socket.socket]]:
    socks: list[socket.socket] = []  # the sockets a test opens, closed after it
    yield socks
    for sock in socks:
        sock.close()


@pytest.fixture(scope="module")
def served():
    with start_responder(max_connections=4) as process:
        yield process


@contextlib.contextmanager
def dribbling(socks: list[socket.socket], data: bytes) -> Iterator[None]:
    """`data` to each of `socks`, one byte every 0.2 s (well within any per-recv limit),
    from threads stopped at the end of the block."""
    stop = threading.Event()

    def dribble(sock: socket.socket) -> None:
        for byte in data:
            if stop.wait(0.2):
                return
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                return

    for sock in socks:
        threading.Thread(target=dribble, args=(sock,), daemon=True).start()
    try:
        yield
    finally:
        stop.set()


def test_slow_clients_are_dropped_at_the_handshake_deadline_and_logged_once(live, opened):
    responder, logged = live
    opened.extend(socket.create_connection(responder.address) for _ in range(4))
    started = time.monotonic()
    # a HELLO of ~150 bytes at 5 bytes/s would take 30 s: the deadline ends it at 1 s
    with dribbling(opened, hello_bytes()):
        for sock in opened:
            assert closed(sock, 6 * DEADLINE_S)
        assert time.monotonic() - started < 6 * DEADLINE_S
    assert responder.counts()["served"] == 0
    lines = [line for line in logged if "handshake" in line]
    assert len(lines) == 1, logged  # once per peer per minute, not once per connection
    assert lines[0].startswith("127.0.0.1:") and f"within {DEADLINE_S:g} s" in lines[0]


def test_a_client_stalled_after_its_handshake_gives_its_slot_to_a_new_client(live):
    responder, logged = live
    link = messages.bind("json", "seed")
    with (
        client.Connection(responder.address, link, "ack"),
        client.Connection(responder.address, link, "ack"),
    ):
        time.sleep(DEADLINE_S + 0.3)  # they send nothing: stalled past the handshake deadline
        with client.Connection(responder.address, link, "ack") as fresh:
            result = client.run_periodic(fresh, link.sample_data(2, 1), 100.0, 5, 0, 0.5)
    assert result.error is None and result.lost == 0
    assert any("gave up its slot" in line for line in logged)


def test_when_busy_clients_hold_every_slot_the_refusal_says_so(live):
    responder, _ = live
    link = messages.bind("json", "seed")
    stop = threading.Event()
    busy = [client.Connection(responder.address, link, "ack") for _ in range(2)]

    def keep_busy(connection: client.Connection) -> None:
        exchange = client.Exchange(connection, link.sample_data(2, 1))
        while not stop.wait(0.05):
            exchange.send_next()
            exchange.wait(200_000_000)

    threads = [threading.Thread(target=keep_busy, args=(c,), daemon=True) for c in busy]
    for thread in threads:
        thread.start()
    try:
        time.sleep(DEADLINE_S + 0.3)
        with pytest.raises(handshake.HandshakeError) as refused:
            client.Connection(responder.address, link, "ack")
        message, hint = str(refused.value), refused.value.hint
        assert "connection limit (2) is reached: other clients hold every slot" in message
        assert "other clients" in hint and "same evbench version" not in hint
    finally:
        stop.set()
        for thread in threads:
            thread.join(5)
        for connection in busy:
            connection.close()


def test_a_client_that_dribbles_a_frame_after_its_handshake_is_dropped_at_the_idle_deadline(live):
    responder, _ = live
    frame = framing.pack(framing.MESSAGE, 0, b"x" * 64)
    with client.Connection(responder.address, messages.bind("json", "seed"), "ack") as connection:
        started = time.monotonic()
        with dribbling([connection.sock], frame):
            # idle deadline 1.5 s: dropped at the first recv after it, at most 1.5 s later
            assert closed(connection.sock, 8.0)
            assert time.monotonic() - started < 6.0  # not held while the bytes keep coming


def test_a_message_in_the_same_write_as_the_hello_is_answered(served):
    link = messages.bind("json", "seed")
    blob = link.encode(link.sample_data(1, 1)[0])
    message = struct.pack("<IBQ", 9 + len(blob), 1, 42) + blob  # kind 1 MESSAGE, sequence 42
    with socket.create_connection(served.address, timeout=5) as sock:
        sock.sendall(hello_bytes() + message)
        (hello_kind, _, hello), (kind, sequence, _body) = read_frames(sock, 2)
    assert hello_kind == 0 and json.loads(hello)["ok"] is True
    assert (kind, sequence) == (2, 42)  # REPLY to 42


def test_a_responder_with_a_token_refuses_a_hello_without_it():
    link = messages.bind("json", "seed")
    with serving(max_connections=2, token="s3cret-0") as responder:
        with pytest.raises(handshake.HandshakeError, match="does not carry this responder's"):
            client.Connection(responder.address, link, "ack", token="wrong")
        with client.Connection(responder.address, link, "ack", token="s3cret-0") as good:
            assert good.accepted["ok"] is True


def test_serve_warns_loudly_when_it_listens_beyond_loopback_without_a_token():
    # all interfaces for a moment: what the warning is for
    argv = [sys.executable, "-m", "evbench_agent", "serve", "--bind", "0.0.0.0", "--port", "0"]
    env = {k: v for k, v in os.environ.items() if k != "EVBENCH_LINK_TOKEN"}
    pipe = subprocess.PIPE
    with subprocess.Popen(argv, stdout=pipe, stderr=pipe, text=True, env=env) as process:
        try:
            process.stdout.readline()  # listening
            process.terminate()
            stderr = process.communicate(timeout=15)[1]
        finally:
            process.kill()  # nothing once it has exited; Popen's exit waits and closes
    assert "WARNING: anyone who can reach" in stderr and "EVBENCH_LINK_TOKEN" in stderr


@pytest.mark.parametrize(
    ("sent", "refusal"),
    [
        # claims 1 MiB, sends 9 bytes: refused before its body arrives (at most 9 + 4096)
        (struct.pack("<I", 1 << 20) + b"\x00" * 9, "at most 4105"),
        # a length prefix of 3: below the 9 bytes every frame has (docs/link.md, wire format)
        (struct.pack("<I", 3) + b"\x00\x00\x00", "at least 9"),
        # a huge version, quoted cut short (the HELLO stays under its 4096-byte cap)
        (hello_bytes(version=int("7" * 3900)), "version"),
        (struct.pack("<I", 9 + 4000) + b"\x00" * 9 + b"[" * 4000, "nested too deeply"),
    ],
    ids=["1 MiB", "3 bytes", "huge version", "nested"],
)
def test_an_impossible_first_frame_is_refused_at_once_and_quoted_short(served, sent, refusal):
    with socket.create_connection(served.address, timeout=5) as sock:
        started = time.monotonic()
        sock.sendall(sent)
        refused = answer(sock)
        elapsed = time.monotonic() - started
    assert refused["ok"] is False and refusal in refused["error"], refused
    assert elapsed < 2.0  # not the 5 s handshake deadline
    assert "7" * 100 not in refused["error"] and len(refused["error"]) < 300, refused
    assert served.alive()


def test_a_client_whose_hello_has_come_keeps_its_pending_place_when_room_is_made(opened):
    # The accepting code is driven by hand, so the HELLO arrives between its connection's
    # accept and its read; then slow clients from the same address need room. 1 slot: 8
    # pending places, 2 per peer address (a quarter).
    responder = Responder(port=0, max_connections=1, log=lambda _line: None)
    try:
        with selectors.DefaultSelector() as selector:
            responder._selector = selector  # what serve_forever sets up
            real = _accepted_one(responder, opened)  # pending: nothing has come yet
            real.sendall(hello_bytes())  # comes, and is not read
            _accepted_one(responder, opened)  # a slow client: 2 pending, the share
            _accepted_one(responder, opened)  # past the share: room is made for it
            accepted = answer(real)
            counts = responder.counts()
    finally:
        responder.close()
        # what serve_forever closes as it ends: the pending connections, its wake-up pair
        for pending in responder._pending.values():
            pending.sock.close()
        responder._wake_r.close()
        responder._wake_w.close()
    # served, not closed for the newcomer: the first slow client went instead
    assert accepted["ok"] is True, accepted
    assert counts["served"] == 1 and counts["pending"] == 2


def _accepted_one(responder: Responder, opened: list[socket.socket]) -> socket.socket:
    """A new connection, accepted by the responder's accepting code."""
    sock = socket.create_connection(responder.address, timeout=5)
    opened.append(sock)
    ready, _, _ = select.select([responder.listener], [], [], 5.0)
    assert ready, "the connection never reached the listener"
    responder._accept_all()
    return sock


def _raw_answer(source: str, address: tuple[str, int], opened: list[socket.socket]) -> dict:
    """A HELLO from `source`, by hand; the answer (the connection stays open, in `opened`)."""
    sock = connect_from(source, address)
    opened.append(sock)
    sock.sendall(hello_bytes())
    return answer(sock)


def _closed_count(socks: list[socket.socket]) -> int:
    """How many of `socks` the responder has closed: all watched at once for the first close
    (a silent client's socket is readable only at its end), then 0.5 s more for others."""
    ready, _, _ = select.select(socks, [], [], 5.0)
    more, _, _ = select.select([sock for sock in socks if sock not in ready], [], [], 0.5)
    return sum(closed(sock, 0.5) for sock in ready + more)


def test_one_peer_holds_at_most_its_share_of_the_slots_and_loses_silent_ones_for_a_while(opened):
    """8 slots: one peer address holds at most 7. Past the idle budget a newcomer from another
    address takes a slot of the peer holding the most; that peer then takes no silent
    client's slot (its own neither) for the quiet penalty, though a free slot it may."""
    logged: list[str] = []
    with serving(max_connections=8, log=logged.append, idle_budget_s=DEADLINE_S) as responder:
        answers = [_raw_answer("127.0.0.2", responder.address, opened) for _ in range(8)]
        assert [a["ok"] for a in answers] == [True] * 7 + [False]
        assert answers[7]["reason"] == handshake.BUSY  # its share is 7; none silent yet
        assert _raw_answer("127.0.0.3", responder.address, opened)["ok"] is True  # the 8th
        assert responder.counts()["served"] == 8
        time.sleep(DEADLINE_S + 0.3)  # every client silent past the idle budget
        # a third address takes the slot of the peer holding the most (127.0.0.2's)
        assert _raw_answer("127.0.0.4", responder.address, opened)["ok"] is True
        assert _closed_count(opened[:7]) == 1
        # 127.0.0.2 lost a silent client to another address: it may not take one now
        refused = _raw_answer("127.0.0.2", responder.address, opened)
        assert refused["reason"] == handshake.BUSY, refused
        # a newcomer from 127.0.0.3 still may (127.0.0.2's, the peer holding the most)
        assert _raw_answer("127.0.0.3", responder.address, opened)["ok"] is True
        assert _closed_count(opened[:7]) == 2
    # one line per address per minute: 127.0.0.2's refusal; its evictions counted after
    assert [line for line in logged if line.startswith("127.0.0.2:")] == [
        next(line for line in logged if "127.0.0.2:" in line and "connection limit (8)" in line)
    ]
