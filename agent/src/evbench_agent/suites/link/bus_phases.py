"""The link's phases over a bus (`--link-transport`: a UART or ISO-TP, docs/buses.md):
one port, each codec's periodic phase in turn, each phase's bus load against the bit
rate instead of Ethernet's wire bytes, and the interface's counters around it.

Imported only by a --link-transport run: a TCP run, the default, leaves the bus
modules out of the agent's memory (about 1.5 MiB; issue 21 gives the agent 30 MiB)."""

from __future__ import annotations

from typing import Any

from evbench_agent.buses import transport as bus_transport
from evbench_agent.link import (
    bus_connection,
    bus_responder,
    client,
    figures,
    messages,
    placement,
    timing,
)
from evbench_agent.suites import RunContext
from evbench_agent.suites.link.phases import Phases
from evbench_agent.suites.link.plan import SUITE, Settings
from evbench_agent.telemetry import bus_stats


def bus_overload_words(load: float) -> str:
    """How a bus load above 100 % is said: what was offered, not what got through."""
    return f"offered {load:.0f} %: the line cannot carry this rate"


class BusPhases(Phases):
    """Phases over the bus of `settings.transport`, through one port opened once."""

    pairs = False  # one port: each codec's phases in turn, no capacity phase

    def __init__(
        self,
        context: RunContext,
        settings: Settings,
        scheduling: timing.Scheduling,
        cpus: placement.Placement = placement.UNPINNED,
    ):
        assert settings.transport is not None
        #: The bus (buses.transport), set before Phases reads its params.
        self.bus = bus_transport.parse_transport(settings.transport)
        self.counters: Any = bus_stats.counters_of(self.bus)
        self.port: Any = None
        super().__init__(context, settings, scheduling, cpus)

    def peer(self) -> str:
        return "bus"

    def transport_params(self) -> dict[str, Any]:
        return self.bus.params()

    def prepare(self) -> None:
        if self.port is None:
            self.port = bus_responder.open_port(self.bus.port_url)

    def open_connection(self, link: messages.LinkCodec, reply_delay_ns: int) -> Any:
        self.prepare()
        return bus_connection.BusConnection(self.port, self.bus.url, link, self.settings.mode)

    def close(self) -> None:
        if self.port is not None:
            self.port.close()

    def _before_phase(self) -> Any:
        """The bus interface's counters (None: none to read)."""
        return self.counters.snapshot() if self.counters else None

    def _after_phase(
        self, profile: str, codec: str, phase: int, before: Any, write: bool = True
    ) -> None:
        """The bus interface's counters over the phase (context); a line if it had errors
        (only the line for a phase that failed before it measured anything)."""
        after = self.counters.snapshot() if self.counters and before else None
        if self.counters is None or before is None or after is None:
            return
        change = bus_stats.compare(before, after)
        params = dict(self.periodic_params, **self.payload_digest(profile))
        if write:
            sets = bus_stats.phase_sample_sets(
                SUITE, profile, codec, params, phase, self.counters, change
            )
            self.context.writer.add(sets)
        if change.flagged:
            self.context.progress.message(
                f"link: bus errors on {change.interface} during {profile} {codec} phase "
                f"{phase + 1}: {', '.join(change.reasons())}"
            )

    def _per_phase(
        self,
        measured: figures.PhaseFigures,
        profile: str,
        codec: str,
        phase: int,
        result: client.PhaseResult,
        connection: Any,
    ) -> dict[str, tuple[float, str]]:
        figures_of_phase = measured.per_phase()
        # Ethernet's wire bytes mean nothing on a bus: its load against the bit rate does.
        figures_of_phase.pop("bandwidth_wire", None)
        load = self._bus_load(result, connection)
        if load is not None:
            figures_of_phase["bus_load"] = (load, "percent")
            if load > 100:
                self.context.progress.message(
                    f"link: {profile} {codec} phase {phase + 1}: " + bus_overload_words(load)
                )
        return figures_of_phase

    def _bus_load(self, result: client.PhaseResult, connection: Any) -> float | None:
        """The load the phase offered the bus: the wire time of its measured messages
        (and of the replies that came) over the periods they were offered in, one
        period per message sent. Independent of the phase's length, and of whether the
        line kept up: a sender the line holds back stretches its send span, not the
        load it was asked to carry (above 100 % the line cannot carry the rate)."""
        order = sorted(result.sent)
        if not order:
            return None
        seconds = len(order) / self.settings.rate_hz
        return bus_transport.bus_load(
            self.bus, order, connection.message_bodies, connection.reply_bodies, seconds
        )
