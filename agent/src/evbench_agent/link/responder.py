"""The responder: `evbench-agent serve`. Answers framed messages, echo or ack.

Connections in their handshake cost no thread: the accepting thread reads every
pending HELLO itself, through one selector, each within the handshake deadline.
A client whose HELLO is complete and valid (its token too, when one is set)
takes a connection slot and a thread of its own, so each connection's CPU time
is its thread's CPU clock, which the client reads with a STATS frame at the end
of a phase. Pending handshakes are capped apart from the slots, in all and per
peer address; when the cap is reached the oldest pending connection (of the
peer holding the most) is closed for the new one: slow clients crowd out each
other, never a client that sends its HELLO at once. Slots are shared out too: one
peer address holds at most all but an eighth of them (14 of 16), the rest kept for
other addresses; a client that has sent no MESSAGE
for the idle budget (2 s) gives its slot up to a newcomer that needs one; and a
peer address whose client lost its slot so to another address's newcomer takes
no silent client's slot for a while (a free one it may), so hogs that reconnect
cannot pass the silent clients' slots among themselves. It binds to loopback
unless told otherwise. SIGTERM (or Ctrl-C) stops it cleanly: the listening socket
closes, every connection is shut down, the threads are joined.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import resource
import selectors
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evbench_agent import __version__
from evbench_agent.link import framing, handshake, messages, stop_signal, timing
from evbench_agent.link.timing import clock_ns
from evbench_agent.processes import private_environment
from evbench_core.errors import EvbenchError, UserError

LOOPBACK = "127.0.0.1"
DEFAULT_PORT = 50505
DEFAULT_MAX_CONNECTIONS = 16
#: The whole handshake (every byte of the HELLO) must arrive within this deadline.
HANDSHAKE_DEADLINE_S = 5.0
#: A client whose last whole frame is older than this is gone; its thread is freed.
IDLE_TIMEOUT_S = 120.0
#: A client that has sent no MESSAGE for this long (STATS frames do not count) gives up
#: its slot to a new client that needs one: a slot is for measuring traffic. Below the
#: 3 s of a slot hog that sends one small message at a time (issue 44), far above the
#: gaps of a link phase (50 ms at 20 Hz; a capacity block's turn).
IDLE_BUDGET_S = 2.0
#: Of the slots, this share (1 / RESERVED_SHARE, rounded down) is kept from any one peer
#: address: it holds at most the others (14 of 16; all of fewer than 8).
RESERVED_SHARE = 8
#: A peer address whose client gave up its slot to another address's newcomer (it was
#: quiet) may take no quiet client's slot for this long; a free slot it still may.
QUIET_PENALTY_S = 30.0
#: Peer addresses under that penalty remembered at most (the oldest forgotten first).
MAX_PENALIZED = 4096
#: A client that stops reading replies for this long is dropped.
SEND_TIMEOUT_S = 10.0
#: Connections in their handshake, per connection slot (counted apart from the slots).
PENDING_PER_SLOT = 8
#: Of those, one peer address may hold at most this share (1 / PEER_SHARE).
PEER_SHARE = 4
#: Connections accepted in a row before the pending handshakes are read again.
ACCEPT_BATCH = 8
#: A peer's drops are logged at most once per this many seconds (with a count of the rest).
DROP_LOG_INTERVAL_S = 60.0
#: Out of descriptors (or memory), the listener is left out of the selector this long.
ACCEPT_REST_S = 0.1
#: accept()'s errors that say there is no room for a connection now, not that it failed.
_NO_ROOM = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
TOKEN_ENV = handshake.TOKEN_ENV

Log = Callable[[str], None]


def _stderr(line: str) -> None:
    print(f"evbench-agent serve: {line}", file=sys.stderr, flush=True)


class _Client:
    """One served connection's state, shared with the accepting thread for slot decisions."""

    __slots__ = ("evicted", "host", "last_message", "name", "served", "sock")

    def __init__(self, sock: socket.socket, name: str, host: str) -> None:
        self.sock = sock
        self.name = name
        self.host = host  # the peer address: slots are shared out per address
        self.served = False  # holds one of the max_connections slots
        self.evicted = False  # its slot went to a newer client
        #: time.monotonic() of the last MESSAGE frame (or of taking the slot)
        self.last_message = time.monotonic()


class _Pending:
    """A connection in its handshake: the accepting thread reads its HELLO."""

    __slots__ = ("deadline", "peer", "reader", "sock")

    def __init__(
        self, sock: socket.socket, peer: tuple[Any, ...], max_frame: int, deadline: float
    ) -> None:
        self.sock = sock
        self.peer = peer
        self.reader = framing.FrameReader(sock, max_frame)
        self.deadline = deadline


class DropLog:
    """Says who was dropped and why, at most once per peer address per interval; the
    drops it held back are counted in the peer's next line."""

    def __init__(self, log: Log, interval_s: float = DROP_LOG_INTERVAL_S) -> None:
        self.log = log
        self.interval_s = interval_s
        self._lock = threading.Lock()
        self._last: dict[str, tuple[float, int]] = {}  # host -> (logged at, held back since)

    def dropped(self, host: str, line: str) -> None:
        now = time.monotonic()
        with self._lock:
            logged_at, held = self._last.get(host, (-self.interval_s, 0))
            if now - logged_at < self.interval_s:
                self._last[host] = (logged_at, held + 1)
                return
            self._last[host] = (now, 0)
            if len(self._last) > 4096:  # forget peers quiet for an interval
                self._last = {
                    key: value
                    for key, value in self._last.items()
                    if now - value[0] < self.interval_s
                }
        if held:
            line += f" (and {held} more from {host} in the last {self.interval_s:g} s)"
        self.log(line)


class Responder:
    """A listening socket, its pending handshakes and its connection threads.

    Slots: at most `max_connections` clients past their handshake, at most
    `max_per_peer` of them from one peer address. When no slot is free to a new
    client that completes its handshake, it takes the slot of one that has sent no
    MESSAGE for `idle_budget_s` (of its own address when that holds its share;
    else of the peer holding the most, then the longest silent), unless its own
    address is under the quiet penalty; otherwise it is refused with a message that
    says other clients hold the slots.
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
        idle_budget_s: float = IDLE_BUDGET_S,
    ) -> None:
        self.max_pending = PENDING_PER_SLOT * max_connections
        self.max_pending_per_peer = max(1, self.max_pending // PEER_SHARE)
        try:
            family = socket.AF_INET6 if ":" in bind else socket.AF_INET
            self.listener = socket.create_server(
                (bind, port), family=family, backlog=self.max_pending
            )
        except OSError as error:
            raise UserError(
                f"cannot listen on {bind}:{port}: {error.strerror}",
                hint="choose another --port (0 picks a free one) or --bind address",
            ) from error
        self.listener.setblocking(False)
        self.address: tuple[str, int] = self.listener.getsockname()[:2]
        self.max_frame = max_frame
        self.max_connections = max_connections
        self.log = log
        self.drops = DropLog(log)
        self.token = token
        self.handshake_deadline_s = handshake_deadline_s
        self.idle_timeout_s = idle_timeout_s
        self.idle_budget_s = idle_budget_s
        self.max_per_peer = max_connections - max_connections // RESERVED_SHARE
        self._lock = threading.Lock()
        #: Under _lock: slots held per peer address; addresses under the quiet penalty
        #: (until when, time.monotonic(); oldest first).
        self._slots_by_peer: dict[str, int] = {}
        self._penalized: dict[str, float] = {}
        self._connections: dict[socket.socket, threading.Thread] = {}
        self._clients: dict[socket.socket, _Client] = {}
        #: Handshakes in progress, oldest first (dicts keep insertion order); only the
        #: accepting thread touches them.
        self._pending: dict[socket.socket, _Pending] = {}
        self._pending_by_peer: dict[str, int] = {}
        self._served = 0
        self._closed = False
        self._wake_r, self._wake_w = socket.socketpair()
        #: time.monotonic() until which the listener rests (_rest_listener), else 0; when
        #: the last rest was logged, and the rests since.
        self._resting_until = 0.0
        self._rest_logged: tuple[float, int] | None = None

    def serve_forever(self) -> None:
        """Accept and read handshakes until close() (or SIGTERM in the main thread)."""
        with selectors.DefaultSelector() as selector:
            selector.register(self.listener, selectors.EVENT_READ)
            selector.register(self._wake_r, selectors.EVENT_READ)
            self._selector = selector
            try:
                while not self._closed:
                    timeout = min(self._expire_pending(), self._listener_rest())
                    for key, _events in selector.select(timeout):
                        if self._closed:
                            return
                        if key.fileobj is self.listener:
                            self._accept_all()
                        elif key.fileobj is not self._wake_r:
                            # Every other object registered is a pending connection's socket.
                            sock = key.fileobj
                            assert isinstance(sock, socket.socket)
                            pending = self._pending.get(sock)
                            if pending is not None:
                                self._advance(pending)
            finally:
                for pending in list(self._pending.values()):
                    self._forget(pending)
                    pending.sock.close()
                self._wake_r.close()
                self._wake_w.close()

    def close(self) -> None:
        """Stop accepting, shut every connection down, wait for the threads."""
        self._closed = True
        with contextlib.suppress(OSError):  # wakes the selector of the accepting thread
            self._wake_w.send(b"x")
        with contextlib.suppress(OSError):
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
        """Threads of connections, slots held by served clients, and handshakes in
        progress (for tests and soak)."""
        with self._lock:
            return {
                "connections": len(self._connections),
                "served": self._served,
                "pending": len(self._pending),
            }

    # The handshake stage: only the accepting thread runs these.
    def _accept_all(self) -> None:
        # A few at a time, then the pending ones are read again: a client whose HELLO
        # lands just after its accept is read before a flood can make it the oldest.
        for _ in range(ACCEPT_BATCH):
            try:
                sock, peer = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as error:  # out of descriptors, a connection reset in the queue
                if self._closed:
                    return
                if error.errno in _NO_ROOM:
                    self._rest_listener(error)
                else:
                    self.drops.dropped("accept", f"cannot accept a connection: {error}")
                return
            sock.setblocking(False)
            self._make_room(peer[0])
            pending = _Pending(
                sock, peer, self.max_frame, time.monotonic() + self.handshake_deadline_s
            )
            self._pending[sock] = pending
            self._pending_by_peer[peer[0]] = self._pending_by_peer.get(peer[0], 0) + 1
            self._selector.register(sock, selectors.EVENT_READ)
            self._advance(pending)  # a real client's HELLO is usually here already

    def _rest_listener(self, error: OSError) -> None:
        """No descriptor (or memory) for a queued connection: the listener is left out of
        the selector for ACCEPT_REST_S. It stays readable while connections wait in its
        queue, so the selector would wake at once for the same one again and again: a busy
        spin that takes the CPU from the connections being measured. Said at most once
        per DROP_LOG_INTERVAL_S, with the count of the rests since."""
        now = time.monotonic()
        self._selector.unregister(self.listener)
        self._resting_until = now + ACCEPT_REST_S
        if self._rest_logged is not None and now - self._rest_logged[0] < DROP_LOG_INTERVAL_S:
            self._rest_logged = (self._rest_logged[0], self._rest_logged[1] + 1)
            return
        held = self._rest_logged[1] if self._rest_logged else 0
        self._rest_logged = (now, 0)
        limit = ""
        if error.errno == errno.EMFILE:
            limit = f" (RLIMIT_NOFILE {resource.getrlimit(resource.RLIMIT_NOFILE)[0]})"
        more = f" ({held} more times in the last {DROP_LOG_INTERVAL_S:g} s)" if held else ""
        self.log(
            f"cannot accept a connection: {error.strerror}{limit}: new connections wait in "
            f"the listen queue; accepting again every {ACCEPT_REST_S * 1000:g} ms{more}"
        )

    def _listener_rest(self) -> float:
        """How long the listener rests yet (inf when it does not); back in the selector
        once its rest is over."""
        if not self._resting_until:
            return math.inf
        left = self._resting_until - time.monotonic()
        if left > 0:
            return left
        self._resting_until = 0.0
        with contextlib.suppress(ValueError):  # close() closed it meanwhile: the loop ends
            self._selector.register(self.listener, selectors.EVENT_READ)
        return math.inf

    def _make_room(self, host: str) -> None:
        """Close the oldest pending connection of `host` when it holds its share, or of
        the peer holding the most when all pending places are taken.

        What has come on that connection is read first: a HELLO that is whole is
        served (or refused) there and then, which frees the place instead. Under load
        a burst of reconnecting slow clients is accepted before the selector reads a
        real client's HELLO, and the burst would otherwise close it."""
        if self._pending_by_peer.get(host, 0) >= self.max_pending_per_peer:
            crowded = host
        elif len(self._pending) >= self.max_pending:
            crowded = max(self._pending_by_peer, key=self._pending_by_peer.__getitem__)
        else:
            return
        oldest = next(p for p in self._pending.values() if p.peer[0] == crowded)
        self._advance(oldest)
        if oldest.sock not in self._pending:
            return  # served, refused or gone: its place is free
        self._drop_pending(
            oldest,
            f"still in its handshake when the pending connections were full "
            f"({self.max_pending}, {self.max_pending_per_peer} per peer)",
        )

    def _expire_pending(self) -> float:
        """Drop pending connections past their deadline; how long until the next one is due."""
        now = time.monotonic()
        for pending in list(self._pending.values()):  # oldest first: deadlines in order
            if pending.deadline > now:
                return min(pending.deadline - now, 1.0)
            self._drop_pending(
                pending,
                f"did not complete the handshake within {self.handshake_deadline_s:g} s",
            )
        return 1.0

    def _forget(self, pending: _Pending) -> None:
        del self._pending[pending.sock]
        host = pending.peer[0]
        left = self._pending_by_peer[host] - 1
        if left:
            self._pending_by_peer[host] = left
        else:
            del self._pending_by_peer[host]
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(pending.sock)

    def _drop_pending(
        self, pending: _Pending, why: str, answer: str | None = None, reason: str | None = None
    ) -> None:
        self._forget(pending)
        if answer is not None:  # a few hundred bytes to a fresh socket: its buffer takes them
            with contextlib.suppress(EvbenchError, OSError):
                handshake.answer(pending.sock, error=answer, reason=reason)
        pending.sock.close()
        self.drops.dropped(pending.peer[0], f"{_name(pending.peer)}: dropped: {why}")

    def _advance(self, pending: _Pending) -> None:
        """Read what arrived; once the HELLO is whole, serve it, refuse it or wait on."""
        reader = pending.reader
        try:
            with contextlib.suppress(BlockingIOError, InterruptedError):
                reader.fill()
            handshake.check_first_length(reader, "the client")
            frames = reader.frames()
            if not frames:
                return
            reader.unread(frames[1:])
            hello = handshake.parse_hello(frames[0], self.token)
        except framing.PeerClosed:
            self._forget(pending)
            pending.sock.close()
            return
        except (EvbenchError, OSError) as error:
            self._drop_pending(pending, str(error), answer=str(error))
            return
        state = _Client(pending.sock, _name(pending.peer), pending.peer[0])
        if not self._claim_slot(state):
            refusal = (
                f"the connection limit ({self.max_connections}) is reached: other clients "
                "hold every slot"
            )
            self._drop_pending(pending, refusal, answer=refusal, reason=handshake.BUSY)
            return
        self._forget(pending)
        thread = threading.Thread(target=self._connection, args=(state, reader, hello), daemon=True)
        with self._lock:
            self._connections[state.sock] = thread
            self._clients[state.sock] = state
        thread.start()

    def _claim_slot(self, state: _Client) -> bool:
        """A slot for a client whose handshake passed: a free one within its peer's share,
        or a silent client's."""
        host = state.host
        with self._lock:
            at_share = self._slots_by_peer.get(host, 0) >= self.max_per_peer
            if self._served < self.max_connections and not at_share:
                self._take_slot(state)
                return True
            victim = self._silent_victim(host, at_share)
            if victim is None:
                return False
            victim.evicted = True  # its slot passes to `state`; its thread must not free it
            self._give_up_slot(victim.host)
            self._take_slot(state)
            if victim.host != host:
                self._penalize(victim.host)
        self.drops.dropped(
            victim.host,
            f"{victim.name}: gave up its slot to a new client: no message for "
            f"{self.idle_budget_s:g} s (the idle budget)",
        )
        with contextlib.suppress(OSError):
            victim.sock.shutdown(socket.SHUT_RDWR)
        return True

    def _silent_victim(self, host: str, at_share: bool) -> _Client | None:
        """The client whose slot a newcomer from `host` takes (lock held): silent for the
        idle budget; of `host` itself when it holds its share, else of the peer holding
        the most slots; the longest silent of those. None when there is none, or `host`
        is under the quiet penalty."""
        now = time.monotonic()
        until = self._penalized.get(host)
        if until is not None:
            if until > now:
                return None
            del self._penalized[host]
        silent_before = now - self.idle_budget_s
        candidates = [
            other
            for other in self._clients.values()
            if other.served
            and not other.evicted
            and other.last_message < silent_before
            and (not at_share or other.host == host)
        ]
        if not candidates:
            return None
        return max(
            candidates,
            key=lambda other: (self._slots_by_peer.get(other.host, 0), -other.last_message),
        )

    def _take_slot(self, state: _Client) -> None:
        self._served += 1
        self._slots_by_peer[state.host] = self._slots_by_peer.get(state.host, 0) + 1
        state.served = True

    def _give_up_slot(self, host: str) -> None:
        self._served -= 1
        left = self._slots_by_peer[host] - 1
        if left:
            self._slots_by_peer[host] = left
        else:
            del self._slots_by_peer[host]

    def _penalize(self, host: str) -> None:
        self._penalized.pop(host, None)
        self._penalized[host] = time.monotonic() + QUIET_PENALTY_S
        while len(self._penalized) > MAX_PENALIZED:
            del self._penalized[next(iter(self._penalized))]

    # A served connection: its own thread runs these.
    def _connection(self, state: _Client, reader: framing.FrameReader, hello: Any) -> None:
        sock = state.sock
        try:
            sock.setblocking(True)
            framing.configure(sock, SEND_TIMEOUT_S)
            self._converse(state, reader, hello)
        except framing.PeerClosed:
            pass  # the client finished
        except (EvbenchError, OSError) as error:
            if not state.evicted:  # an evicted client's drop is logged already
                self._dropped(state, f"connection dropped: {error}")
        except Exception as error:  # a bug must not pass silently, nor kill the responder
            self._dropped(state, f"connection dropped by an internal error: {error!r}")
        finally:
            sock.close()
            with self._lock:
                self._connections.pop(sock, None)
                self._clients.pop(sock, None)
                if state.served and not state.evicted:
                    self._give_up_slot(state.host)

    def _dropped(self, state: _Client, why: str) -> None:
        self.drops.dropped(state.name.rsplit(":", 1)[0], f"{state.name}: {why}")

    def _converse(self, state: _Client, reader: framing.FrameReader, hello: Any) -> None:
        sock = state.sock
        try:
            link = messages.bind(hello.codec, hello.profile)
            if messages.message_name(link.profile) != hello.message:
                raise handshake.HandshakeError(
                    f"profile {hello.profile!r} carries {messages.message_name(link.profile)}, "
                    f"not {hello.message}"
                )
        except EvbenchError as error:
            # a client that is gone gets no answer: the log line is what remains
            with contextlib.suppress(EvbenchError, OSError):
                handshake.answer(sock, error=str(error))
            raise
        state.last_message = time.monotonic()
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
        last_frame = time.monotonic()
        while True:
            try:
                frames = reader.receive()
            except BlockingIOError as error:
                raise framing.FrameError(f"idle for {idle:g} s") from error
            receive_ns = reader.received_ns
            if not frames:
                # bytes, but no whole frame: a client that dribbles a frame is idle too
                if time.monotonic() - last_frame > idle:
                    raise framing.FrameError(f"no whole frame for {idle:g} s")
                continue
            last_frame = time.monotonic()
            for frame in frames:
                if frame.kind == framing.MESSAGE:
                    state.last_message = last_frame  # only measuring traffic keeps a slot
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


def _name(peer: tuple[Any, ...]) -> str:
    return f"{peer[0]}:{peer[1]}"


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
    # each open connection takes a descriptor: its pending places and its slots
    connections = responder.max_pending + max_connections
    files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    own = sum(1 for _ in Path("/proc/self/fd").iterdir())  # the standard streams, the listener...
    if files != resource.RLIM_INFINITY and connections + own > files:
        _stderr(
            f"RLIMIT_NOFILE ({files} descriptors) is below the {connections} connections it "
            f"may hold open ({PENDING_PER_SLOT + 1} x --max-connections): past it new "
            "connections wait in the listen queue; raise it (ulimit -n) or lower "
            "--max-connections"
        )
    print(json.dumps({"event": "listening", "host": host, "port": bound_port}), flush=True)
    try:
        with stop_signal.until_sigterm():
            responder.serve_forever()
    finally:
        responder.close()
        _stderr("stopped")
