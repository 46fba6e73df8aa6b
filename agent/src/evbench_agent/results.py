"""The results format: one directory per run, versioned, written atomically.

A run directory holds:

- ``manifest.json``: format name and version, run id, spec, start and end
  time, ``quick``, platform, versions, clock, GC policy, affinity;
- ``samples.jsonl``: raw samples, one JSON object per line, appended and
  flushed as each batch is measured, so an interrupted run keeps them;
- ``summary.json``: ``{format, version, run_id, partial, records: [...]}``,
  one record per (suite, profile, codec, metric, params);
- ``SHA256SUMS``: the digest of every other file, as ``sha256sum`` writes it;
- ``complete``: written last. Without it the run is partial, whatever
  stopped it (Ctrl-C, power loss, reboot).

Format history (readers branch on it and refuse what they do not know):

- 1: first version.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evbench_agent import identity, stats
from evbench_agent.errors import FormatError, UserError

FORMAT = "evbench-results"
VERSION = 1
SUPPORTED_VERSIONS = frozenset({1})

MANIFEST = "manifest.json"
SAMPLES = "samples.jsonl"
SUMMARY = "summary.json"
CHECKSUMS = "SHA256SUMS"
COMPLETE = "complete"

#: The closed list of units. Values are stored in these; renderers convert.
UNITS = frozenset(
    {"s", "bytes", "bytes/s", "messages/s", "messages", "°C", "Hz", "percent", "W", "J"}
)

RECORD_FIELDS = (
    "suite",
    "profile",
    "codec",
    "metric",
    "unit",
    "params",
    "n",
    "mean",
    "median",
    "stdev",
    "min",
    "max",
    "p90",
    "p99",
    "ci95_low",
    "ci95_high",
)


@dataclass(frozen=True)
class SampleSet:
    """Raw values of one metric from one worker (or one link phase)."""

    suite: str
    profile: str | None
    codec: str | None
    metric: str
    unit: str
    params: dict[str, Any]
    values: list[float]
    worker: int = 0

    def key(self) -> tuple:
        """What the set measured: outcomes (calibrated loops, ...) never split a record."""
        return (
            self.suite,
            self.profile,
            self.codec,
            self.metric,
            self.unit,
            json.dumps(identity.identity_params(self.params), sort_keys=True),
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "profile": self.profile,
            "codec": self.codec,
            "metric": self.metric,
            "unit": self.unit,
            "params": self.params,
            "worker": self.worker,
            "values": self.values,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SampleSet:
        return cls(
            suite=data["suite"],
            profile=data.get("profile"),
            codec=data.get("codec"),
            metric=data["metric"],
            unit=data["unit"],
            params=data.get("params") or {},
            values=list(data["values"]),
            worker=data.get("worker", 0),
        )


def _file_mode() -> int:
    """The mode open() would give a new file; mkstemp's 0600 would hide results."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_atomic(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so a reader sees the old or the new file, never half."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(handle, _file_mode())
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        Path(temporary).replace(path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    _fsync_directory(path.parent)


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_json(path: Path, document: Any) -> None:
    write_atomic(path, (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode())


def summarize(sample_sets: Iterable[SampleSet]) -> list[dict[str, Any]]:
    """One record per metric: the values of every worker pooled, then summarized."""
    pooled: dict[tuple, list[float]] = {}
    first: dict[tuple, SampleSet] = {}
    for sample_set in sample_sets:
        key = sample_set.key()
        first.setdefault(key, sample_set)
        pooled.setdefault(key, []).extend(sample_set.values)
    records = []
    for key, values in pooled.items():
        head = first[key]
        if head.unit not in UNITS:
            raise ValueError(f"unit {head.unit!r} is not one of {sorted(UNITS)}")
        record = {
            "suite": head.suite,
            "profile": head.profile,
            "codec": head.codec,
            "metric": head.metric,
            "unit": head.unit,
            "params": head.params,
        }
        record.update(stats.summarize(values).as_dict())
        records.append(record)
    return records


class RunWriter:
    """Writes one run directory; `finish` seals it, complete or partial."""

    def __init__(self, directory: Path, run_id: str) -> None:
        self.directory = Path(directory)
        self.run_id = run_id
        prepare_output(self.directory)

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        document = {"format": FORMAT, "version": VERSION, "run_id": self.run_id, **manifest}
        write_json(self.directory / MANIFEST, document)

    def add(self, sample_sets: Iterable[SampleSet]) -> None:
        """Append raw samples and push them to disk before returning."""
        lines = "".join(json.dumps(s.as_dict()) + "\n" for s in sample_sets)
        with open(self.directory / SAMPLES, "a", encoding="utf-8") as stream:
            stream.write(lines)
            stream.flush()
            os.fsync(stream.fileno())

    def write_file(self, name: str, data: bytes) -> None:
        write_atomic(self.directory / name, data)

    def finish(self, complete: bool) -> list[dict[str, Any]]:
        """Write the summary and the checksums; mark the run complete only if it is."""
        records = summarize(read_samples(self.directory))
        write_json(
            self.directory / SUMMARY,
            {
                "format": FORMAT,
                "version": VERSION,
                "run_id": self.run_id,
                "partial": not complete,
                "records": records,
            },
        )
        write_checksums(self.directory)
        if complete:
            write_atomic(self.directory / COMPLETE, f"{self.run_id}\n".encode())
        return records


def prepare_output(directory: Path) -> None:
    """Create `directory`, or accept it when it exists empty; fail before any run."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UserError(
            f"cannot create the output directory {directory}: {error.strerror}",
            hint="choose another --out",
        ) from error
    if any(directory.iterdir()):
        raise UserError(
            f"the output directory {directory} is not empty",
            hint="choose a new --out; runs are never written over",
        )
    if not os.access(directory, os.W_OK | os.X_OK):
        raise UserError(f"the output directory {directory} is not writable")


def read_samples(directory: Path) -> Iterator[SampleSet]:
    """Raw samples of a run; a last line torn by a power cut is skipped."""
    path = Path(directory) / SAMPLES
    if not path.exists():
        return
    with open(path, encoding="utf-8") as stream:
        for line in stream:
            if not line.endswith("\n"):
                break
            yield SampleSet.from_dict(json.loads(line))


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _listed_files(directory: Path) -> list[Path]:
    return sorted(
        path
        for path in directory.rglob("*")
        if path.is_file()
        and path.name not in (CHECKSUMS, COMPLETE)
        and not path.name.startswith(".")
    )


def write_checksums(directory: Path) -> None:
    lines = [
        f"{sha256_file(path)}  {path.relative_to(directory).as_posix()}\n"
        for path in _listed_files(directory)
    ]
    write_atomic(directory / CHECKSUMS, "".join(lines).encode())


def verify_checksums(directory: Path) -> list[str]:
    """Problems found against SHA256SUMS (empty when every listed file matches)."""
    directory = Path(directory)
    listing = directory / CHECKSUMS
    if not listing.exists():
        return [f"{CHECKSUMS} is missing"]
    problems = []
    for line in listing.read_text(encoding="utf-8").splitlines():
        expected, _, name = line.partition("  ")
        path = directory / name
        if not path.is_file():
            problems.append(f"{name}: missing")
        elif sha256_file(path) != expected:
            problems.append(f"{name}: checksum mismatch")
    return problems


def check_version(document: dict[str, Any], source: Path) -> None:
    """Refuse a document that is not ours or whose format version we do not know."""
    if document.get("format") != FORMAT:
        raise FormatError(
            f"{source} is not an evbench results file (format {document.get('format')!r})"
        )
    version = document.get("version")
    if version not in SUPPORTED_VERSIONS:
        raise FormatError(
            f"{source} has results format version {version!r}; this evbench reads "
            f"{', '.join(map(str, sorted(SUPPORTED_VERSIONS)))}",
            hint="update evbench to read newer runs",
        )


def _load_json(path: Path) -> dict[str, Any]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FormatError(f"{path} is missing") from None
    except (OSError, ValueError) as error:
        raise FormatError(f"{path} cannot be read: {error}") from error
    check_version(document, path)
    return document


@dataclass(frozen=True)
class Run:
    """A run directory as read back: what the manifest and summary say."""

    directory: Path
    manifest: dict[str, Any]
    records: list[dict[str, Any]]
    complete: bool

    def samples(self) -> Iterator[SampleSet]:
        return read_samples(self.directory)


def load_run(directory: Path) -> Run:
    """Read a run directory; a missing summary is rebuilt from the raw samples."""
    directory = Path(directory)
    if not directory.is_dir():
        raise UserError(f"{directory} is not a run directory")
    manifest = _load_json(directory / MANIFEST)
    summary_path = directory / SUMMARY
    if summary_path.exists():
        records = _load_json(summary_path)["records"]
    else:
        records = summarize(read_samples(directory))
    return Run(directory, manifest, records, (directory / COMPLETE).exists())
