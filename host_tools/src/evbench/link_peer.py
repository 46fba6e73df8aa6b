"""`--peer host` and `--peer board` for runs on a remote board: the link across the real network.

`host`: a responder runs on this machine, bound to the host's address on the
connection to the board (never to every interface), and the agent on the
board measures against it. `board`: a responder runs on the board, bound to
the board's address on that connection, and the agent on this machine
measures against it. Either way RTT includes the wire, not only loopback.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence

from evbench.boards.base import Board
from evbench.progress import notice
from evbench_agent.errors import EvbenchError, UserError

RESPONDER_START_TIMEOUT = 30.0


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
