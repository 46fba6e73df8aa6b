"""Telemetry around a run: what the runner starts before the suites and stops after.

start(): discover the sensors, set the governor if asked, start the sampler
process, and, where the board measures power, sample an idle phase before
any suite (its mean power is the baseline energy figures subtract).
mark(): the suites' markers, behind the cool-down guard when one is asked for.
stop(): stop the sampler (on success, failure and Ctrl-C alike), put the
governor back, and turn the telemetry into per-phase records.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from evbench_agent.progress import Progress
from evbench_agent.telemetry import phase_records, sysfs
from evbench_agent.telemetry.cooldown import CoolDownGuard
from evbench_agent.telemetry.governor import GovernorSetting
from evbench_agent.telemetry.reader import SensorReader
from evbench_agent.telemetry.sampler import SamplerProcess
from evbench_agent.telemetry.timeline import MARKERS, Timeline, read_markers
from evbench_core.errors import UserError
from evbench_core.results import SampleSet, read_samples

TELEMETRY = "telemetry.jsonl"
#: Where sysfs is read from: tests point this at a tree laid out like a board's.
SYSFS_ENV = "EVBENCH_TELEMETRY_SYSFS"
#: The idle baseline spans at least this long and at least three samples.
IDLE_BASELINE_S = 3.0


def sysfs_root() -> Path:
    return Path(os.environ.get(SYSFS_ENV) or sysfs.SYSFS)


class TelemetrySession:
    def __init__(self, spec: Any, directory: Path, progress: Progress) -> None:
        self.spec = spec
        self.directory = Path(directory)
        self.progress = progress
        self.sensors = sysfs.discover(sysfs_root())
        self.governor = GovernorSetting(self.sensors, spec.governor) if spec.governor else None
        self.guard = self._guard() if spec.cool_to is not None else None
        self.timeline: Timeline | None = None
        self.sampler: SamplerProcess | None = None
        if self.governor:
            self.governor.check()
        allowed = sorted(os.sched_getaffinity(0))
        if spec.telemetry_cpu is not None and spec.telemetry_cpu not in allowed:
            raise UserError(
                f"telemetry CPU {spec.telemetry_cpu} is not one this agent may run on",
                hint=f"choose one of {', '.join(map(str, allowed))}",
            )

    def _guard(self) -> CoolDownGuard:
        if not self.sensors.zones:
            raise UserError(
                "--cool-to needs a thermal zone, and this machine has none",
                hint="run without --cool-to here; the manifest records the absent sensors",
            )
        zones = sysfs.Sensors(self.sensors.root, zones=self.sensors.zones)
        reader = SensorReader(
            zones,
            lambda sensor, error: self.progress.message(
                f"telemetry: zone {sensor} lost for the cool-down guard: {error}"
            ),
        )

        def hottest() -> float | None:
            temps = reader.read()["zones_c"].values()
            return max(temps) if temps else None

        return CoolDownGuard(hottest, self.spec.cool_to, self.spec.cool_timeout_s, self.progress)

    def manifest(self) -> dict[str, Any]:
        return {
            "file": TELEMETRY,
            "markers": MARKERS,
            "interval_s": self.spec.telemetry_interval_s,
            "sampler_cpu": self.spec.telemetry_cpu,
            "sensors": self.sensors.summary(),
            "sensors_detail": self.sensors.as_dict(),
            "governor": self.governor.actions if self.governor else "not changed",
            "cool_to_c": self.spec.cool_to,
            "cool_downs": self.guard.waits if self.guard else [],
        }

    def start(self) -> None:
        if self.governor:
            self.governor.set()
        self.timeline = Timeline(self.directory, self.guard)
        self.sampler = SamplerProcess(
            self.sensors,
            self.directory / TELEMETRY,
            self.spec.telemetry_interval_s,
            self.spec.telemetry_cpu,
        )
        self.sampler.start()
        if self.sensors.has_power():
            idle_s = max(IDLE_BASELINE_S, 3 * self.spec.telemetry_interval_s)
            self.progress.message(f"telemetry: measuring idle power for {idle_s:g} s")
            self.timeline.mark("start", suite=phase_records.IDLE)
            time.sleep(idle_s)
            self.timeline.mark("end", suite=phase_records.IDLE)

    def mark(self, event: str, t_ns: int | None = None, **fields: Any) -> None:
        if self.timeline is not None:
            self.timeline.mark(event, t_ns, **fields)

    def stop(self) -> tuple[list[SampleSet], dict[str, Any]]:
        """Stop everything started; the per-phase records and facts for the manifest."""
        facts: dict[str, Any] = {}
        if self.sampler is not None:
            code = self.sampler.stop()
            facts["sampler_exit"] = code
            facts["sampler_peak_rss_bytes"] = self.sampler.peak_rss_bytes  # not the agent's
        if self.governor:
            self.governor.restore()
        if self.timeline is not None:
            self.timeline.close()
        try:
            timings = [s for s in read_samples(self.directory) if s.suite != phase_records.SUITE]
            markers = read_markers(self.directory / MARKERS)
            sample_sets, found = phase_records.build(self.directory / TELEMETRY, markers, timings)
        except (OSError, ValueError, KeyError, TypeError) as error:
            # a damaged telemetry or markers file costs the telemetry records, not the run
            message = f"telemetry: no per-phase records: {type(error).__name__}: {error}"
            self.progress.message(message)
            return [], dict(facts, error=message)
        facts.update(found)
        return sample_sets, facts
