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

The suite's modules, each depending only on those above it: `plan` (the plan, the
settings and the codecs), `responder` (the C responder, the rows' `responder`),
`checks` (preflight), `phases` (what every phase shares, and a lone codec's periodic phase),
`tcp_phases` (TCP and the loopback responder) and `bus_phases` (a bus), `duet` and
`capacity` (the pairs over TCP), `sequence` (the run). The registry finds `SUITE`,
`run`, `planned_seconds` and `preflight` here.
"""

from __future__ import annotations

from evbench_agent.suites.link.checks import preflight
from evbench_agent.suites.link.plan import SUITE, planned_seconds
from evbench_agent.suites.link.sequence import run

__all__ = ["SUITE", "planned_seconds", "preflight", "run"]
