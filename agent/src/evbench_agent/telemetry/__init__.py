"""Telemetry: what the board did while it was measured.

A sampler process records CPU use, clock frequencies, temperatures, cooling
states, power and memory on the monotonic clock the suites mark their phases
on; the run's summary gets per-phase records (suite `telemetry`), throttling
as the kernel reports it, and energy where the board measures power.
"""

__all__ = ["bus_stats", "throttle", "timeline"]
