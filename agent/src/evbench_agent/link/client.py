"""The link client: a connection, message exchange by sequence, and the periodic sender.

The periodic sender wakes on absolute deadlines `start + k * period` of the
monotonic clock, so one late tick does not shift the later ones (no drift). It
always sleeps, never spins: after a send it waits for the reply in recv()
itself (bounded by a kernel receive timeout), so no extra system call sits in
the measured round trip; with replies still outstanding it sleeps in select()
until the next tick or a reply (select's timeout has microsecond resolution,
poll's and epoll's a millisecond); with none, in time.sleep (clock_nanosleep).
It sleeps twice per tick, first to PRE_WAKE_S before it and then to the tick:
the short second sleep finds the interpreter's code and data still in cache.
Replies are matched to messages by sequence number, never by arrival order.
Each reply carries the responder's processing time (its clock, from the
message's arrival to the reply's send), kept beside the reply's arrival so the
transport RTT can leave it out. A message is lost when no reply came within
`lost_after(deadline)` of its own send.
"""

from __future__ import annotations

import collections
import json
import select
import socket
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from evbench_agent.link import framing, handshake, messages
from evbench_agent.link.timing import clock_ns, thread_cpu_ns, timer_slack_ns
from evbench_agent.processes import private_environment
from evbench_core.errors import UserError

CONNECT_TIMEOUT_S = 10.0
HANDSHAKE_TIMEOUT_S = 10.0
#: A handshake lost on the way is tried again, on a new connection, after each of these
#: waits: the responder closed or reset the connection before its answer (a crowd of slow
#: clients on the client's own address made it close the oldest pending ones), its answer
#: did not come in time, the connection timed out or was reset, or the responder was busy.
#: A busy responder gives the slot of a client silent for its idle budget (2 s) to a
#: newcomer: the attempts span 3.1 s, no two more than 0.8 s apart, so one falls in the
#: silence of a client that sends a message every 2.8 s or less often. The whole
#: handshake, attempts and waits, stays within RETRY_BUDGET times the connection's timeout.
RETRY_WAITS_S = (0.1, 0.2, 0.4, 0.8, 0.8, 0.8)
RETRY_BUDGET = 2.0
#: A peer silent this long after a message is not going to answer it.
MIN_LOST_AFTER_S = 1.0
#: Shortest period for which the periodic sender awaits replies in a blocking recv().
BLOCKING_MIN_PERIOD_S = 0.02
#: The periodic sender's first sleep ends this long (plus the timer slack, at most
#: a tenth of the period) before each tick; a second, short sleep reaches the tick.
#: Measured on a loaded 2-CPU VM: 50 µs wakes as late as cyclictest, 300 µs later.
PRE_WAKE_S = 50e-6


class _Lost(Exception):
    """A handshake lost on the way: worth another attempt; `error` is what to raise when
    none is left."""

    def __init__(self, error: UserError) -> None:
        super().__init__(str(error))
        self.error = error


def lost_after(deadline_s: float) -> float:
    """How long to wait for a reply before counting its message lost."""
    return max(MIN_LOST_AFTER_S, 10 * deadline_s)


class LinkConnection(Protocol):
    """What the Exchange needs of a handshaken link: TCP (Connection) or a bus
    (bus_connection.BusConnection)."""

    link: messages.LinkCodec
    mode: str
    address: str

    def pack(self, kind: int, sequence: int, body: bytes = b"") -> bytes: ...
    def send(self, data: bytes) -> None: ...
    def wait_frames(self, timeout_ns: int) -> list[framing.Frame] | None: ...
    def block_frames(self) -> list[framing.Frame] | None: ...
    def set_receive_timeout(self, seconds: float) -> None: ...
    @property
    def received_ns(self) -> int: ...


class Connection:
    """A connected, handshaken link to a responder, for one codec and mode."""

    def __init__(
        self,
        address: tuple[str, int],
        link: messages.LinkCodec,
        mode: str,
        max_frame: int = framing.DEFAULT_MAX_FRAME,
        timeout_s: float = HANDSHAKE_TIMEOUT_S,
        reply_delay_ns: int = 0,
        token: str | None = None,
    ) -> None:
        """`token`: the responder's shared token (default: $EVBENCH_LINK_TOKEN, if set);
        `reply_delay_ns`: testing only, the responder holds each reply this long."""
        host, port = address
        if token is None:
            token = private_environment.link_token()
        self.link, self.mode, self.address = link, mode, f"{host}:{port}"
        hello = handshake.Hello(
            link.codec,
            link.profile.name,
            messages.message_name(link.profile),
            mode,
            token=token,
            reply_delay_ns=reply_delay_ns,
        )
        deadline = time.monotonic() + RETRY_BUDGET * timeout_s
        #: How many handshakes it took (1 unless one was lost on the way).
        self.attempts = 0
        self._send_timeout_s = timeout_s
        #: Frames read while a send waited for room, each batch with its arrival time.
        self._early: collections.deque[tuple[list[framing.Frame], int]] = collections.deque()
        self._received_ns = 0
        for wait_s in (*RETRY_WAITS_S, None):
            self.attempts += 1
            try:
                self._attempt(host, port, hello, max_frame, timeout_s, deadline)
                return
            except _Lost as lost:
                left = deadline - time.monotonic()
                if wait_s is None or left <= wait_s:
                    raise lost.error from lost.error.__cause__
            time.sleep(wait_s)

    def _attempt(
        self,
        host: str,
        port: int,
        hello: handshake.Hello,
        max_frame: int,
        timeout_s: float,
        deadline: float,
    ) -> None:
        """One connection and handshake, each within its timeout and the deadline; a lost
        one (worth another attempt) raises _Lost with the error to give if none is left."""
        try:
            self.sock = socket.create_connection(
                (host, port),
                timeout=max(0.001, min(CONNECT_TIMEOUT_S, deadline - time.monotonic())),
            )
        except OSError as error:
            failure = UserError(
                f"cannot connect to the responder at {host}:{port}: {error.strerror or error}",
                hint="start one with 'evbench-agent serve', or check --peer",
            )
            failure.__cause__ = error
            # refused, unreachable: no responder there, and trying again will not make one
            if isinstance(error, (TimeoutError, ConnectionResetError, ConnectionAbortedError)):
                raise _Lost(failure) from error
            raise failure from error
        self.sock.settimeout(None)
        wait_s = max(0.001, min(timeout_s, deadline - time.monotonic()))
        try:
            framing.configure(self.sock, send_timeout_s=timeout_s)
            self.reader = framing.FrameReader(self.sock, max_frame)
            self.accepted = handshake.request(self.reader, hello, wait_s)
        except (framing.PeerClosed, ConnectionError) as error:
            self.sock.close()
            failure = UserError(
                f"the responder at {self.address} closed the connection during the handshake: "
                f"{error}"
            )
            failure.__cause__ = error
            raise _Lost(failure) from error
        except handshake.HandshakeError as error:
            self.sock.close()
            if isinstance(error, handshake.BusyError) or isinstance(error.__cause__, TimeoutError):
                raise _Lost(error) from error
            raise
        except BaseException:
            self.sock.close()
            raise

    # The transport seam: the Exchange sends and receives only through these, so a
    # bus connection (link.bus_connection) runs the same phases over a UART or ISO-TP.
    def pack(self, kind: int, sequence: int, body: bytes = b"") -> bytes:
        """One frame as this transport sends it (length prefix included)."""
        return framing.pack(kind, sequence, body)

    def send(self, data: bytes) -> None:
        """Send one frame; while the socket is full, take in what the responder sends.

        A window of large messages fills both directions' socket buffers: a client
        that only waits to write stops the responder, whose replies then fill its own
        buffers, and neither moves again until the send timeout drops the connection
        (60 KB echo messages, window 1000). Replies read meanwhile wait, with their
        arrival times, for the next wait_frames or block_frames. One non-blocking
        send() is the usual whole path, as cheap as sendall()."""
        view = memoryview(data)
        try:
            while view:
                try:
                    view = view[self.sock.send(view, socket.MSG_DONTWAIT) :]
                except BlockingIOError:
                    self._read_while_full()
        except (BrokenPipeError, ConnectionResetError) as error:
            raise framing.PeerClosed(
                f"the peer closed the connection ({error.strerror})"
            ) from error

    def _read_while_full(self) -> None:
        """Wait until the socket takes more bytes; keep what the responder sends meanwhile."""
        readable, writable, _ = select.select([self.sock], [self.sock], [], self._send_timeout_s)
        if not readable and not writable:
            raise framing.PeerClosed("the peer stopped reading (send timed out)")
        if readable:
            frames = self.reader.receive()
            if frames:
                self._early.append((frames, self.reader.received_ns))

    def wait_frames(self, timeout_ns: int) -> list[framing.Frame] | None:
        """Frames once data arrives within `timeout_ns`; None when none did."""
        if self._early:
            return self._take_early()
        readable, _, _ = select.select([self.sock], [], [], max(timeout_ns, 0) / 1e9)
        return self._receive() if readable else None

    def block_frames(self) -> list[framing.Frame] | None:
        """Frames from a recv() bounded by the receive timeout; None when it expired."""
        if self._early:
            return self._take_early()
        try:
            return self._receive()
        except BlockingIOError:
            return None

    def _take_early(self) -> list[framing.Frame]:
        frames, self._received_ns = self._early.popleft()
        return frames

    def _receive(self) -> list[framing.Frame]:
        frames = self.reader.receive()
        self._received_ns = self.reader.received_ns
        return frames

    def set_receive_timeout(self, seconds: float) -> None:
        """The kernel's bound on block_frames() (0: none); its resolution is a scheduler tick."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, framing.timeval(seconds))

    @property
    def received_ns(self) -> int:
        """When the data of the last receive arrived."""
        return self._received_ns

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


@dataclass
class Sent:
    encode_start: int
    send: int
    payload_bytes: int
    frame_bytes: int


@dataclass
class PhaseResult:
    """What one periodic phase measured (times in ns, sizes in bytes)."""

    sent: dict[int, Sent] = field(default_factory=dict)
    #: sequence -> (reply arrival, end of decoding the reply, responder's processing ns)
    replies: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    lateness: list[int] = field(default_factory=list)
    client_cpu_ns: int = 0
    responder: dict[str, int] | None = None
    error: str | None = None
    #: A reply later than this after its message's own send counts the message lost.
    lost_after_ns: int = 10**18
    #: Every message sent on the connection, warm-up included (energy's count).
    total_sent: int = 0
    #: sequence -> bytes of the reply's body (processing time included), as received.
    reply_sizes: dict[int, int] = field(default_factory=dict)

    def answered(self) -> list[int]:
        """Sequences answered within `lost_after_ns` of their own send, in order."""
        sent, replies, limit = self.sent, self.replies, self.lost_after_ns
        return sorted(
            sequence
            for sequence in sent
            if sequence in replies and replies[sequence][0] - sent[sequence].send <= limit
        )

    @property
    def lost(self) -> int:
        return len(self.sent) - len(self.answered())


class Exchange:
    """Sends messages and takes in replies on one connection, matching by sequence."""

    def __init__(self, connection: LinkConnection, data: list[Any]) -> None:
        self.connection = connection
        self.data = data
        self.echo = connection.mode == "echo"
        self.sent_at: dict[int, tuple[int, int, int, int]] = {}
        self.replies: dict[int, tuple[int, int, int]] = {}
        self.stats: list[dict[str, int]] = []
        #: sequence -> bytes of the reply's body (bus load counts the replies too)
        self.reply_sizes: dict[int, int] = {}
        #: Sequences in the order their replies arrived (the saturating sender follows it).
        self.arrivals: list[int] = []
        self.next_sequence = 0

    def send_next(self) -> int:
        sequence = self.next_sequence
        encode_start = clock_ns()
        blob = self.connection.link.encode(self.data[sequence % len(self.data)])
        frame = self.connection.pack(framing.MESSAGE, sequence, blob)
        self.next_sequence += 1
        # Recorded before the send: a message the link failed to take is lost, not unsent.
        send_time = clock_ns()
        self.sent_at[sequence] = (encode_start, send_time, len(blob), len(frame))
        self.connection.send(frame)
        return sequence

    def request_stats(self) -> None:
        self.connection.send(self.connection.pack(framing.STATS, len(self.stats)))

    def wait(self, timeout_ns: int) -> bool:
        """Sleep until data arrives or `timeout_ns` passes; take in every whole frame.

        Returns False when the time ran out with nothing to read."""
        frames = self.connection.wait_frames(timeout_ns)
        if frames is None:
            return False
        self._take_all(frames)
        return True

    def block(self) -> bool:
        """Wait in recv() itself, bounded by the socket's receive timeout (set_receive_timeout).

        No select() call sits between the reply's arrival and its timestamp, so
        the transport RTT carries no more system calls than a bare ping-pong's.
        Returns False when the timeout expired with nothing received."""
        frames = self.connection.block_frames()
        if frames is None:
            return False
        self._take_all(frames)
        return True

    def set_receive_timeout(self, seconds: float) -> None:
        """The bound on block() (0: none)."""
        self.connection.set_receive_timeout(seconds)

    def _take_all(self, frames: list[framing.Frame]) -> None:
        arrival = self.connection.received_ns
        for frame in frames:
            if frame.kind == framing.STATS_REPLY:
                self.stats.append(_stats(frame.body))
            elif frame.kind == framing.REPLY:
                self._take(frame, arrival)
            else:
                raise framing.FrameError(f"unexpected frame kind {frame.kind} from the responder")

    def _take(self, frame: framing.Frame, arrival: int) -> None:
        sequence = frame.sequence
        if sequence not in self.sent_at or sequence in self.replies:
            what = "a second reply" if sequence in self.replies else "a reply"
            raise framing.FrameError(f"{what} to message {sequence}, which was not expected")
        link = self.connection.link
        processing_ns, body = framing.split_reply(frame.body)
        round_trip_ns = arrival - self.sent_at[sequence][1]
        if processing_ns > round_trip_ns:  # the transport RTT would come out negative
            raise framing.FrameError(
                f"the reply to message {sequence} says the responder took {processing_ns} ns,"
                f" more than the whole round trip ({round_trip_ns} ns)"
            )
        try:
            if self.echo:
                link.decode(body)
            else:
                acked, _receive_ns = link.decode_ack(body)
                if acked != sequence:
                    raise framing.FrameError(f"the reply to {sequence} acknowledges {acked}")
        except framing.FrameError:
            raise
        except Exception as error:  # each codec library raises its own types
            raise framing.FrameError(
                f"the reply to message {sequence} does not decode: {type(error).__name__}: {error}"
            ) from error
        self.replies[sequence] = (arrival, clock_ns(), processing_ns)
        self.reply_sizes[sequence] = len(frame.body)
        self.arrivals.append(sequence)

    def outstanding(self) -> int:
        return len(self.sent_at) - len(self.replies)


def _stats(body: bytes) -> dict[str, int]:
    try:
        counts = json.loads(body.decode("utf-8"))
        return {"messages": int(counts["messages"]), "cpu_ns": int(counts["cpu_ns"])}
    except (UnicodeDecodeError, ValueError, KeyError, TypeError) as error:
        raise framing.FrameError(f"a STATS_REPLY that is not the expected JSON: {error}") from error


def went_wrong(address: object, error: framing.FrameError) -> str:
    """Why a phase ended early: what it measured until then is kept (a partial run)."""
    if isinstance(error, framing.PeerClosed):
        return f"the responder at {address} went away: {error}"
    return f"the responder at {address} sent what no responder sends: {error}"


def drain(exchange: Exchange, until_ns: int, stats_wanted: int = 0) -> None:
    """Take in replies until none is outstanding (and the stats came) or `until_ns`."""
    while exchange.outstanding() or len(exchange.stats) < stats_wanted:
        remaining = until_ns - clock_ns()
        if remaining <= 0:
            return
        exchange.wait(remaining)


def run_periodic(
    connection: LinkConnection,
    data: list[Any],
    rate_hz: float,
    count: int,
    warmup_count: int,
    deadline_s: float,
) -> PhaseResult:
    """Send `warmup_count` + `count` messages at `rate_hz`; record the last `count`.

    A peer that dies ends the phase early: what was measured is returned with
    `error` set and the unanswered messages counted lost.
    """
    exchange = Exchange(connection, data)
    wait_lost = round(lost_after(deadline_s) * 1e9)
    sender = _PeriodicSender(exchange, round(1e9 / rate_hz))
    result = PhaseResult(lost_after_ns=wait_lost)
    try:
        sender.send_all(warmup_count, count, result.lateness)
        last_send = exchange.sent_at[exchange.next_sequence - 1][1]
        exchange.request_stats()
        drain(exchange, last_send + wait_lost, stats_wanted=2)
    except framing.FrameError as error:  # PeerClosed, or a reply no responder sends
        result.error = went_wrong(connection.address, error)
    if sender.cpu_start is not None:
        result.client_cpu_ns = thread_cpu_ns() - sender.cpu_start
    _record(exchange, result, warmup_count)
    return result


def _blocking_wait_ns(period: int) -> int:
    """How long to await the reply in recv() itself right after a send (0: not at all).

    Half a period: the kernel's timeout is coarse (a scheduler tick, up to 4 ms), so
    this needs a period of at least BLOCKING_MIN_PERIOD_S; then select() takes over
    until the next tick, which it times to the microsecond."""
    return period // 2 if period >= BLOCKING_MIN_PERIOD_S * 1e9 else 0


def _pre_wake_ns(period: int) -> int:
    """How long before each tick the first of its two sleeps ends.

    The first wake-up may come up to the timer slack late: keep it before the tick."""
    return min(round(PRE_WAKE_S * 1e9) + (timer_slack_ns() or 0), period // 10)


class _PeriodicSender:
    """The periodic sender's timing loop (see the module's docstring), sending on one
    exchange every `period` ns. It keeps `cpu_start`, the thread's CPU time when the
    measured messages began (None before), where a peer's death mid-loop cannot lose it."""

    def __init__(self, exchange: Exchange, period: int) -> None:
        self.exchange, self.period = exchange, period
        self.block_ns = _blocking_wait_ns(period)
        if self.block_ns:
            exchange.set_receive_timeout(self.block_ns / 1e9)
        self.pre_wake = _pre_wake_ns(period)
        self.cpu_start: int | None = None

    def send_all(self, warmup_count: int, count: int, lateness: list[int]) -> None:
        """Send `warmup_count` + `count` messages, one per tick; append each measured one's
        lateness (its send's wake-up after its tick, in ns) to `lateness`.

        One loop, with no call layer of its own between a tick's wake-up, its send and
        the wait for its reply: all of it is in the measured timing."""
        # Locals, not attributes: the loop reads them at every tick.
        exchange, period = self.exchange, self.period
        pre_wake, block_ns = self.pre_wake, self.block_ns
        start = clock_ns()
        for sequence in range(warmup_count + count):
            deadline = start + sequence * period
            while (now := clock_ns()) < deadline:
                # Two sleeps: to just before the tick, then to the tick, so the
                # interpreter wakes warm at the deadline (waking cold costs it tens of µs).
                target = deadline - pre_wake if now < deadline - pre_wake else deadline
                if exchange.outstanding():
                    exchange.wait(target - now)
                else:
                    # Nothing to take in: time.sleep is clock_nanosleep, whose slack is
                    # the task's own; select() would add 0.1 % of the timeout (0.5 % niced).
                    time.sleep((target - now) / 1e9)
            if sequence == warmup_count:
                self.cpu_start = thread_cpu_ns()
                exchange.request_stats()
            exchange.send_next()
            if sequence >= warmup_count:
                lateness.append(now - deadline)
            while block_ns and exchange.outstanding() and clock_ns() < deadline + block_ns:
                if not exchange.block():
                    break
        if block_ns:
            exchange.set_receive_timeout(0)


def _record(exchange: Exchange, result: PhaseResult, warmup_count: int) -> None:
    """Copy into `result` what the exchange measured, the warm-up left out: the messages,
    their replies, and what the responder counted between the two STATS replies."""
    result.total_sent = exchange.next_sequence
    for sequence, (encode_start, send, payload, frame) in exchange.sent_at.items():
        if sequence >= warmup_count:
            result.sent[sequence] = Sent(encode_start, send, payload, frame)
            if sequence in exchange.replies:
                result.replies[sequence] = exchange.replies[sequence]
                result.reply_sizes[sequence] = exchange.reply_sizes[sequence]
    if len(exchange.stats) == 2:
        first, last = exchange.stats
        result.responder = {key: last[key] - first[key] for key in ("messages", "cpu_ns")}
