"""Every metric evbench records: its unit, which direction is better, its label.

Consumers of results (tables, reports, comparisons) read this instead of
guessing from names. Suites add their metrics here.
"""

from __future__ import annotations

from dataclasses import dataclass

from evbench_agent.verdicts import HIGHER_IS_BETTER, LOWER_IS_BETTER


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


def better(name: str) -> str:
    """The better direction of a metric; unknown metrics are lower-is-better."""
    metric = METRICS.get(name)
    return metric.better if metric else LOWER_IS_BETTER


__all__ = ["HIGHER_IS_BETTER", "LOWER_IS_BETTER", "METRICS", "Metric", "better"]
