"""Every metric evbench records: its unit, which direction is better, its label.

Consumers of results (tables, reports, comparisons) read this instead of
guessing from names. Suites add their metrics here.
"""

from __future__ import annotations

from dataclasses import dataclass

from evbench_core.analysis.verdicts import HIGHER_IS_BETTER, LOWER_IS_BETTER


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    better: str
    label: str


METRICS: dict[str, Metric] = {
    metric.name: metric
    for metric in (
        Metric("size", "bytes", LOWER_IS_BETTER, "Size"),
        Metric("size_deflate", "bytes", LOWER_IS_BETTER, "Size, deflated"),
        Metric("encode", "s", LOWER_IS_BETTER, "Serialization"),
        Metric("decode", "s", LOWER_IS_BETTER, "Deserialization"),
        Metric("decode_access", "s", LOWER_IS_BETTER, "Deserialization + access"),
        # link (suite "link"): per message, or one value per phase
        Metric("rtt", "s", LOWER_IS_BETTER, "RTT, encode to decoded reply"),
        Metric("rtt_transport", "s", LOWER_IS_BETTER, "RTT, transport"),
        Metric("jitter_stdev", "s", LOWER_IS_BETTER, "Jitter, stdev of RTT"),
        Metric("jitter_rfc3550", "s", LOWER_IS_BETTER, "Jitter, RFC 3550"),
        Metric("rtt_delta_abs", "s", LOWER_IS_BETTER, "|ΔRTT|, consecutive"),
        Metric("send_lateness", "s", LOWER_IS_BETTER, "Send lateness"),
        Metric("bandwidth_payload", "bytes/s", LOWER_IS_BETTER, "Bandwidth, payload"),
        Metric("bandwidth_wire", "bytes/s", LOWER_IS_BETTER, "Bandwidth, on the wire"),
        Metric("bus_load", "percent", LOWER_IS_BETTER, "Bus load (of the bit rate)"),
        Metric("capacity_msgs", "messages/s", HIGHER_IS_BETTER, "Capacity, messages"),
        Metric("capacity_bytes", "bytes/s", HIGHER_IS_BETTER, "Capacity, payload bytes"),
        Metric("cpu_per_msg_client", "s", LOWER_IS_BETTER, "CPU per message, client"),
        Metric("cpu_per_msg_responder", "s", LOWER_IS_BETTER, "CPU per message, responder"),
        Metric("lost", "messages", LOWER_IS_BETTER, "Lost messages"),
        Metric("late", "messages", LOWER_IS_BETTER, "Late replies"),
        Metric("wakeup_latency", "s", LOWER_IS_BETTER, "Wake-up latency, plain sleeper (board)"),
        # the bus interface's counters over a phase (telemetry.bus_stats; context)
        Metric("bus_errors", "count", LOWER_IS_BETTER, "Bus error events"),
        Metric("bus_counter", "count", LOWER_IS_BETTER, "Bus interface counter"),
        # the machine around each replicate (telemetry.contention; context)
        Metric("contention_others_cpu", "percent", LOWER_IS_BETTER, "Other processes' CPU"),
        Metric("contention_steal", "percent", LOWER_IS_BETTER, "CPU steal"),
        Metric("contention_freq_change", "percent", LOWER_IS_BETTER, "Clock change"),
        # telemetry (suite "telemetry", per phase; values are one per telemetry sample)
        Metric("cpu_util", "percent", LOWER_IS_BETTER, "CPU utilisation, all cores"),
        Metric("agent_cpu", "percent", LOWER_IS_BETTER, "Agent CPU, % of one core"),
        Metric("temp_max", "°C", LOWER_IS_BETTER, "Hottest thermal zone"),
        Metric("freq_min", "Hz", HIGHER_IS_BETTER, "Slowest core clock"),
        Metric("power_mean", "W", LOWER_IS_BETTER, "Power, monitored rails"),
        Metric("rss_max", "bytes", LOWER_IS_BETTER, "Agent memory (RSS)"),
        Metric("energy_per_op", "J", LOWER_IS_BETTER, "Energy per operation, above idle"),
        Metric("energy_per_msg", "J", LOWER_IS_BETTER, "Energy per message, above idle"),
    )
}


#: The codec suite's timed operations, in the order it runs them: a metric each, in seconds.
CODEC_TIMED = ("encode", "decode", "decode_access")
#: The codec suite's sizes: the encoding, and the encoding deflated.
CODEC_SIZES = ("size", "size_deflate")


def better(name: str) -> str:
    """The better direction of a metric; unknown metrics are lower-is-better."""
    metric = METRICS.get(name)
    return metric.better if metric else LOWER_IS_BETTER


__all__ = [
    "CODEC_SIZES",
    "CODEC_TIMED",
    "HIGHER_IS_BETTER",
    "LOWER_IS_BETTER",
    "METRICS",
    "Metric",
    "better",
]
