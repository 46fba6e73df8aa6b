"""`--peer host` and `--peer board` for runs on a remote board: the link across the real network.

`host`: a responder runs on this machine, bound to the host's address on the
connection to the board (never to every interface), and the agent on the
board measures against it. `board`: a responder runs on the board, bound to
the board's address on that connection, and the agent on this machine
measures against it. Either way RTT includes the wire, not only loopback.

Over a bus (`--link-transport`), `--peer host` needs `--host-transport URL`,
this machine's end of that bus: `evbench serve --transport URL` runs here for
the run's length (`host_bus_responder`), and the board's agent is given only
the bus, whose other end answers (the agent takes no --peer with a bus).
"""

from __future__ import annotations

import contextlib
import json
import logging
import selectors
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from typing import IO, Any

from evbench.boards.base import Board, child_environment
from evbench.progress import notice
from evbench_core.errors import EvbenchError, UserError

log = logging.getLogger(__name__)

RESPONDER_START_TIMEOUT = 30.0
#: How long a stopped bus responder may take to close its port (python-can's threads).
RESPONDER_STOP_TIMEOUT = 10.0
HOST_TRANSPORT_EXAMPLE = "pycan://socketcan/can0?tx=0x7E8&rx=0x7E0"


def _url_host(address: str) -> str:
    return f"[{address}]" if ":" in address else address


@contextlib.contextmanager
def host_responder(board: Board, realtime: bool = False) -> Iterator[str]:
    """A responder on this machine for the board's agent; yields the agent's --peer value."""
    from evbench_agent.link.service import start_responder

    host_address, _ = board.network_addresses()
    with start_responder(bind=host_address, port=0, realtime=realtime) as responder:
        host, port = responder.address
        notice(f"link responder on this host at {host}:{port}")
        yield f"{_url_host(host)}:{port}"


@contextlib.contextmanager
def board_responder(board: Board, agent: Sequence[str]) -> Iterator[str]:
    """A responder on the board for this machine's agent; yields the local --peer value."""
    _, board_address = board.network_addresses()
    # The shell prints the responder's pid first, so it can be stopped by pid later.
    serve = [*agent, "serve", "--bind", board_address, "--port", "0"]
    command = board.stream(["sh", "-c", 'echo "$$"; exec "$@"', "sh", *serve])
    lines = command.lines()
    try:
        pid = int(next(lines))
        event = json.loads(next(lines))
    except (StopIteration, ValueError):
        command.wait(RESPONDER_START_TIMEOUT)
        raise EvbenchError(
            f"the link responder did not start on {board.url}: {command.stderr().strip()}"
        ) from None
    if event.get("event") != "listening":
        raise EvbenchError(f"the link responder on {board.url} said {event!r}")
    notice(f"link responder on the board at {event['host']}:{event['port']}")
    try:
        yield f"{_url_host(event['host'])}:{event['port']}"
    finally:
        board.run(["kill", "-TERM", str(pid)], RESPONDER_START_TIMEOUT)
        command.wait(RESPONDER_START_TIMEOUT)


def check_peer(board: Board, peer: str | None) -> None:
    """`host` and `board` need a board reached over the network."""
    if peer in ("host", "board") and board.is_local:
        raise UserError(
            f"--peer {peer} needs a board over the network (ssh://...)",
            hint="on the local board use --peer loopback or --peer HOST:PORT",
        )


def host_transport(args: Any) -> str | None:
    """The checked `--host-transport` URL, or None without one: before any board is opened.

    It is the responder's end of the run's `--link-transport` bus, so it needs
    `--peer host` and that bus, and the two ends must be on one kind of bus
    (and on CAN each send on the id the other listens on)."""
    url = getattr(args, "host_transport", None)
    peer, bus = getattr(args, "peer", None), getattr(args, "link_transport", None)
    if url is None:
        if peer == "host" and bus is not None:
            raise UserError(
                "--peer host over a --link-transport bus needs --host-transport: "
                "this machine's end of the bus, where the responder runs",
                hint=f"add --host-transport '{HOST_TRANSPORT_EXAMPLE}' (the board's ids swapped)",
            )
        return None
    if peer != "host" or bus is None:
        raise UserError(
            "--host-transport is the responder's end of a --link-transport bus: "
            "it needs --peer host and --link-transport",
            hint="add them, or leave --host-transport out",
        )
    host_kind, host_ids = _bus_end(url, "--host-transport")
    board_kind, board_ids = _bus_end(bus, "--link-transport")
    if host_kind != board_kind:
        raise UserError(
            f"--host-transport {url} is on {host_kind}, --link-transport {bus} on {board_kind}",
            hint="the two ends of the link must be on one bus",
        )
    if host_ids and board_ids and host_ids != board_ids[::-1]:
        raise UserError(
            f"--host-transport sends on id {host_ids[0]:#x} and listens on {host_ids[1]:#x}, "
            f"but the board sends on {board_ids[0]:#x} and listens on {board_ids[1]:#x}",
            hint=f"give the host tx={board_ids[1]:#x}&rx={board_ids[0]:#x}",
        )
    return url


def _bus_end(url: str, flag: str) -> tuple[str, tuple[int, int] | None]:
    """The kind of bus a transport URL is on, and its (tx, rx) ids on CAN."""
    from evbench.usecases import can_peer
    from evbench_agent.buses import transport as bus_transport

    if url.startswith(f"{can_peer.SCHEME}://"):
        address = can_peer.parse(url).isotp
        return "CAN", (address.tx_id, address.rx_id)
    if url.split(":", 1)[0] not in ("uart", "isotp"):
        raise UserError(
            f"unknown {flag} {url!r}",
            hint=f"{HOST_TRANSPORT_EXAMPLE}, isotp://can0?tx=0x7E8&rx=0x7E0 "
            "or uart:///dev/ttyUSB0?baud=115200",
        )
    transport = bus_transport.parse_transport(url)
    if transport.kind == "uart":
        return "a UART", None
    return "CAN", (transport.tx_id, transport.rx_id)


@contextlib.contextmanager
def host_bus_responder(url: str) -> Iterator[int]:
    """`evbench serve --transport url` on this machine while the block runs; yields its pid.

    Returns once the port is open; a port that cannot open is the command's own
    error, raised here. The child's log lines (standard error) are kept in a
    file and shown when it stops, so that its failure to start is one error."""
    argv = [sys.executable, "-m", "evbench", "serve", "--transport", url, *_verbosity()]
    with tempfile.TemporaryFile(prefix="evbench-serve-") as log:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            env=child_environment(),  # serve needs no board password
        )
        opened = False
        # One try from the start: an interrupt may land anywhere, also while the notice
        # is being written (a test or a user reacts to it at once), and must stop the child.
        try:
            _await_open(process, url, log)
            opened = True
            notice(f"link responder on this host over {url} (pid {process.pid})")
            yield process.pid
        finally:
            _stop(process)
            said = _read(log).strip() if opened else ""
            if said:  # what it logged while serving (refused HELLOs, dropped transfers)
                print(said, file=sys.stderr)


def _verbosity() -> list[str]:
    """This program's -v / --quiet, for the child's log lines."""
    level = log.getEffectiveLevel()  # evbench's own level (log_output.setup_logging)
    if level > logging.WARNING:
        return ["--quiet"]
    return ["-v"] * ((level <= logging.INFO) + (level <= logging.DEBUG))


def _await_open(process: subprocess.Popen, url: str, log: IO[bytes]) -> None:
    """Wait for serve's one JSON line (its port is open) within the timeout; its error if not."""
    assert process.stdout is not None
    deadline = time.monotonic() + RESPONDER_START_TIMEOUT
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while (remaining := deadline - time.monotonic()) > 0:
            if not selector.select(remaining):
                continue
            line = process.stdout.readline()
            if not line:  # it exited (or is ending): its own error is in the log
                _stop(process)
                raise _start_error(process.returncode, url, _read(log))
            with contextlib.suppress(ValueError, AttributeError):
                if json.loads(line).get("transport") == url:
                    return
    raise EvbenchError(
        f"the link responder on {url} did not open its port within {RESPONDER_START_TIMEOUT:g} s",
        hint="is the adapter's driver hanging? try `evbench serve --transport URL` by itself",
    )


def _start_error(status: int, url: str, log: str) -> EvbenchError:
    """`evbench serve`'s own error and hint, relayed as one error; its last lines otherwise."""
    said: dict[str, str | None] = {"error": None, "hint": None}
    for line in log.splitlines():
        for kind in said:
            if line.startswith(f"evbench: {kind}: "):
                said[kind] = line.split(": ", 2)[2]
    if said["error"] is None:
        tail = " / ".join(log.strip().splitlines()[-2:]) or "no output"
        return EvbenchError(f"the link responder on {url} failed (exit {status}): {tail}")
    error_type = UserError if status == UserError.exit_code else EvbenchError
    return error_type(f"the link responder on this host: {said['error']}", hint=said["hint"])


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM (serve closes its port and exits 0), then SIGKILL past the timeout."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(RESPONDER_STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(RESPONDER_STOP_TIMEOUT)
    if process.stdout is not None:
        process.stdout.close()


def _read(log: IO[bytes]) -> str:
    log.seek(0)
    return log.read().decode(errors="replace")
