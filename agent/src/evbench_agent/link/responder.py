"""The responder: `evbench-agent serve`. Answers framed messages, echo or ack.

One thread per connection (bounded by a connection limit), so each
connection's CPU time is its thread's CPU clock, which the client reads with
a STATS frame at the end of a phase. It binds to loopback unless told
otherwise. SIGTERM (or Ctrl-C) stops it cleanly: the listening socket closes,
every connection is shut down, the threads are joined.
"""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from evbench_agent import __version__, private_environment
from evbench_agent.errors import EvbenchError, UserError
from evbench_agent.link import framing, handshake, messages, timing
from evbench_agent.link.timing import clock_ns

LOOPBACK = "127.0.0.1"
DEFAULT_PORT = 50505
DEFAULT_MAX_CONNECTIONS = 16
#: The whole handshake (every byte of the HELLO) must arrive within this deadline.
HANDSHAKE_DEADLINE_S = 5.0
#: A client whose last whole frame is older than this is gone; its thread is freed.
IDLE_TIMEOUT_S = 120.0
#: A client that stops reading replies for this long is dropped.
SEND_TIMEOUT_S = 10.0
#: Connections still in their handshake, per connection slot: a client that stalls
#: there holds one for at most HANDSHAKE_DEADLINE_S, and attackers up to this many
#: times --max-connections leave room for real clients.
PENDING_PER_SLOT = 4
TOKEN_ENV = handshake.TOKEN_ENV

Log = Callable[[str], None]


def _stderr(line: str) -> None:
    print(f"evbench-agent serve: {line}", file=sys.stderr, flush=True)


class _Stop(Exception):
    """Raised in the accepting thread by SIGTERM."""


class _Client:
    """One connection's state, shared with the accepting thread for slot decisions."""

    __slots__ = ("evicted", "last_frame", "served", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.served = False  # holds one of the max_connections slots
        self.evicted = False  # its slot went to a newer client
        #: time.monotonic() of the last whole frame (or of the accept)
        self.last_frame = time.monotonic()


class Responder:
    """A listening socket and its connection threads.

    Slots: at most `max_connections` clients past their handshake. When all are
    taken, a new client that completes its handshake takes the slot of one that
    has sent no whole frame for `handshake_deadline_s` (a stalled client cannot
    hold a slot longer than a handshake may take); otherwise it is refused with
    a message that says other clients hold the slots.
    """

    def __init__(
        self,
        bind: str = LOOPBACK,
        port: int = DEFAULT_PORT,
        max_frame: int = framing.DEFAULT_MAX_FRAME,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        log: Log = _stderr,
        token: str | None = None,
        handshake_deadline_s: float = HANDSHAKE_DEADLINE_S,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
    ) -> None:
        try:
            family = socket.AF_INET6 if ":" in bind else socket.AF_INET
            self.listener = socket.create_server(
                (bind, port), family=family, backlog=max_connections
            )
        except OSError as error:
            raise UserError(
                f"cannot listen on {bind}:{port}: {error.strerror}",
                hint="choose another --port (0 picks a free one) or --bind address",
            ) from error
        self.address: tuple[str, int] = self.listener.getsockname()[:2]
        self.max_frame = max_frame
        self.max_connections = max_connections
        self.log = log
        self.token = token
        self.handshake_deadline_s = handshake_deadline_s
        self.idle_timeout_s = idle_timeout_s
        self._lock = threading.Lock()
        self._connections: dict[socket.socket, threading.Thread] = {}
        self._clients: dict[socket.socket, _Client] = {}
        self._served = 0
        self._closed = False

    def serve_forever(self) -> None:
        """Accept until close() (or SIGTERM in the main thread)."""
        limit = (1 + PENDING_PER_SLOT) * self.max_connections
        while not self._closed:
            try:
                sock, peer = self.listener.accept()
            except OSError:
                if self._closed:
                    return
                raise
            with self._lock:
                if len(self._connections) >= limit:
                    sock.close()  # a flood: refuse without spending a thread
                    continue
                state = _Client(sock)
                thread = threading.Thread(target=self._connection, args=(state, peer), daemon=True)
                self._connections[sock] = thread
                self._clients[sock] = state
            thread.start()

    def close(self) -> None:
        """Stop accepting, shut every connection down, wait for the threads."""
        self._closed = True
        with contextlib.suppress(OSError):  # wakes an accept() blocked in another thread
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        with self._lock:
            connections = dict(self._connections)
        for sock in connections:
            with contextlib.suppress(OSError):  # already closed by its thread
                sock.shutdown(socket.SHUT_RDWR)
        for thread in connections.values():
            thread.join(timeout=5.0)

    def counts(self) -> dict[str, int]:
        """Threads of connections, and slots held by served clients (for tests and soak)."""
        with self._lock:
            return {"connections": len(self._connections), "served": self._served}

    def _claim_slot(self, state: _Client) -> bool:
        """A slot for a client whose handshake passed: free, or a stalled client's."""
        with self._lock:
            if self._served < self.max_connections:
                self._served += 1
                state.served = True
                return True
            stalled_before = time.monotonic() - self.handshake_deadline_s
            stalled = [
                other
                for other in self._clients.values()
                if other.served and not other.evicted and other.last_frame < stalled_before
            ]
            if not stalled:
                return False
            victim = min(stalled, key=lambda other: other.last_frame)
            victim.evicted = True  # its slot passes to `state`; its thread must not free it
            state.served = True
        self.log("a client silent for longer than the handshake deadline gave up its slot")
        with contextlib.suppress(OSError):
            victim.sock.shutdown(socket.SHUT_RDWR)
        return True

    def _connection(self, state: _Client, peer: tuple) -> None:
        sock = state.sock
        name = f"{peer[0]}:{peer[1]}"
        reader = framing.FrameReader(sock, self.max_frame)
        try:
            framing.configure(sock, SEND_TIMEOUT_S)
            self._converse(state, reader)
        except framing.PeerClosed:
            pass  # the client finished
        except (EvbenchError, OSError) as error:
            self.log(f"{name}: connection dropped: {error}")
        except Exception as error:  # a bug must not pass silently, nor kill the responder
            self.log(f"{name}: connection dropped by an internal error: {error!r}")
        finally:
            sock.close()
            with self._lock:
                self._connections.pop(sock, None)
                self._clients.pop(sock, None)
                if state.served and not state.evicted:
                    self._served -= 1

    def _converse(self, state: _Client, reader: framing.FrameReader) -> None:
        sock = state.sock
        try:
            hello = handshake.receive(reader, self.handshake_deadline_s, self.token)
            link = messages.bind(hello.codec, hello.profile)
            if messages.message_name(link.profile) != hello.message:
                raise handshake.HandshakeError(
                    f"profile {hello.profile!r} carries {messages.message_name(link.profile)}, "
                    f"not {hello.message}"
                )
        except framing.PeerClosed:
            raise
        except EvbenchError as error:
            # a client that is gone gets no answer: the log line is what remains
            with contextlib.suppress(EvbenchError, OSError):
                handshake.answer(sock, error=str(error))
            raise
        if not self._claim_slot(state):
            error = (
                f"the connection limit ({self.max_connections}) is reached: other clients "
                "hold every slot"
            )
            with contextlib.suppress(EvbenchError, OSError):
                handshake.answer(sock, error=error, reason=handshake.BUSY)
            raise UserError(error)
        state.last_frame = time.monotonic()
        handshake.answer(sock, max_frame=self.max_frame, responder=f"evbench-agent {__version__}")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, framing.timeval(self.idle_timeout_s))
        self._answer_messages(state, reader, hello.mode == "echo", link, hello.reply_delay_ns)

    def _answer_messages(
        self,
        state: _Client,
        reader: framing.FrameReader,
        echo: bool,
        link: Any,
        delay_ns: int = 0,
    ) -> None:
        sock, idle = state.sock, self.idle_timeout_s
        cpu_start, answered = timing.thread_cpu_ns(), 0
        decode, encode_ack = link.decode, link.encode_ack
        pack, pack_reply, send, now_ns = framing.pack, framing.pack_reply, framing.send, clock_ns
        while True:
            try:
                frames = reader.receive()
            except BlockingIOError as error:
                raise framing.FrameError(f"idle for {idle:g} s") from error
            receive_ns = reader.received_ns
            if not frames:
                # bytes, but no whole frame: a client that dribbles a frame is idle too
                if time.monotonic() - state.last_frame > idle:
                    raise framing.FrameError(f"no whole frame for {idle:g} s")
                continue
            state.last_frame = time.monotonic()
            for frame in frames:
                if frame.kind == framing.MESSAGE:
                    if echo:
                        body = frame.body
                    else:
                        _decode(decode, frame, link)
                        body = encode_ack(frame.sequence, receive_ns)
                    processing = now_ns() - receive_ns
                    if delay_ns:  # testing only: a slower link, not a slower responder
                        _hold_until(receive_ns + processing + delay_ns)
                    send(sock, pack_reply(frame.sequence, processing, body))
                    answered += 1
                elif frame.kind == framing.STATS:
                    counts = {"messages": answered, "cpu_ns": timing.thread_cpu_ns() - cpu_start}
                    send(
                        sock, pack(framing.STATS_REPLY, frame.sequence, json.dumps(counts).encode())
                    )
                else:
                    raise framing.FrameError(f"unexpected frame kind {frame.kind} from a client")


def _hold_until(until_ns: int) -> None:
    """Sleep most of the way, then spin: a reply delay of 200 µs needs better than
    a sleep's slack (50 µs by default)."""
    remaining = until_ns - clock_ns()
    if remaining > 200_000:
        time.sleep((remaining - 150_000) / 1e9)
    while clock_ns() < until_ns:
        pass


def _decode(decode: Callable[[bytes], int], frame: framing.Frame, link: Any) -> None:
    try:
        decode(frame.body)
    except Exception as error:  # each codec library raises its own types
        raise framing.FrameError(
            f"message {frame.sequence} does not decode as {link.codec} "
            f"{messages.message_name(link.profile)}: {type(error).__name__}: {error}"
        ) from error


def _raise_stop(signum: int, _frame: Any) -> None:
    raise _Stop(signum)


def serve(
    bind: str = LOOPBACK,
    port: int = DEFAULT_PORT,
    max_frame: int = framing.DEFAULT_MAX_FRAME,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    realtime: bool = False,
) -> None:
    """`evbench-agent serve`: listen, say where (on stdout as JSON too), until SIGTERM.

    The shared token, if any, comes from the environment (TOKEN_ENV), never argv."""
    scheduling = timing.enter_realtime() if realtime else timing.current()
    token = private_environment.link_token()
    responder = Responder(bind, port, max_frame, max_connections, token=token)
    host, bound_port = responder.address
    loopback = host.startswith("127.") or host == "::1"
    scope = (
        "loopback only; --bind ADDRESS to accept other machines"
        if loopback
        else "reachable from other machines on this address"
    )
    _stderr(
        f"listening on {host}:{bound_port} ({scope}); max frame {max_frame} B, "
        f"{max_connections} connections, {scheduling.policy}, "
        f"{'a shared token required' if token else 'no token'}"
    )
    if not loopback and token is None:
        _stderr(
            f"WARNING: anyone who can reach {host}:{bound_port} can use this responder; "
            f"set {TOKEN_ENV} on both sides to require a shared token"
        )
    print(json.dumps({"event": "listening", "host": host, "port": bound_port}), flush=True)
    previous = signal.signal(signal.SIGTERM, _raise_stop)
    try:
        responder.serve_forever()
    except (_Stop, KeyboardInterrupt):
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        responder.close()
        _stderr("stopped")
