"""The results format: one directory per run, versioned, written atomically.

A run directory holds:

- ``manifest.json``: format name and version, run id, spec, start and end
  time, ``quick``, platform, versions, clock, GC policy, affinity; ``status``
  (running, complete, interrupted, failed, partial) and, for a run sealed
  after its writer died, ``reason``;
- ``samples.jsonl``: raw samples, one JSON object per line, appended and
  flushed as each batch is measured, so an interrupted run keeps them;
- ``summary.json``: ``{format, version, run_id, partial, records: [...]}``,
  one record per (suite, profile, codec, metric, params);
- ``SHA256SUMS``: the digest of every other file, as ``sha256sum`` writes it, but the
  report's (REPORT_OUTPUTS): a report may be rewritten at any time;
- ``complete``: written last. Without it the run is partial, whatever
  stopped it (Ctrl-C, power loss, reboot).

Format history (docs/results-format.md has it whole). The version is MAJOR.MINOR: a
minor only adds what a reader of an older minor may ignore (a key, an optional
section), so a reader accepts every minor of a major it knows and refuses a newer
major, naming it:

- 1 (an integer, read as 1.0): first version;
- "1.1": the version written as "MAJOR.MINOR"; nothing else changed.

Reading (the one reader of the format: report, compare, fetch and the agent
use these; a file that is not what the format says is a FormatError, exit 2,
never a crash):

- ``read_document(path)``: manifest.json or summary.json, a JSON object of a
  known format and version (size, nesting and encoding checked);
- every file of a run is read only if it is a regular file, never through a
  symbolic link, and capped: a FIFO, device or directory in its place is a
  FormatError (or a listed problem), never a hang;
- ``read_records(summary, path)``: the summary's records, each checked;
- ``read_samples(directory, errors="strict" | "skip", problems=None)``: the
  raw samples; "skip" leaves out lines that cannot be read and says which in
  ``problems``; a last line torn by a power cut is left out either way;
- ``parse_checksums(data, where)``: SHA256SUMS as (digest, name) pairs, every
  name a plain relative path inside the run (what fetch trusts from a board);
- ``verify_checksums(directory)``: problems against SHA256SUMS; it reads only
  regular files inside the run directory;
- ``load_run(directory)``: all of it as a ``Run``; ``Run(..., sample_sets=...)``
  carries samples already read.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from evbench_core import digests, regular_file
from evbench_core.analysis import identity, stats
from evbench_core.errors import FormatError, UserError
from evbench_core.write_failures import SpaceReserve, writing

FORMAT = "evbench-results"
#: The version this writer writes, MAJOR.MINOR (results-format.md, "Version history").
MAJOR, MINOR = 1, 2
VERSION = f"{MAJOR}.{MINOR}"
#: The majors this reader reads, every minor of each (older ones as integers: 1 is 1.0).
READ_MAJORS = frozenset({1})
_VERSION_TEXT = re.compile(r"(0|[1-9][0-9]{0,5})\.(0|[1-9][0-9]{0,5})")

#: Every top-level key a manifest may hold, each documented in results-format.md (a test
#: fails when the two differ): the writer refuses any other, so none goes undocumented.
MANIFEST_KEYS = (
    "format",
    "version",
    "run_id",
    "spec",
    "quick",
    "start_time",
    "end_time",
    "status",
    "reason",
    "platform",
    "board_identity",
    "gc",
    "affinity",
    "aa",
    "pid",
    "memory",
    "arms",
    "lab",
    "notes",
    "planned_seconds",
    "telemetry",
    "source",
    "sequential",
)

MANIFEST = "manifest.json"
SAMPLES = "samples.jsonl"
SUMMARY = "summary.json"
CHECKSUMS = "SHA256SUMS"
COMPLETE = "complete"
#: What `evbench report` writes into a run directory (evbench.report.writer writes no
#: other name): never listed in SHA256SUMS, as a report may be rewritten at any time,
#: even while the run still runs.
REPORT_OUTPUTS = frozenset(
    {"report.md", "report.html", "plots", "summary.csv", "comparison.csv", "junit.xml"}
)

#: The closed list of units. Values are stored in these; renderers convert.
#: `count` is a number of events (a bus interface's error counters, frames).
UNITS = frozenset(
    {"s", "bytes", "bytes/s", "messages/s", "messages", "count", "°C", "Hz", "percent", "W", "J"}
)

#: Limits for what a reader accepts: a results file is small, shallow and ours.
MAX_DOCUMENT = 64 << 20
MAX_DEPTH = 64
#: The largest magnitude a stored number may have: beyond any measurement in these
#: units, and far enough below the float range (1.8e308) that sums and squares of a
#: run's values cannot overflow in the statistics.
MAX_VALUE = 1e100
MAX_NAME = 255
MAX_PATH = 1024
DIGEST = re.compile(r"[0-9a-f]{64}")

#: The figures of a record that are null when its sample is too small for them.
OPTIONAL_FIGURES = frozenset({"stdev", "p90", "p99", "ci95_low", "ci95_high"})

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
    #: Counts (sizes in bytes) are ints, and are kept ints in the results.
    values: Sequence[float]
    worker: int = 0

    def key(self) -> tuple[Any, ...]:
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
    def from_dict(cls, data: Any) -> SampleSet:
        """A sample set as samples.jsonl stores it; FormatError for anything else."""
        if not isinstance(data, dict):
            raise FormatError(f"a sample set is a JSON object, not {type(data).__name__}")
        suite, metric, unit = (_text(data, key) for key in ("suite", "metric", "unit"))
        _check_unit(unit)
        values = data.get("values")
        if isinstance(values, list) and not values:
            raise FormatError("a sample set holds at least one value")
        if not isinstance(values, list) or not _finite_numbers(values):
            raise FormatError(
                f"a sample set's values are a list of finite numbers within {MAX_VALUE:g}"
            )
        worker = data.get("worker", 0)
        if not isinstance(worker, int) or isinstance(worker, bool):
            raise FormatError(f"a sample set's worker is a whole number, not {worker!r:.40}")
        return cls(
            suite=suite,
            profile=_optional_text(data, "profile"),
            codec=_optional_text(data, "codec"),
            metric=metric,
            unit=unit,
            params=_params(data.get("params")),
            values=[float(v) for v in values],
            worker=worker,
        )


def _text(data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str):
        raise FormatError(f"{key!r} is missing or not text ({value!r:.40})")
    return value


def _optional_text(data: dict[str, Any], key: str) -> str | None:
    return None if data.get(key) is None else _text(data, key)


def is_value(value: Any) -> bool:
    """A number as the format stores one: finite, within MAX_VALUE of zero, not a bool."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return -MAX_VALUE <= float(value) <= MAX_VALUE  # False for NaN and the infinities
    except OverflowError:  # an integer of hundreds of digits
        return False


def _finite_numbers(values: list[Any]) -> bool:
    """`is_value` of every value; floats, nearly all of them, take the short path
    (a full run holds some 10^5 values: checking each through `is_value` took half
    of reading samples.jsonl)."""
    low, high = -MAX_VALUE, MAX_VALUE
    return all(low <= v <= high if type(v) is float else is_value(v) for v in values)


def _check_unit(unit: str) -> None:
    if unit not in UNITS:
        raise FormatError(f"unit {unit!r:.40} is not one of {', '.join(sorted(UNITS))}")


def _depth(value: Any) -> int:
    """How deeply lists and objects nest in `value` (iteratively: no recursion to exhaust)."""
    deepest, pending = 0, [(value, 1)]
    while pending:
        item, level = pending.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, level)
            if level > MAX_DEPTH:
                break
            # Scalars cannot nest: only containers are pushed (a sample set's values
            # are thousands of numbers).
            pending.extend((child, level + 1) for child in item if isinstance(child, (dict, list)))
    return deepest


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float))


def _params(value: Any) -> dict[str, Any]:
    """A record's params: a JSON object whose values are text, numbers, true/false or null,
    or flat lists of them; a replicate param (process, round, ...) a single one, as the
    analysis keys replicates by them."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FormatError("params are a JSON object of plain values")
    for name, item in value.items():
        if _scalar(item):
            continue
        flat = isinstance(item, list) and all(map(_scalar, item))
        if flat and identity.param_kind(name) != "replicate":
            continue
        raise FormatError(
            f"params are a JSON object of plain values: {name!r:.40} holds {item!r:.40}"
        )
    return value


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
    pooled: dict[tuple[Any, ...], list[float]] = {}
    first: dict[tuple[Any, ...], SampleSet] = {}
    for sample_set in sample_sets:
        key = sample_set.key()
        first.setdefault(key, sample_set)
        pooled.setdefault(key, []).extend(sample_set.values)
    records = []
    for key, values in pooled.items():
        if not values:  # sets that measured nothing: no record to make (and none to invent)
            continue
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
    """Writes one run directory; `finish` seals it, complete or partial.

    A write the directory refuses (full, read-only, forbidden) raises
    `write_failures.WriteFailed`, a user error; `release_reserve` then gives back
    the space held since the start, so the manifest can still say what happened.
    """

    def __init__(self, directory: Path, run_id: str) -> None:
        self.directory = Path(directory)
        self.run_id = run_id
        prepare_output(self.directory)
        self.reserve = SpaceReserve(self.directory)
        self.reserve.take()
        #: A sequential run's stage (1, 2, ...): written into every record's params.
        self.stage: int | None = None

    def release_reserve(self) -> None:
        self.reserve.release()

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        document = {"format": FORMAT, "version": VERSION, "run_id": self.run_id, **manifest}
        check_manifest_keys(document)
        with writing(self.directory):
            write_json(self.directory / MANIFEST, document)

    def add(self, sample_sets: Iterable[SampleSet]) -> None:
        """Append raw samples and push them to disk before returning.

        A failed append is cut back to where the file ended, so no torn line stays
        between the samples before it and any written later."""
        # a set without values measured nothing, and a reader refuses it
        lines = "".join(
            json.dumps(self._staged(s.as_dict())) + "\n" for s in sample_sets if s.values
        )
        data = lines.encode()
        with writing(self.directory):
            fd = os.open(self.directory / SAMPLES, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
            try:
                end = os.lseek(fd, 0, os.SEEK_END)
                try:
                    written = 0
                    while written < len(data):  # unbuffered: nothing left to flush on failure
                        written += os.write(fd, data[written:])
                    os.fsync(fd)
                except OSError:
                    os.ftruncate(fd, end)  # a shorter file needs no space
                    raise
            finally:
                os.close(fd)

    def _staged(self, record: dict[str, Any]) -> dict[str, Any]:
        """A sequential run's record carries its stage (a replicate param): the stage's
        worker processes and phases are replicates of their own."""
        if self.stage is None:
            return record
        return {**record, "params": {**record["params"], "stage": self.stage}}

    def write_file(self, name: str, data: bytes) -> None:
        with writing(self.directory):
            write_atomic(self.directory / name, data)

    def finish(self, complete: bool) -> list[dict[str, Any]]:
        """Write the summary and the checksums; mark the run complete only if it is."""
        self.reserve.release()  # its room is for these last files
        records = summarize(read_samples(self.directory))
        with writing(self.directory):
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


def seal_partial(directory: Path, reason: str) -> None:
    """Close a run whose writer died (a killed agent): what exists is kept, marked partial.

    The manifest says ``status: partial`` and ``reason``; the summary is rebuilt
    from the samples that can be read; the checksums cover what is there; no
    ``complete`` marker.
    """
    directory = Path(directory)
    manifest = read_document(directory / MANIFEST)
    if manifest.get("status") in (None, "running", "complete"):
        manifest["status"] = "partial"
    manifest["reason"] = reason
    write_json(directory / MANIFEST, manifest)
    (directory / COMPLETE).unlink(missing_ok=True)
    records = summarize(read_samples(directory, errors="skip"))
    run_id = manifest.get("run_id", directory.name)
    summary = {
        "format": FORMAT,
        "version": VERSION,
        "run_id": run_id,
        "partial": True,
        "records": records,
    }
    write_json(directory / SUMMARY, summary)
    write_checksums(directory)


#: The longest partial reason a reader passes on (characters): it heads a report.
MAX_REASON = 500


def partial_reason(manifest: dict[str, Any]) -> str | None:
    """Why the run is partial, in one line, as its manifest says; None if it does not.

    The manifest may come from a board: a reason that is not a string gives None,
    control characters (line breaks, terminal escapes) become spaces, and a long one
    is cut to MAX_REASON characters."""
    reason = manifest.get("reason")
    if not isinstance(reason, str):
        return None
    line = " ".join("".join(c if c.isprintable() else " " for c in reason).split())
    if len(line) > MAX_REASON:
        line = line[: MAX_REASON - 3] + "..."
    return line or None


def abandon(directory: Path, made: bool) -> None:
    """Take back a run directory no run began in (no manifest yet): its disk reserve, and
    the folder itself when this run `made` it and nothing else is in it."""
    SpaceReserve(directory).release()
    if made:
        with contextlib.suppress(OSError):  # something else is in it: it stays
            directory.rmdir()


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


def read_samples(
    directory: Path, errors: str = "strict", problems: list[str] | None = None
) -> Iterator[SampleSet]:
    """Raw samples of a run; a last line torn by a power cut is skipped.

    A line that cannot be read raises FormatError (`errors="strict"`), or with
    `errors="skip"` is left out and named in `problems` (when given) as
    "samples.jsonl line N cannot be read". A generator: `problems` fills as it runs.
    """
    if errors not in ("strict", "skip"):
        raise ValueError(f"errors is 'strict' or 'skip', not {errors!r}")
    path = Path(directory) / SAMPLES
    try:
        stream = regular_file.open_regular(path, follow=False)
    except FileNotFoundError:
        return
    except OSError as error:  # a directory or FIFO in its place, a file one may not read
        if errors == "strict":
            raise FormatError(f"{path} cannot be read: {error.strerror}") from None
        if problems is not None:
            problems.append(f"{SAMPLES} cannot be read: {error.strerror}")
        return
    with stream:
        for number, raw in enumerate(_capped_lines(stream, MAX_DOCUMENT), 1):
            if not raw.endswith(b"\n"):
                break
            try:
                if len(raw) > MAX_DOCUMENT:
                    raise FormatError(f"over {MAX_DOCUMENT} bytes")
                yield SampleSet.from_dict(_parse_json(raw))
            except FormatError as error:
                if errors == "strict":
                    raise FormatError(f"{path} line {number} cannot be read: {error}") from None
                if problems is not None:
                    problems.append(f"{SAMPLES} line {number} cannot be read")


def _capped_lines(stream: BinaryIO, cap: int) -> Iterator[bytes]:
    """The lines of `stream`, each held to at most `cap` + 1 bytes: a longer line is
    read through and given as its first `cap` + 1 bytes with a newline (too long)."""
    while line := stream.readline(cap + 1):
        if len(line) > cap:
            rest = line
            while rest and not rest.endswith(b"\n"):
                rest = stream.readline(cap + 1)
            line = line + b"\n" if rest else line  # torn at the end: left out as torn
        yield line


def sha256_file(path: Path) -> str:
    digest = digests.sha256()  # not hashlib: OpenSSL costs the agent 3.4 MiB of RSS
    with regular_file.open_regular(path) as stream:  # a FIFO would block for ever
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _safe_name(name: str) -> bool:
    """A plain relative path: no empty or dot part, no control character, not too long."""
    parts = name.split("/")
    return (
        0 < len(name) <= MAX_PATH
        # Dot names are the writer's own temporaries (never listed), `.` and `..` among them.
        and all(0 < len(p.encode()) <= MAX_NAME and not p.startswith(".") for p in parts)
        and not any(ord(c) < 32 or ord(c) == 127 or c == "\\" for c in name)
        and name not in (CHECKSUMS, COMPLETE)
    )


def parse_checksums(data: bytes, where: str) -> list[tuple[str, str]]:
    """SHA256SUMS as (digest, name) pairs; FormatError on any line that is not one.

    The names may come from a board: each must stay inside the run directory
    (relative, no `..`), appear once, and not be both a file and a directory.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise FormatError(f"{CHECKSUMS} from {where} is not UTF-8") from None
    entries: list[tuple[str, str]] = []
    files: set[str] = set()
    directories: set[str] = set()
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the newline that ends the last line
    for number, line in enumerate(lines, 1):
        digest, separator, name = line.partition("  ")
        if not (separator and DIGEST.fullmatch(digest) and _safe_name(name)):
            raise FormatError(
                f"{CHECKSUMS} from {where} has a bad line {number}: {line[:100]!r}",
                hint="the run's listing is damaged; nothing was read by it",
            )
        parents = {"/".join(name.split("/")[:i]) for i in range(1, name.count("/") + 1)}
        if name in files or name in directories or parents & files:
            raise FormatError(
                f"{CHECKSUMS} from {where} names {name[:100]!r} twice (as a file or a directory)"
            )
        files.add(name)
        directories |= parents
        entries.append((digest, name))
    return entries


def _listed_files(directory: Path) -> list[Path]:
    return sorted(
        path
        for path in directory.rglob("*")
        if path.is_file()
        and path.name not in (CHECKSUMS, COMPLETE)
        and not path.name.startswith(".")
        and path.relative_to(directory).parts[0] not in REPORT_OUTPUTS
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
    if not os.path.lexists(listing):
        return [f"{CHECKSUMS} is missing"]
    try:
        entries = parse_checksums(_read_run_file(listing), str(directory))
    except FormatError as error:
        return [str(error)]
    # The writer lists every file of the run: one of the run's own files left out (an
    # emptied listing, one cut at a line's end) would pass unverified.
    listed = {name for _, name in entries}
    problems = [
        f"{name}: not listed in {CHECKSUMS}"
        for name in (MANIFEST, SUMMARY, SAMPLES)
        if name not in listed and os.path.lexists(directory / name)
    ]
    for expected, name in entries:
        path = directory / name
        # Names never climb out (parse_checksums), and no symbolic link is followed out either.
        try:
            mode = path.lstat().st_mode
        except OSError:
            problems.append(f"{name}: missing")
            continue
        inside = not any(p.is_symlink() for p in path.parents if directory in p.parents)
        if not stat.S_ISREG(mode) or not inside:
            problems.append(f"{name}: not a regular file in the run directory")
        elif sha256_file(path) != expected:
            problems.append(f"{name}: checksum mismatch")
    return problems


def check_manifest_keys(manifest: dict[str, Any]) -> None:
    """A writer's own check: every key is one of MANIFEST_KEYS (documented)."""
    undocumented = [key for key in manifest if key not in MANIFEST_KEYS]
    if undocumented:
        raise ValueError(
            f"manifest keys {undocumented} are not in results.MANIFEST_KEYS: add each there "
            "and to docs/results-format.md"
        )


def parse_version(version: object) -> tuple[int, int] | None:
    """(major, minor) of a document's `version`: "MAJOR.MINOR", or an integer (a run
    written before minors existed: N is N.0); None for anything else."""
    if isinstance(version, int) and not isinstance(version, bool):
        return (version, 0) if 0 <= version < 10**6 else None
    if isinstance(version, str):
        match = _VERSION_TEXT.fullmatch(version)
        if match:
            return int(match[1]), int(match[2])
    return None


def readable(version: object) -> bool:
    """Whether this reader reads a document of `version`: a major it knows, any minor."""
    parsed = parse_version(version)
    return parsed is not None and parsed[0] in READ_MAJORS


def check_version(document: dict[str, Any], source: Path) -> None:
    """Refuse a document that is not ours or whose format major we do not know."""
    if document.get("format") != FORMAT:
        raise FormatError(
            f"{source} is not an evbench results file (format {document.get('format')!r:.40})"
        )
    version = document.get("version")
    if not readable(version):
        raise FormatError(
            f"{source} has results format version {version!r:.40}; this evbench reads "
            f"{', '.join(f'{major}.x' for major in sorted(READ_MAJORS))}",
            hint=_version_hint(version),
        )


def _version_hint(version: object) -> str:
    """What to do about a results format this evbench does not read: it depends on its age."""
    parsed = parse_version(version)
    if parsed is not None:
        if parsed[0] < min(READ_MAJORS):
            return (
                f"an older evbench wrote this run (format {version}) and this one does not "
                "convert it: read it with the evbench that wrote it, or measure again"
            )
        return f"a newer evbench wrote this run (format {version}): update evbench to read it"
    return "the file is damaged or not written by evbench: measure again"


def _lone_surrogate(value: Any) -> str | None:
    """The first text (object key or string) of `value` holding a lone surrogate, which
    JSON can escape (\\ud800) but no UTF-8 file, report or terminal can hold."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending += item.keys()
            pending += item.values()
        elif isinstance(item, list):
            pending += item
        elif isinstance(item, str) and _SURROGATE.search(item):
            return item
    return None


_SURROGATE = re.compile("[\ud800-\udfff]")
#: How a JSON text spells a surrogate (the only way one gets into a decoded string).
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89abcdefABCDEF]")


def _parse_json(data: bytes) -> Any:
    """JSON from bytes, as FormatError when it is not UTF-8 text (invalid bytes, or a lone
    surrogate escaped), not JSON or nested too deep."""
    try:
        value = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise FormatError(f"not UTF-8 (byte {error.start})") from None
    except RecursionError:
        raise FormatError("nested too deeply") from None
    except ValueError as error:  # JSONDecodeError, or an integer of thousands of digits
        raise FormatError(f"not JSON ({str(error)[:80]})") from None
    if _depth(value) > MAX_DEPTH:
        raise FormatError("nested too deeply")
    if _SURROGATE_ESCAPE.search(data):
        text = _lone_surrogate(value)
        if text is not None:
            shown = text.encode("utf-8", "backslashreplace").decode("ascii", "replace")
            raise FormatError(f'not UTF-8 text: a lone surrogate in "{shown:.60}"')
    return value


def _read_run_file(path: Path) -> bytes:
    """A run's document or listing, at most MAX_DOCUMENT bytes: a regular file of the run
    itself (no FIFO to block on, no device to read without end, no link out of the run)."""
    try:
        with regular_file.open_regular(path, follow=False) as stream:
            data = stream.read(MAX_DOCUMENT + 1)
    except FileNotFoundError:
        raise FormatError(f"{path} is missing") from None
    except OSError as error:
        raise FormatError(f"{path} cannot be read: {error.strerror}") from None
    if len(data) > MAX_DOCUMENT:
        raise FormatError(f"{path} is over {MAX_DOCUMENT} bytes: not a results file")
    return data


def read_document(path: Path) -> dict[str, Any]:
    """manifest.json or summary.json: a JSON object of a format and version we read."""
    data = _read_run_file(path)
    try:
        document = _parse_json(data)
    except FormatError as error:
        raise FormatError(f"{path} cannot be read: {error}") from None
    if not isinstance(document, dict):
        raise FormatError(f"{path} is not a JSON object ({type(document).__name__})")
    check_version(document, path)
    return document


def _check_record(record: Any) -> dict[str, Any]:
    if not isinstance(record, dict):
        raise FormatError(f"a record is a JSON object, not {type(record).__name__}")
    for key in ("suite", "metric", "unit"):
        _text(record, key)
    _optional_text(record, "profile")
    _optional_text(record, "codec")
    _check_unit(record["unit"])
    _params(record.get("params"))
    n = record.get("n")
    if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= MAX_VALUE:
        raise FormatError(f"a record's n is a whole number from 0, not {n!r:.40}")
    for key in RECORD_FIELDS[7:]:
        value = record.get(key)
        # null only where a small sample has no value (stats.Summary: stdev, p90, p99, CI)
        if not (is_value(value) or (value is None and key in OPTIONAL_FIGURES)):
            raise FormatError(f"a record's {key} is a finite number, not {value!r:.40}")
    return record


def read_records(summary: dict[str, Any], path: Path) -> list[dict[str, Any]]:
    """The records of a summary document, each checked against the format."""
    records = summary.get("records")
    if not isinstance(records, list):
        raise FormatError(f"{path} has no list of records")
    try:
        return [_check_record(record) for record in records]
    except FormatError as error:
        raise FormatError(f"{path}: {error}") from None


@dataclass(frozen=True)
class Run:
    """A run directory as read back: what the manifest and summary say.

    `sample_sets`, when given, are the samples already read (a tolerant reader
    that skipped bad lines); otherwise `samples()` reads them strictly.
    """

    directory: Path
    manifest: dict[str, Any]
    records: list[dict[str, Any]]
    complete: bool
    sample_sets: tuple[SampleSet, ...] | None = None

    def samples(self) -> Iterator[SampleSet]:
        if self.sample_sets is not None:
            return iter(self.sample_sets)
        return read_samples(self.directory)


def load_run(directory: Path) -> Run:
    """Read a run directory; a missing summary is rebuilt from the raw samples."""
    directory = Path(directory)
    if not directory.is_dir():
        raise UserError(f"{directory} is not a run directory")
    manifest = read_document(directory / MANIFEST)
    summary_path = directory / SUMMARY
    if summary_path.exists():
        records = read_records(read_document(summary_path), summary_path)
    else:
        records = summarize(read_samples(directory))
    return Run(directory, manifest, records, (directory / COMPLETE).exists())


__all__ = [
    "CHECKSUMS",
    "COMPLETE",
    "FORMAT",
    "MANIFEST",
    "MAX_DOCUMENT",
    "MAX_VALUE",
    "RECORD_FIELDS",
    "REPORT_OUTPUTS",
    "SAMPLES",
    "SUMMARY",
    "UNITS",
    "VERSION",
    "Run",
    "SampleSet",
    "abandon",
    "check_manifest_keys",
    "is_value",
    "load_run",
    "parse_checksums",
    "partial_reason",
    "prepare_output",
    "read_document",
    "read_records",
    "read_samples",
    "readable",
    "seal_partial",
    "sha256_file",
    "summarize",
    "verify_checksums",
    "write_atomic",
    "write_checksums",
    "write_json",
]
