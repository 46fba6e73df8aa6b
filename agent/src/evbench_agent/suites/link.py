"""The link suite: 50 ms periodic messages over TCP to a responder, per codec.

By default it measures the table's two codecs (json and protobuf, those of
them the run has); `link_all_codecs` measures every codec of the run. For
every profile the codecs' phases come in pairs, the order alternating (A B,
then B A). A periodic phase opens a connection, sends a warm-up that is not
recorded, then `count` messages at the rate, and records every message's RTT
(end to end and transport) and send lateness, and per phase the jitter,
bandwidth, CPU per message, lost and late counts (params `phase: periodic`);
over TCP the codecs' periodic phases of a pair run at once (a duet). A
capacity phase then keeps a window of messages in flight to find the real
capacity, and records its transport RTTs as their own records (`phase:
capacity`); the codecs' capacity phases of a pair take turns in short
interleaved blocks (saturation.run_interleaved). Pairs are the unit of
replication of the link's verdicts, so the plan sets their number by what a
verdict needs (docs/link.md). Before the
phases, the board's own wake-up latency at the link period is probed
(`wakeup_latency`, context). Samples are written as each phase ends, so a run
cut short keeps every phase measured before it.

With `--peer loopback` (the default) the suite starts its own responder, a
separate `evbench-agent serve` process on this machine, as the seed app did;
with `--responder c`, the C responder (evbench-link-responder) instead, found
where the native harnesses are (its records carry `responder: c`). By default
the sender's threads and the loopback responder each run pinned to a CPU of
their own (link.placement, `--link-cpus`; the records carry `cpus`).

With `--link-transport` (a UART or ISO-TP, docs/buses.md) the same periodic
phases run over that bus against `evbench-agent serve --transport` at its
other end, and each phase also records its `bus_load` (% of the bus's bit
rate that its messages offered: their wire time over one period per message;
it replaces `bandwidth_wire`, whose Ethernet assumptions do not apply; above
100 % a line says "offered N %: the line cannot carry this rate").
Before anything is written, `preflight` opens the bus once (a missing device
is one line, exit 2) and says which codecs' messages are longer on the wire
than the period. There is no capacity phase over a bus: its window of
messages in flight would queue them in the port's buffer, which the periodic
phases never do, and a bus's capacity is its bit rate, which the budget
(`evbench-agent budget`) computes exactly. Around each phase over a bus the
interface's counters are read (telemetry.bus_stats): their rises are context
records (`bus_errors`, `bus_counter`), and a phase with errors is said in a line.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evbench_agent import child_exit, payload_identity
from evbench_agent import codecs as codec_registry
from evbench_agent.errors import PartialRun, UserError

# The bus modules (link.bus_connection, buses.transport, telemetry.bus_stats) are imported
# where a --link-transport run uses them: a TCP run, the default, leaves them out of the
# agent's memory (about 1.5 MiB; issue 21 gives the agent 30 MiB).
from evbench_agent.link import (
    client,
    figures,
    handshake,
    messages,
    placement,
    saturation,
    timing,
    wakeup,
)
from evbench_agent.link.address import parse_peer
from evbench_agent.link.service import ResponderProcess, start_responder
from evbench_agent.results import SampleSet
from evbench_agent.suites import RunContext
from evbench_agent.telemetry import contention

SUITE = "link"
#: The seed app's message. Not the run's `profiles`: a link phase takes real
#: seconds, so every profile and codec of a run would take many minutes.
DEFAULT_PROFILES = ("seed",)
#: The table's two codecs: what the link suite measures unless told to take all.
DEFAULT_CODECS = ("json", "protobuf")
TRANSPORT = "tcp"


@dataclass(frozen=True)
class LinkPlan:
    """Seconds per periodic phase and its warm-up, periodic pairs (duets), capacity
    pairs, and each codec's capacity per pair: measured seconds, in how many blocks,
    each after what warm-up."""

    duration_s: float
    warmup_s: float
    phases: int
    capacity_pairs: int
    capacity_s: float
    capacity_blocks: int
    capacity_warmup_s: float


#: Verdicts rest on pairs: over TCP the periodic phases of the codecs run at once as a
#: duet (their messages interleaved at the rate, each codec on its own connection), and
#: in a capacity pair the codecs take turns saturating in short interleaved blocks
#: (A B B A ..., then B A A B ...). The link's ~10 tested rows form one Holm family, so
#: the exact signed-rank test needs n >= 9 pairs to reach 0.05 / 10 at all (2/512); more
#: pairs narrow the interval at that level (docs/link.md, "The plan").
#: Full: 30 duets of 1.2 s periodic phases (24 messages at 20 Hz each), 30 capacity
#: pairs of 4 blocks of 50 ms per codec; about 65 s with the probe.
FULL_PLAN = LinkPlan(
    duration_s=1.2,
    warmup_s=0.2,
    phases=30,
    capacity_pairs=30,
    capacity_s=0.2,
    capacity_blocks=4,
    capacity_warmup_s=0.01,
)
#: A fixed small plan, recorded as quick: true. 16 duets of 0.3 s phases (6 messages)
#: and 16 capacity pairs of 2 blocks of 25 ms per codec, in about 12 s.
QUICK_PLAN = LinkPlan(
    duration_s=0.3,
    warmup_s=0.05,
    phases=16,
    capacity_pairs=16,
    capacity_s=0.05,
    capacity_blocks=2,
    capacity_warmup_s=0.005,
)
#: The wake-up probe: samples at the link period (full, quick).
WAKEUP_SAMPLES = (100, 20)
#: Connecting, handshaking and draining a phase, as measured on a 2-core VM (s).
PHASE_OVERHEAD_S = 0.1
#: Starting the loopback responder (a Python process) (s).
RESPONDER_START_S = 0.5


@dataclass(frozen=True)
class Settings:
    peer: str
    mode: str
    #: The loopback responder: "python" or "c".
    responder: str
    rate_hz: float
    count: int
    warmup_count: int
    deadline_s: float
    phases: int
    window: int
    capacity_pairs: int
    capacity_s: float
    capacity_blocks: int
    capacity_warmup_s: float
    realtime: bool
    wakeup_samples: int
    #: A bus URL (--link-transport) instead of TCP; None: TCP to `peer`.
    transport: str | None
    #: Testing only: the A/A copy's replies are held this long by the responder (ns).
    aa_reply_delay_ns: int

    @classmethod
    def from_spec(cls, spec: Any) -> Settings:
        base = QUICK_PLAN if spec.quick else FULL_PLAN
        rate = spec.link_rate_hz
        duration = spec.link_duration_s or base.duration_s
        warmup = base.warmup_s if spec.link_warmup_s is None else spec.link_warmup_s
        return cls(
            peer=spec.link_peer,
            mode=spec.link_mode,
            responder=spec.link_responder,
            rate_hz=rate,
            count=spec.link_count or max(1, round(duration * rate)),
            warmup_count=round(warmup * rate),
            deadline_s=spec.link_deadline_s or 1 / rate,
            phases=spec.link_phases or base.phases,
            window=spec.link_window,
            capacity_pairs=spec.link_phases or base.capacity_pairs,
            capacity_s=spec.link_capacity_s or base.capacity_s,
            capacity_blocks=base.capacity_blocks,
            capacity_warmup_s=(
                base.capacity_warmup_s if spec.link_warmup_s is None else spec.link_warmup_s / 2
            ),
            realtime=spec.link_realtime,
            wakeup_samples=WAKEUP_SAMPLES[1] if spec.quick else WAKEUP_SAMPLES[0],
            transport=spec.link_transport,
            aa_reply_delay_ns=round(spec.aa_reply_delay_s * 1e9),
        )


def link_codecs(spec: Any) -> tuple[str, ...]:
    """The codecs the link suite measures: the table's two of the run's codecs
    (json, protobuf, and their A/A copies) unless `link_all_codecs`; the run's
    codecs where it has neither."""
    if spec.link_all_codecs:
        return tuple(spec.codecs)
    chosen = tuple(
        name for name in spec.codecs if codec_registry.original_name(name) in DEFAULT_CODECS
    )
    return chosen or tuple(spec.codecs)


def planned_seconds(spec: Any) -> float:
    """How long the suite's plan should take: phases, their overheads, the probe."""
    settings = Settings.from_spec(spec)
    profiles, codecs = len(spec.link_profiles or DEFAULT_PROFILES), len(link_codecs(spec))
    periodic = (settings.warmup_count + settings.count) / settings.rate_hz
    probe = settings.wakeup_samples / settings.rate_hz
    if settings.transport:  # no responder to start, no capacity phase
        return probe + profiles * codecs * settings.phases * (periodic + PHASE_OVERHEAD_S)
    start = RESPONDER_START_S if settings.peer == "loopback" else 0.0
    # the codecs' periodic phases of a pair at once (a duet), the second an offset later
    duets = profiles * settings.phases
    periodic_s = duets * (periodic + 1 / settings.rate_hz + PHASE_OVERHEAD_S)
    capacity = settings.capacity_blocks * settings.capacity_warmup_s + settings.capacity_s
    capacity_s = profiles * settings.capacity_pairs * codecs * (capacity + PHASE_OVERHEAD_S)
    return start + probe + periodic_s + capacity_s


def placement_of(spec: Any) -> placement.Placement:
    """Where this run's sender and loopback responder run, among this agent's CPUs."""
    return placement.choose(
        spec.link_cpus,
        os.sched_getaffinity(0),
        loopback=spec.link_peer == "loopback" and spec.link_transport is None,
        avoid=spec.telemetry_cpu,
    )


def preflight(spec: Any) -> list[str]:
    """Before the run writes anything: open the bus once (a missing device or interface
    is a UserError here) and say, one line each, what it cannot carry at the rate."""
    from evbench_agent.native.codec import CODECS as NATIVE_CODECS

    native = [c for c in link_codecs(spec) if codec_registry.original_name(c) in NATIVE_CODECS]
    if native:  # their decoding runs only in a harness: no link client or responder has it
        raise UserError(
            f"the link suite cannot carry native codecs ({', '.join(native)})",
            hint="run the link suite with Python codecs (leave out --link-all-codecs), "
            "and native codecs in the codec suite (docs/native-codecs.md)",
        )
    if spec.link_responder == "c":
        _check_native_responder(spec, native_responder())
    placement_of(spec)  # CPUs it cannot have are a UserError before anything is written
    if not spec.link_transport:
        return []
    from evbench_agent.buses import transport as bus_transport
    from evbench_agent.link import bus_responder
    from evbench_agent.telemetry import bus_stats

    transport = bus_transport.parse_transport(spec.link_transport)
    bus_responder.open_port(transport.port_url).close()
    notes = []
    if transport.bit_rate_source == "assumed":
        bus = transport.bus
        notes.append(
            f"link: bus load over {transport.url} is counted against an assumed "
            f"{bus.bit_rate} bit/s"
            + (f" / {bus.data_rate} bit/s" if bus.data_rate else "")
            + " (add bitrate= and dbitrate= to the URL: the interface's own rates)"
        )
    if transport.kind == "isotp":  # the rates the interface itself runs at, where it says
        said = bus_stats.counters_of(transport).snapshot()
        mismatch = bus_stats.rate_mismatch(transport.bus.bit_rate, transport.bus.data_rate, said)
        notes += [f"link: {mismatch}"] if mismatch else []
    settings = Settings.from_spec(spec)
    for profile in spec.link_profiles or DEFAULT_PROFILES:
        for codec in link_codecs(spec):
            link = messages.bind(codec, profile)
            items = link.sample_data(spec.payloads, spec.seed)
            largest = max((link.encode(item) for item in items), key=len)
            problem = bus_transport.sustainable(transport, largest, settings.rate_hz)
            if problem:
                notes.append(f"link: {profile} {codec}: {problem}")
    return notes


def native_responder() -> str:
    """The C responder's executable (`--responder c`); a UserError when none is installed."""
    from evbench_agent.native import runtimes

    found = runtimes.find_executable(runtimes.RESPONDER)
    if found is None:
        where = ", ".join(str(directory) for directory in runtimes.search_dirs())
        raise UserError(
            f"--responder c: no {runtimes.RESPONDER} in {where}",
            hint=f"build native/ (docs/link.md) and set {runtimes.ENVIRONMENT} to its build "
            "directory, or copy a build for the board with 'evbench deploy --native DIR'",
        )
    return found


def _check_native_responder(spec: Any, executable: str) -> None:
    """Refuse, before the run starts, an ack-mode run the C responder would refuse at its
    first HELLO: a codec or profile its build does not decode (its `--about` says which;
    one that cannot say leaves the refusal to the HELLO)."""
    if spec.link_mode != "ack":
        return
    from evbench_agent.native import runtimes

    about = runtimes.about(executable)
    if "ack_codecs" not in about or "ack_profiles" not in about:
        return
    hint = "use --mode echo, or the Python responder (leave out --responder c)"
    if not about["ack_codecs"]:
        raise UserError(f"--responder c: {executable} has no C runtime: echo mode only", hint=hint)
    profiles = spec.link_profiles or DEFAULT_PROFILES
    for what, asked, decoded in (
        ("codecs", link_codecs(spec), about["ack_codecs"].split(",")),
        ("profiles", profiles, about["ack_profiles"].split(",")),
    ):
        missing = [name for name in asked if name not in decoded]
        if missing:
            raise UserError(
                f"--responder c: {executable} decodes the {what} {', '.join(decoded)} "
                f"in ack mode, not {', '.join(missing)}",
                hint=hint,
            )


class _Phases:
    """Runs the phases of one run against one responder; writes their samples."""

    def __init__(
        self,
        context: RunContext,
        settings: Settings,
        scheduling: timing.Scheduling,
        cpus: placement.Placement = placement.UNPINNED,
    ):
        self.context, self.settings, self.cpus = context, settings, cpus
        self.responder: ResponderProcess | None = None
        self.phases_done = 0
        self.said_busy = False
        self.bus: Any = None
        self.counters: Any = None
        if settings.transport:
            from evbench_agent.buses import transport as bus_transport
            from evbench_agent.telemetry import bus_stats

            self.bus = bus_transport.parse_transport(settings.transport)
            self.counters = bus_stats.counters_of(self.bus)
        self.port: Any = None
        spec = context.spec
        common = {
            "peer": "bus" if self.bus else settings.peer,
            "mode": settings.mode,
            # only when not the default, so earlier runs' rows keep their identity
            **({"responder": settings.responder} if settings.responder != "python" else {}),
            "phases": settings.phases,
            "payloads": spec.payloads,
            "seed": spec.seed,
            "transport": TRANSPORT,
            **scheduling.as_params(),
            **cpus.as_params(),
            **(self.bus.params() if self.bus else {}),
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

    def payload_digest(self, profile: str) -> dict[str, str]:
        """The profile's payload-set digest param (computed once, before its first phase)."""
        spec = self.context.spec
        return payload_identity.params(profile, spec.payloads, spec.seed)

    def prepare(self) -> None:
        """Open the bus, or start the loopback responder, before any phase is timed."""
        if self.bus is not None:
            if self.port is None:
                from evbench_agent.link import bus_responder

                self.port = bus_responder.open_port(self.bus.port_url)
        else:
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

    def connect(self, link: messages.LinkCodec) -> Any:
        spec = self.context.spec
        delay = 0
        if spec.aa and link.codec == codec_registry.copy_name(spec.aa):
            delay = self.settings.aa_reply_delay_ns
        try:
            if self.bus is not None:
                from evbench_agent.link import bus_connection

                self.prepare()
                connection: Any = bus_connection.BusConnection(
                    self.port, self.bus.url, link, self.settings.mode
                )
            else:
                connection = client.Connection(
                    self.address(), link, self.settings.mode, reply_delay_ns=delay
                )
        except UserError as error:
            if self.phases_done:  # the peer went away between phases: the run is cut short
                raise PartialRun(
                    f"{error}; the run is saved as partial with the "
                    f"{self.phases_done} phases measured so far"
                ) from error
            raise
        self._record_responder(connection.accepted)
        return connection

    def _record_responder(self, accepted: dict[str, Any]) -> None:
        """The rows' `responder` is what answered, as its HELLO answer names itself (one
        started by hand at --peer too), not what the run would have started."""
        said = handshake.implementation(accepted)
        if said is None:
            return
        for params in (self.periodic_params, self.capacity_params):
            if said == "python":  # the default, left out as before
                params.pop("responder", None)
            else:
                params["responder"] = said

    def periodic(
        self, profile: str, codec: str, phase: int, link: messages.LinkCodec, data: list[Any]
    ) -> int:
        settings = self.settings
        before = self.counters.snapshot() if self.counters else None
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
            # No answer to HELLO: a controller gone bus-off may be why; say so first.
            self._write_bus_counters(profile, codec, phase, before, write=False)
            raise
        if result.sent:
            self._write_periodic(profile, codec, phase, result, connection)
            self._write_bus_counters(profile, codec, phase, before)
            self.phases_done += 1
        if result.error:
            raise PartialRun(
                f"{result.error}; the run is saved as partial with the "
                f"{len(result.replies)} messages of this phase answered so far"
            )
        return result.total_sent

    def duet(
        self,
        profile: str,
        phase: int,
        order: list[tuple[str, messages.LinkCodec]],
        data: dict[str, Any],
    ) -> int:
        """One periodic phase of every codec at once, each on its own connection, their
        messages interleaved at the rate (codec i starts i / n of a period after the
        first: duet benchmarking). What the machine does at a moment then hits every
        codec's messages alike, and the codecs' phases of one duet make a pair."""
        settings = self.settings
        spacing = 1 / settings.rate_hz / len(order)
        outcomes: dict[str, Any] = {}

        def measure(index: int, codec: str, link: messages.LinkCodec) -> None:
            try:
                time.sleep(index * spacing)
                with self.connect(link) as connection:
                    result = client.run_periodic(
                        connection,
                        data[codec],
                        settings.rate_hz,
                        settings.count,
                        settings.warmup_count,
                        settings.deadline_s,
                    )
                outcomes[codec] = (result, connection)
            except (UserError, PartialRun, OSError) as error:
                outcomes[codec] = error

        self.prepare()  # the responder is up before either thread connects
        threads = [
            threading.Thread(target=measure, args=(i, codec, link), name=f"duet-{codec}")
            for i, (codec, link) in enumerate(order)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        total, failure = 0, None
        for codec, _link in order:
            found = outcomes.get(codec)
            if isinstance(found, BaseException) or found is None:
                failure = failure or found or PartialRun(f"the {codec} duet thread ended early")
                continue
            result, connection = found
            if result.sent:
                self._write_periodic(profile, codec, phase, result, connection)
                self.phases_done += 1
            total += result.total_sent
            if result.error and failure is None:
                failure = PartialRun(
                    f"{result.error}; the run is saved as partial with the "
                    f"{len(result.replies)} messages of this phase answered so far"
                )
        if failure is not None:
            raise failure
        return total

    def _write_periodic(
        self, profile: str, codec: str, phase: int, result: client.PhaseResult, connection: Any
    ) -> None:
        measured = figures.PhaseFigures(result, self.settings.rate_hz, self.settings.deadline_s)
        params = dict(self.periodic_params, **self.payload_digest(profile))
        sample_sets = [
            SampleSet(SUITE, profile, codec, metric, "s", params, values, phase)
            for metric, values in measured.per_message().items()
            if values
        ]
        figures_of_phase = measured.per_phase()
        if self.bus is not None:
            # Ethernet's wire bytes mean nothing on a bus: its load against the bit rate does.
            figures_of_phase.pop("bandwidth_wire", None)
            load = self._bus_load(result, connection)
            if load is not None:
                figures_of_phase["bus_load"] = (load, "percent")
                if load > 100:
                    self.context.progress.message(
                        f"link: {profile} {codec} phase {phase + 1}: " + bus_overload_words(load)
                    )
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

    def _write_bus_counters(
        self, profile: str, codec: str, phase: int, before: Any, write: bool = True
    ) -> None:
        """The bus interface's counters over the phase (context); a line if it had errors
        (only the line for a phase that failed before it measured anything)."""
        after = self.counters.snapshot() if self.counters and before else None
        if self.counters is None or before is None or after is None:
            return
        from evbench_agent.telemetry import bus_stats

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

    def _bus_load(self, result: client.PhaseResult, connection: Any) -> float | None:
        """The load the phase offered the bus: the wire time of its measured messages
        (and of the replies that came) over the periods they were offered in, one
        period per message sent. Independent of the phase's length, and of whether the
        line kept up: a sender the line holds back stretches its send span, not the
        load it was asked to carry (above 100 % the line cannot carry the rate)."""
        assert self.bus is not None
        order = sorted(result.sent)
        if not order:
            return None
        seconds = len(order) / self.settings.rate_hz
        from evbench_agent.buses import transport as bus_transport

        return bus_transport.bus_load(
            self.bus, order, connection.message_bodies, connection.reply_bodies, seconds
        )

    def capacity(
        self,
        profile: str,
        phase: int,
        order: list[tuple[str, messages.LinkCodec]],
        data: dict[str, Any],
    ) -> int:
        """One capacity pair: the codecs' blocks interleaved on their own connections
        (saturation.run_interleaved), one codec saturating at a time."""
        settings = self.settings
        with contextlib.ExitStack() as stack:
            links = [
                (stack.enter_context(self.connect(link)), data[codec]) for codec, link in order
            ]
            results = saturation.run_interleaved(
                links,
                settings.window,
                settings.capacity_s,
                settings.capacity_warmup_s,
                settings.capacity_blocks,
                settings.deadline_s,
            )
        failed = next((r.error for r in results if r.error), None)
        if failed:
            raise PartialRun(f"{failed}; the saturation phase is not recorded")
        self.phases_done += len(order)
        for (codec, _link), result in zip(order, results, strict=True):
            self._write_capacity(profile, codec, phase, result)
        return sum(result.total_sent for result in results)

    def _write_capacity(
        self, profile: str, codec: str, phase: int, result: saturation.CapacityResult
    ) -> None:
        params = dict(
            self.capacity_params,
            **self.payload_digest(profile),
            elapsed_s=result.seconds,
            messages=result.messages,
        )
        sample_sets = []
        if result.seconds > 0:
            for metric, unit, value in (
                ("capacity_msgs", "messages/s", result.messages / result.seconds),
                ("capacity_bytes", "bytes/s", result.payload_bytes / result.seconds),
            ):
                sample_sets.append(
                    SampleSet(SUITE, profile, codec, metric, unit, params, [value], phase)
                )
        if result.rtt_transport:
            sample_sets.append(
                SampleSet(
                    SUITE, profile, codec, "rtt_transport", "s", params, result.rtt_transport, phase
                )
            )
        self.context.writer.add(sample_sets)

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
        busy = contention.reasons(found)
        if busy and not self.said_busy:  # once: the table marks every row it touched
            self.said_busy = True
            self.context.progress.message(
                f"link: the machine is busy ({', '.join(busy)} during {profile} {codec} "
                f"{kind} phase {phase + 1}): rows measured then are marked * in the table"
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
        if self.port is not None:
            self.port.close()


def bus_overload_words(load: float) -> str:
    """How a bus load above 100 % is said: what was offered, not what got through."""
    return f"offered {load:.0f} %: the line cannot carry this rate"


#: Params of the scheduling the sender ran under (copied onto the wake-up record).
_SCHEDULING_KEYS = ("realtime", "realtime_granted", "policy", "timer_slack_ns")


def _run_pair(
    context: RunContext,
    phases: _Phases,
    profile: str,
    phase: int,
    order: list[tuple[str, messages.LinkCodec]],
    data: dict[str, Any],
    kind: str,
) -> None:
    """One pair of every codec's phases run together: a periodic duet (every codec at
    once) or a capacity pair (the codecs' blocks interleaved). Telemetry's phase is
    every codec's (codec none; a lone codec's own); the machine's state around it is
    recorded for each."""
    where = {"suite": SUITE, "profile": profile, "codec": order[0][0] if len(order) == 1 else None}
    context.mark("start", **where, kind=kind, phase=phase)
    before = contention.take()
    if kind == "periodic":
        sent = phases.duet(profile, phase, order, data)
    else:
        sent = phases.capacity(profile, phase, order, data)
    after = contention.take()
    for codec, _link in order:
        phases.write_contention(profile, codec, phase, kind, before, after)
    context.mark("end", **where, kind=kind, messages=sent)
    how = "duet" if kind == "periodic" else "interleaved"
    for codec, _link in order:
        context.progress.advance(f"{profile} {codec} {kind} {phase + 1} ({how})")


def run(context: RunContext) -> None:
    spec, progress = context.spec, context.progress
    settings = Settings.from_spec(spec)
    profiles = spec.link_profiles or DEFAULT_PROFILES
    codecs = link_codecs(spec)
    previous = timing.current()
    scheduling = timing.enter_realtime() if settings.realtime else previous
    cpus = placement_of(spec)
    phases = _Phases(context, settings, scheduling, cpus)
    kinds = {"periodic": settings.phases}
    if phases.bus is None:
        kinds["capacity"] = settings.capacity_pairs
    progress.start(SUITE, len(profiles) * len(codecs) * sum(kinds.values()))
    try:
        # The responder first: started from a pinned thread it would inherit its CPU.
        phases.prepare()
        with placement.sender_on(cpus.client_cpu):
            _run_profiles(context, phases, profiles, codecs, kinds)
    except (PartialRun, UserError) as error:
        raise phases.cut_short(error) from error
    finally:
        phases.close()
        if settings.realtime:
            timing.leave_realtime(previous)
    progress.finish()


def _run_profiles(
    context: RunContext,
    phases: _Phases,
    profiles: Sequence[str],
    codecs: Sequence[str],
    kinds: dict[str, int],
) -> None:
    """The probe, then every profile's pairs of every kind, in order."""
    spec, progress = context.spec, context.progress
    phases.wakeup()
    for profile in profiles:
        bound = {codec: messages.bind(codec, profile) for codec in codecs}
        data = {codec: link.sample_data(spec.payloads, spec.seed) for codec, link in bound.items()}
        phases.payload_digest(profile)  # now, not between timed phases
        for kind, pairs in kinds.items():
            for phase in range(pairs):
                order = list(bound.items())
                if phase % 2:  # A B, then B A: no codec always goes first
                    order.reverse()
                if phases.bus is None and (kind == "capacity" or len(order) > 1):
                    _run_pair(context, phases, profile, phase, order, data, kind)
                    continue
                for codec, link in order:  # a bus (one port) or one codec: in turn
                    where = {"suite": SUITE, "profile": profile, "codec": codec}
                    context.mark("start", **where, kind=kind, phase=phase)
                    before = contention.take()
                    messages_done = phases.periodic(profile, codec, phase, link, data[codec])
                    phases.write_contention(profile, codec, phase, kind, before)
                    context.mark("end", **where, kind=kind, messages=messages_done)
                    progress.advance(f"{profile} {codec} {kind} {phase + 1}")
