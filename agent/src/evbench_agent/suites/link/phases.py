"""The phases of one link run against one responder, whatever carries them: the rows'
params, a connection that names its responder, a periodic phase of one codec and its
records, the wake-up probe and the machine's state around each phase. The transports
are subclasses that know nothing of each other: TcpPhases (tcp_phases.py) and BusPhases
(bus_phases.py) reach the responder and add their own params, figures and checks around
a phase through the hooks below; duet and capacity run the pairs over TCP."""

from __future__ import annotations

import abc
from typing import Any

from evbench_agent import codecs as codec_registry
from evbench_agent.link import client, figures, messages, placement, timing, wakeup
from evbench_agent.payloads import identity as payload_identity
from evbench_agent.suites import RunContext
from evbench_agent.suites.link.plan import SUITE, TRANSPORT, Settings
from evbench_agent.suites.link.responder import name_the_responder
from evbench_agent.telemetry import contention
from evbench_core.analysis.contention import reasons as busy_reasons
from evbench_core.errors import PartialRun, UserError
from evbench_core.results import SampleSet

#: Params of the scheduling the sender ran under (copied onto the wake-up record).
_SCHEDULING_KEYS = ("realtime", "realtime_granted", "policy", "timer_slack_ns")


class Phases(abc.ABC):
    """Runs the phases of one run against one responder; writes their samples."""

    #: Whether the run's codecs go in pairs (both at once, duet.py) and have capacity
    #: phases (capacity.py): a responder that serves two connections at once; else each
    #: codec has its periodic phases in turn (one port).
    pairs: bool

    def __init__(
        self,
        context: RunContext,
        settings: Settings,
        scheduling: timing.Scheduling,
        cpus: placement.Placement = placement.UNPINNED,
    ):
        self.context, self.settings, self.cpus = context, settings, cpus
        self.phases_done = 0
        self.said_busy = False
        spec = context.spec
        common = {
            "peer": self.peer(),
            "mode": settings.mode,
            # only when not the default, so earlier runs' rows keep their identity
            **({"responder": settings.responder} if settings.responder != "python" else {}),
            "phases": settings.phases,
            "payloads": spec.payloads,
            "seed": spec.seed,
            "transport": TRANSPORT,
            **scheduling.as_params(),
            **cpus.as_params(),
            **self.transport_params(),
        }
        self.periodic_params = {
            **common,
            "phase": "periodic",
            "rate_hz": settings.rate_hz,
            "count": settings.count,
            "warmup_count": settings.warmup_count,
            "deadline_s": settings.deadline_s,
        }
        self.capacity_params = {
            **common,
            "phases": settings.capacity_pairs,
            "phase": "capacity",
            "window": settings.window,
            "duration_s": settings.capacity_s,
            "blocks": settings.capacity_blocks,
            "warmup_s": settings.capacity_warmup_s,
        }

    @abc.abstractmethod
    def peer(self) -> str:
        """The rows' `peer` param: whom the run measured against."""

    def transport_params(self) -> dict[str, Any]:
        """The transport's own params on every row (the last of them); none over TCP."""
        return {}

    @abc.abstractmethod
    def prepare(self) -> None:
        """Open the bus, or start the loopback responder, before any phase is timed."""

    @abc.abstractmethod
    def open_connection(self, link: messages.LinkCodec, reply_delay_ns: int) -> Any:
        """A connection to the responder for `link` (a UserError when none answers)."""

    @abc.abstractmethod
    def close(self) -> None:
        """Stop what `prepare` started."""

    def cut_short(self, error: UserError | PartialRun) -> UserError | PartialRun:
        """The error a run cut short by `error` ends with."""
        return error

    def payload_digest(self, profile: str) -> dict[str, str]:
        """The profile's payload-set digest param (computed once, before its first phase)."""
        spec = self.context.spec
        return payload_identity.params(profile, spec.payloads, spec.seed)

    def connect(self, link: messages.LinkCodec) -> Any:
        spec = self.context.spec
        delay = 0
        if spec.aa and link.codec == codec_registry.copy_name(spec.aa):
            delay = self.settings.aa_reply_delay_ns
        try:
            connection = self.open_connection(link, delay)
        except UserError as error:
            if self.phases_done:  # the peer went away between phases: the run is cut short
                raise PartialRun(
                    f"{error}; the run is saved as partial with the "
                    f"{self.phases_done} phases measured so far"
                ) from error
            raise
        name_the_responder(connection.accepted, self.periodic_params, self.capacity_params)
        return connection

    def periodic(
        self, profile: str, codec: str, phase: int, link: messages.LinkCodec, data: list[Any]
    ) -> int:
        """One periodic phase of one codec on its own (a bus's, or a lone codec's)."""
        settings = self.settings
        before = self._before_phase()
        try:
            with self.connect(link) as connection:
                result = client.run_periodic(
                    connection,
                    data,
                    settings.rate_hz,
                    settings.count,
                    settings.warmup_count,
                    settings.deadline_s,
                )
        except (UserError, PartialRun):
            # No answer to HELLO: what the transport saw (a controller gone bus-off, say)
            # may be why; it says so first.
            self._after_phase(profile, codec, phase, before, write=False)
            raise
        if result.sent:
            self.write_periodic(profile, codec, phase, result, connection)
            self._after_phase(profile, codec, phase, before)
            self.phases_done += 1
        if result.error:
            raise PartialRun(
                f"{result.error}; the run is saved as partial with the "
                f"{len(result.replies)} messages of this phase answered so far"
            )
        return result.total_sent

    def _before_phase(self) -> Any:
        """What the transport reads before a periodic phase (handed to _after_phase)."""
        return None

    def _after_phase(
        self, profile: str, codec: str, phase: int, before: Any, write: bool = True
    ) -> None:
        """The transport's records of the phase against `before` (with `write`, else only
        what it says of a phase that failed before it measured anything)."""
        return

    def write_periodic(
        self, profile: str, codec: str, phase: int, result: client.PhaseResult, connection: Any
    ) -> None:
        measured = figures.PhaseFigures(result, self.settings.rate_hz, self.settings.deadline_s)
        params = dict(self.periodic_params, **self.payload_digest(profile))
        sample_sets = [
            SampleSet(SUITE, profile, codec, metric, "s", params, values, phase)
            for metric, values in measured.per_message().items()
            if values
        ]
        figures_of_phase = self._per_phase(measured, profile, codec, phase, result, connection)
        for metric, (value, unit) in figures_of_phase.items():
            metric_params = (
                dict(params, wire=figures.WIRE_ASSUMPTIONS)
                if metric == "bandwidth_wire"
                else params
            )
            sample_sets.append(
                SampleSet(SUITE, profile, codec, metric, unit, metric_params, [value], phase)
            )
        self.context.writer.add(sample_sets)

    def _per_phase(
        self,
        measured: figures.PhaseFigures,
        profile: str,
        codec: str,
        phase: int,
        result: client.PhaseResult,
        connection: Any,
    ) -> dict[str, tuple[float, str]]:
        """The phase's own figures (metric -> (value, unit)); a transport may change them."""
        return measured.per_phase()

    def wakeup(self) -> None:
        """The board's own wake-up latency at the link period: a context record."""
        settings = self.settings
        values = wakeup.probe(1 / settings.rate_hz, settings.wakeup_samples)
        params = {
            "phase": "wakeup",
            "period_s": 1 / settings.rate_hz,
            "count": settings.wakeup_samples,
            "method": wakeup.METHOD,
            **{k: v for k, v in self.periodic_params.items() if k in _SCHEDULING_KEYS},
        }
        self.context.writer.add(
            [SampleSet(SUITE, None, None, "wakeup_latency", "s", params, values)]
        )

    def write_contention(
        self,
        profile: str,
        codec: str,
        phase: int,
        kind: str,
        before: contention.Snapshot,
        after: contention.Snapshot | None = None,
    ) -> None:
        """The machine around the phase (context, per codec and phase kind), and a line
        when it was busy beyond the bound."""
        found = contention.figures(before, after or contention.take())
        params = {"phase": kind, **self.payload_digest(profile)}
        self.context.writer.add(
            SampleSet(SUITE, profile, codec, metric, "percent", params, [value], phase)
            for metric, value in found.items()
        )
        busy = busy_reasons(found)
        if busy and not self.said_busy:  # once: the table marks every row it touched
            self.said_busy = True
            self.context.progress.message(
                f"link: the machine is busy ({', '.join(busy)} during {profile} {codec} "
                f"{kind} phase {phase + 1}): rows measured then are marked * in the table"
            )
