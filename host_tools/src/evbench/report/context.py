"""What a report knows about a run: its manifest, its records, what is missing.

The report reads the results format (evbench_core.results) and nothing else,
so a run fetched from a board, a local run and an older run all render. Unlike
`results.load_run`, a missing manifest or summary is not fatal here: the
report renders what exists and says what is missing. A format name or version
this evbench does not know is refused, naming it (results.check_version).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evbench.report import manifest_shape
from evbench_core import results
from evbench_core.errors import UserError

#: The files a finished run holds (README "Results format").
EXPECTED_FILES = (
    results.MANIFEST,
    results.SAMPLES,
    results.SUMMARY,
    results.CHECKSUMS,
    results.COMPLETE,
)


@dataclass
class RunContext:
    """A run directory as the report sees it."""

    directory: Path
    manifest: dict[str, Any]
    records: list[dict[str, Any]]
    missing: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    _samples: list[results.SampleSet] | None = field(default=None, repr=False)

    @property
    def partial(self) -> bool:
        return bool(self.missing or self.problems) or self.manifest.get("status") not in (
            None,
            "complete",
        )

    @property
    def run_id(self) -> str:
        return str(self.manifest.get("run_id") or self.directory.name)

    def samples(self) -> list[results.SampleSet]:
        """The raw samples, read once; a line that cannot be read is skipped and named
        in `problems` (results.read_samples' tolerant mode)."""
        if self._samples is None:
            self._samples = list(
                results.read_samples(self.directory, errors="skip", problems=self.problems)
            )
        return self._samples

    def codecs(self) -> list[str]:
        """Codecs of the run in the spec's order, then any others that have records."""
        named = list(self.manifest.get("spec", {}).get("codecs") or [])
        seen = [r["codec"] for r in self.records if r.get("codec")]
        return named + sorted(set(seen) - set(named))


def load_context(directory: Path) -> RunContext:
    """Read what exists of a run directory; refuse formats we do not know."""
    directory = Path(directory)
    if not directory.is_dir():
        raise UserError(
            f"{directory} is not a run directory", hint="give the run's --out directory"
        )
    missing = [name for name in EXPECTED_FILES if not (directory / name).exists()]
    if results.MANIFEST in missing and results.SUMMARY in missing and results.SAMPLES in missing:
        raise UserError(
            f"{directory} holds no evbench results ({', '.join(missing)} missing)",
            hint="give a directory written by evbench run or evbench-agent run",
        )
    manifest: dict[str, Any] = {}
    problems: list[str] = []
    if (directory / results.MANIFEST).exists():
        # each field the report reads, of its own type or left out (and named)
        manifest = manifest_shape.checked(
            results.read_document(directory / results.MANIFEST), problems
        )
    records: list[dict[str, Any]] = []
    if (directory / results.SUMMARY).exists():
        summary = results.read_document(directory / results.SUMMARY)
        records = results.read_records(summary, directory / results.SUMMARY)
        if summary.get("partial"):
            problems.append("summary.json says the run is partial")
    if results.CHECKSUMS not in missing:
        problems += [f"checksum: {p}" for p in results.verify_checksums(directory)]
    context = RunContext(directory, manifest, [], missing, problems)
    if (directory / results.SUMMARY).exists():
        context.records = records
    else:
        # The raw samples survive an interruption; the summary is rebuilt from them.
        context.records = results.summarize(context.samples())
    return context


def context_rows(context: RunContext) -> list[tuple[str, str]]:
    """The run's context as (what, value) pairs, in the order a reader wants them."""
    manifest = context.manifest
    platform = manifest.get("platform") or {}
    spec = manifest.get("spec") or {}
    used = context.codecs()
    rows = [
        ("Run", context.run_id),
        ("Status", str(manifest.get("status", "unknown"))),
        ("Started / ended", f"{manifest.get('start_time', '?')} / {manifest.get('end_time', '?')}"),
        (
            "Board",
            str(platform.get("board") or f"no device tree ({platform.get('hostname', '?')})"),
        ),
        ("CPU", f"{platform.get('cpu_model', '?')} x {platform.get('cpu_count', '?')}"),
        ("Image / OS", str(platform.get("image") or platform.get("os", "?"))),
        ("Kernel", str(platform.get("kernel", "?"))),
        ("Python", f"{platform.get('python_implementation', '')} {platform.get('python', '?')}"),
        (
            "protobuf",
            f"{platform.get('protobuf', '?')} (backend {platform.get('protobuf_backend', '?')})",
        ),
        ("Codecs", ", ".join(f"{c} {codec_version(platform, c)}" for c in used) or "-"),
        ("Suites / profiles", f"{_join(spec.get('suites'))} / {_join(spec.get('profiles'))}"),
        *_schema_rows(spec.get("schema")),
        ("Sample plan", "quick" if manifest.get("quick") else "full"),
        ("GC while timing", str(manifest.get("gc", "?"))),
        ("CPU affinity", str(manifest.get("affinity") or "not pinned")),
        ("Scheduling granted", _scheduling(context.records)),
        ("Sensors", _sensors(manifest)),
        ("Clock", _clock(platform.get("clock") or {})),
    ]
    return rows


def codec_version(platform: dict[str, Any], codec: str) -> str:
    """A codec's version as the run's manifest states it: a Python codec's under
    `platform.codecs`, a C or C++ runtime's as its harness reported it under
    `platform.native_codecs` (library and version); '?' when neither says."""
    python = (platform.get("codecs") or {}).get(codec)
    if isinstance(python, str):
        return python
    native = (platform.get("native_codecs") or {}).get(codec)
    if isinstance(native, dict) and isinstance(native.get("version"), str):
        library = native.get("library")
        return f"{library} {native['version']}" if isinstance(library, str) else native["version"]
    return "?"


def _schema_rows(schema: Any) -> list[tuple[str, str]]:
    """A user's own message (docs/own-messages.md): what was measured, and from which files."""
    if not isinstance(schema, dict):
        return []
    files = ", ".join(
        f"{f.get('name')} (SHA-256 {str(f.get('sha256'))[:16]}...)"
        for f in schema.get("files") or []
    )
    samples, generator = schema.get("samples"), schema.get("generator")
    if samples:
        payloads = f"samples {samples.get('name')} ({samples.get('format')})"
    elif generator:
        payloads = f"generated, rules {generator.get('name')}"
    else:
        payloads = "generated, default rules"
    style = "json-map" if schema.get("json_map") else schema.get("json_style") or "proto3"
    return [
        ("Your message", f"{schema.get('message')} from {files or 'a descriptor set'}"),
        ("Its payloads / JSON", f"{payloads} / {style}"),
    ]


def _join(values: Any) -> str:
    return ", ".join(map(str, values)) if values else "-"


def _scheduling(records: list[dict[str, Any]]) -> str:
    """What the link suite asked for and was granted, from its records' params."""
    granted = set()
    for record in records:
        params = record.get("params") or {}
        if record.get("suite") == "link" and "policy" in params:
            realtime = "real-time asked" if params.get("realtime") else "real-time not asked"
            yes = "granted" if params.get("realtime_granted") else "not granted"
            granted.add(
                f"{params['policy']} ({realtime}, {yes}; timer slack "
                f"{params.get('timer_slack_ns', '?')} ns)"
            )
    return "; ".join(sorted(granted)) or "default policy (no link suite in this run)"


def _sensors(manifest: dict[str, Any]) -> str:
    """The sensors telemetry found, or which kinds it looked for and did not find."""
    sensors = (manifest.get("telemetry") or {}).get("sensors")
    if not isinstance(sensors, dict):
        return "no telemetry in this run"
    found = [f"{kind}: {_join(v)}" for kind, v in sensors.items() if isinstance(v, list) and v]
    found = [item for item in found if not item.startswith("absent:")]
    absent = sensors.get("absent")
    text = "; ".join(found) or "none found"
    # `absent` lists the kinds not found, or says "none" when every kind was.
    return text + (f" (absent: {_join(absent)})" if isinstance(absent, list) and absent else "")


def _clock(clock: dict[str, Any]) -> str:
    if not clock:
        return "?"
    source, resolution = clock.get("clocksource", "?"), clock.get("resolution_s", "?")
    return f"{clock.get('timer', '?')} ({source}, resolution {resolution} s)"


def environment_rows(context: RunContext) -> list[tuple[str, str]]:
    """What decides whether the figures stand for a board, for the box near the top:
    protobuf and its backend, Python, the agent, the codecs, CPU governor, load and
    contention, throttling and the clock source."""
    manifest = context.manifest
    platform = manifest.get("platform") or {}
    telemetry = manifest.get("telemetry") or {}
    build = "debug build" if platform.get("python_debug") else "release build"
    build += ", -X dev" if platform.get("python_dev_mode") else ""
    responder = _link_responder(manifest, context.samples())
    return [
        (
            "protobuf",
            f"{platform.get('protobuf', '?')}, {platform.get('protobuf_backend', '?')} backend",
        ),
        (
            "Python",
            f"{platform.get('python_implementation', '')} {platform.get('python', '?')}"
            + (f" ({build})" if "python_debug" in platform else ""),
        ),
        ("Agent", str(platform.get("agent", "?"))),
        (
            "Codecs",
            "; ".join(f"{c} {codec_version(platform, c)}" for c in context.codecs()) or "-",
        ),
        ("CPU governor", _governors(telemetry)),
        ("Load", _load(platform.get("load_avg"), context.samples())),
        ("Throttling", _throttling(telemetry)),
        ("Clock source", _clock(platform.get("clock") or {})),
        *([("Link responder", responder)] if responder else []),
    ]


#: How a report names the responders the rows' `responder` param records.
_RESPONDER_WORDS = {"c": "C (evbench-link-responder)", "python": "Python (evbench-agent serve)"}


def _link_responder(manifest: dict[str, Any], sample_sets: list[results.SampleSet]) -> str:
    """What answered the link suite's messages; empty for a run without link records."""
    if not any(s.suite == "link" for s in sample_sets):
        return ""
    spec = manifest.get("spec") or {}
    if spec.get("link_transport"):
        return "at the bus's other end"
    if spec.get("link_peer", "loopback") != "loopback":
        # the rows' `responder`: what each phase's responder named itself in its handshake
        said = (s.params.get("responder") for s in sample_sets if s.suite == "link")
        named = {n for n in said if isinstance(n, str)}
        which = " and ".join(_RESPONDER_WORDS.get(n, n) for n in sorted(named))
        return f"{which + ', ' if which else ''}at {spec['link_peer']}, not started by the run"
    if spec.get("link_responder") == "c":
        stated = (manifest.get("platform") or {}).get("link_responder") or {}
        return f"C, {stated.get('responder', 'evbench-link-responder')}, started by the run"
    return "Python, evbench-agent serve, started by the run"


def _governors(telemetry: dict[str, Any]) -> str:
    policies = (telemetry.get("sensors_detail") or {}).get("cpufreq")
    if not isinstance(policies, list):
        return "not recorded"
    found = sorted({str(p.get("governor")) for p in policies if isinstance(p, dict)})
    if not found:
        return "no cpufreq policy (fixed clock, or a VM)"
    changed = telemetry.get("governor")
    return ", ".join(found) + ("" if changed in (None, "not changed") else " (set for the run)")


def _load(load_avg: Any, sample_sets: list[results.SampleSet]) -> str:
    from evbench_core.analysis import contention
    from evbench_core.comparison import busy_replicates

    said = []
    if isinstance(load_avg, list) and len(load_avg) == 3:
        said.append("load average {:g} / {:g} / {:g} at the start".format(*load_avg))
    others = [v for s in sample_sets if s.metric == contention.OTHERS_CPU for v in s.values]
    if others:
        busy, measured = busy_replicates(sample_sets)
        said.append(
            f"other processes up to {max(others):.0f} % of a core while measuring "
            f"({len(busy)} of {measured} replicates beyond the bound)"
        )
    return "; ".join(said) or "not recorded"


def _throttling(telemetry: dict[str, Any]) -> str:
    if not telemetry:
        return "no telemetry in this run"
    phases = telemetry.get("throttled_phases") or []
    if phases:
        return f"{len(phases)} phase(s) throttled"
    sensors = telemetry.get("sensors") or {}
    if "thermal_zones" in (sensors.get("absent") or []) and "cpufreq" in (
        sensors.get("absent") or []
    ):
        return "none seen (no thermal or cpufreq sensor to see it)"
    return "none"
