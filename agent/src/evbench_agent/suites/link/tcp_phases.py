"""The link's phases over TCP: to the responder at `--peer`, or to the loopback one the
run starts itself (`evbench-agent serve`, or the C responder with `--responder c`) on
its own CPU, and a run cut short when that responder dies."""

from __future__ import annotations

from typing import Any

from evbench_agent.link import client, messages
from evbench_agent.link.address import parse_peer
from evbench_agent.link.service import ResponderProcess, start_responder
from evbench_agent.processes import child_exit
from evbench_agent.suites.link.phases import Phases
from evbench_agent.suites.link.responder import native_responder
from evbench_core.errors import PartialRun, UserError


class TcpPhases(Phases):
    """Phases over TCP, against the responder at `--peer` or one of the run's own."""

    pairs = True  # a responder serves two connections at once: duets and capacity
    responder: ResponderProcess | None = None

    def peer(self) -> str:
        return self.settings.peer

    def prepare(self) -> None:
        self.address()

    def address(self) -> tuple[str, int]:
        if self.settings.peer != "loopback":
            return parse_peer(self.settings.peer)
        if self.responder is None:
            native = native_responder() if self.settings.responder == "c" else None
            self.responder = start_responder(
                realtime=self.settings.realtime,
                native=native,
                cpu=self.cpus.responder_cpu,
            )
        return self.responder.address

    def open_connection(self, link: messages.LinkCodec, reply_delay_ns: int) -> Any:
        return client.Connection(
            self.address(), link, self.settings.mode, reply_delay_ns=reply_delay_ns
        )

    def cut_short(self, error: UserError | PartialRun) -> UserError | PartialRun:
        """`error`, or a PartialRun naming the loopback responder first when it died
        (before the first phase too: then the run is partial with nothing measured)."""
        if self.responder is None or self.responder.alive():
            return error
        how = child_exit.describe(self.responder.process.returncode)
        return PartialRun(f"the link responder died ({how}): {error}")

    def close(self) -> None:
        if self.responder is not None:
            self.responder.stop()
