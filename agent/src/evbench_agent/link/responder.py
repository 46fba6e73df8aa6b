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

from evbench_agent import __version__
from evbench_agent.errors import EvbenchError, UserError
from evbench_agent.link import framing, handshake, messages, timing

LOOPBACK = "127.0.0.1"
DEFAULT_PORT = 50505
DEFAULT_MAX_CONNECTIONS = 16
HANDSHAKE_TIMEOUT_S = 10.0
#: A client that sends nothing for this long is gone; its thread is freed.
IDLE_TIMEOUT_S = 600.0
#: A client that stops reading replies for this long is dropped.
SEND_TIMEOUT_S = 10.0

Log = Callable[[str], None]


def _stderr(line: str) -> None:
    print(f"evbench-agent serve: {line}", file=sys.stderr, flush=True)


class _Stop(Exception):
    """Raised in the accepting thread by SIGTERM."""


class Responder:
    """A listening socket and its connection threads."""

    def __init__(
        self,
        bind: str = LOOPBACK,
        port: int = DEFAULT_PORT,
        max_frame: int = framing.DEFAULT_MAX_FRAME,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        log: Log = _stderr,
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
        self._lock = threading.Lock()
        self._connections: dict[socket.socket, threading.Thread] = {}
        self._closed = False

    def serve_forever(self) -> None:
        """Accept until close() (or SIGTERM in the main thread)."""
        while not self._closed:
            try:
                sock, peer = self.listener.accept()
            except OSError:
                if self._closed:
                    return
                raise
            with self._lock:
                busy = len(self._connections)
                if busy >= 2 * self.max_connections:
                    sock.close()  # a flood: refuse without spending a thread
                    continue
                thread = threading.Thread(
                    target=self._connection, args=(sock, peer, busy), daemon=True
                )
                self._connections[sock] = thread
            thread.start()

    def close(self) -> None:
        """Stop accepting, shut every connection down, wait for the threads."""
        self._closed = True
        self.listener.close()
        with self._lock:
            connections = dict(self._connections)
        for sock in connections:
            with contextlib.suppress(OSError):  # already closed by its thread
                sock.shutdown(socket.SHUT_RDWR)
        for thread in connections.values():
            thread.join(timeout=5.0)

    def _connection(self, sock: socket.socket, peer: tuple, busy: int) -> None:
        name = f"{peer[0]}:{peer[1]}"
        reader = framing.FrameReader(sock, self.max_frame)
        try:
            framing.configure(sock, SEND_TIMEOUT_S)
            self._converse(sock, reader, busy)
        except framing.PeerClosed:
            pass  # the client finished
        except (EvbenchError, OSError) as error:
            self.log(f"{name}: connection dropped: {error}")
        finally:
            sock.close()
            with self._lock:
                self._connections.pop(sock, None)

    def _converse(self, sock: socket.socket, reader: framing.FrameReader, busy: int) -> None:
        try:
            hello = handshake.receive(reader, HANDSHAKE_TIMEOUT_S)
            if busy >= self.max_connections:
                raise UserError(f"the connection limit ({self.max_connections}) is reached")
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
        handshake.answer(sock, max_frame=self.max_frame, responder=f"evbench-agent {__version__}")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, framing.timeval(IDLE_TIMEOUT_S))
        self._answer_messages(sock, reader, hello.mode == "echo", link)

    def _answer_messages(
        self, sock: socket.socket, reader: framing.FrameReader, echo: bool, link: Any
    ) -> None:
        cpu_start, answered = timing.thread_cpu_ns(), 0
        decode, encode_ack, pack, send = link.decode, link.encode_ack, framing.pack, framing.send
        while True:
            try:
                frames = reader.receive()
            except BlockingIOError as error:
                raise framing.FrameError(f"idle for {IDLE_TIMEOUT_S:g} s") from error
            receive_ns = time.monotonic_ns()
            for frame in frames:
                if frame.kind == framing.MESSAGE:
                    if echo:
                        send(sock, pack(framing.REPLY, frame.sequence, frame.body))
                    else:
                        _decode(decode, frame, link)
                        ack = encode_ack(frame.sequence, receive_ns)
                        send(sock, pack(framing.REPLY, frame.sequence, ack))
                    answered += 1
                elif frame.kind == framing.STATS:
                    counts = {"messages": answered, "cpu_ns": timing.thread_cpu_ns() - cpu_start}
                    send(
                        sock, pack(framing.STATS_REPLY, frame.sequence, json.dumps(counts).encode())
                    )
                else:
                    raise framing.FrameError(f"unexpected frame kind {frame.kind} from a client")


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
    """`evbench-agent serve`: listen, say where (on stdout as JSON too), until SIGTERM."""
    scheduling = timing.enter_realtime() if realtime else timing.current()
    responder = Responder(bind, port, max_frame, max_connections)
    host, bound_port = responder.address
    scope = (
        "loopback only; --bind ADDRESS to accept other machines"
        if host.startswith("127.") or host == "::1"
        else "reachable from other machines on this address"
    )
    _stderr(
        f"listening on {host}:{bound_port} ({scope}); max frame {max_frame} B, "
        f"{max_connections} connections, {scheduling.policy}"
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
