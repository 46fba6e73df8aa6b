"""A verified run directory turned into the rows of the store.

A run is indexed only when its files match SHA256SUMS; a mismatch (a file
changed or missing after the run) is refused, naming the files. A run without
its ``complete`` marker, or whose summary or manifest says partial, is indexed
and marked partial: a partial run's figures are kept but left out of trends.

The raw samples go in compressed: every worker's values of one metric pooled,
as little-endian doubles, zlib level 6.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import struct
import zlib
from dataclasses import astuple, dataclass, fields
from pathlib import Path
from typing import Any

from evbench.report import manifest_shape
from evbench_core import results
from evbench_core.errors import CheckFailed, FormatError, UserError

#: Params that tell records of one metric apart within a run (as the report's record_key);
#: the others are settings (loop counts calibrated per run) kept with the record.
IDENTITY_PARAMS = ("phase", "kind", "operation")
LEGACY_BOARD_SOURCE = "hostname (run recorded before board identities)"


@dataclass(frozen=True)
class RunRow:
    run_id: str
    board: str
    board_source: str
    place: str | None
    start_time: str
    end_time: str | None
    quick: int
    partial: int
    profiles: str
    codecs: str
    image: str | None
    kernel: str | None
    python: str | None
    protobuf: str | None
    protobuf_backend: str | None
    codec_versions: str
    agent: str | None
    directory: str | None
    digest: str
    added_at: str
    manifest: str

    @classmethod
    def columns(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    def as_tuple(self) -> tuple:
        return astuple(self)


@dataclass(frozen=True)
class IndexedRun:
    row: RunRow
    records: list[tuple]  # store.RECORD_COLUMNS
    samples: list[tuple]  # store.SAMPLE_COLUMNS


def pack_values(values: list[float]) -> bytes:
    return zlib.compress(struct.pack(f"<{len(values)}d", *values), 6)


def unpack_values(packed: bytes) -> list[float]:
    raw = zlib.decompress(packed)
    return list(struct.unpack(f"<{len(raw) // 8}d", raw))


def series_metric(metric: str, params: dict[str, Any] | None) -> str:
    """The metric qualified by its identity params: `cpu_util[phase=codec]`."""
    params = params or {}
    qualifiers = [f"{name}={params[name]}" for name in IDENTITY_PARAMS if name in params]
    return f"{metric}[{','.join(qualifiers)}]" if qualifiers else metric


def base_metric(metric: str) -> str:
    return metric.split("[", 1)[0]


def board_identity(manifest: dict[str, Any]) -> tuple[str, str]:
    """(identity, where it came from); runs made before identities fall back to the hostname."""
    identity = manifest.get("board_identity") or {}
    if identity.get("id"):
        return str(identity["id"]), str(identity.get("source") or "unknown")
    platform = manifest.get("platform") or {}
    return f"host:{platform.get('hostname') or 'unknown'}", LEGACY_BOARD_SOURCE


def _verify(directory: Path, complete: bool) -> tuple[str, bool]:
    """The content digest; refuses a run whose files do not match their checksums."""
    listing = directory / results.CHECKSUMS
    if not listing.exists():
        if complete:
            raise CheckFailed(
                f"{directory} is marked complete but has no {results.CHECKSUMS}; not indexed",
                hint="the run directory was changed after the run; index a fresh copy",
            )
        # Stopped before its checksums were written: partial, identified by what it holds.
        digest = hashlib.sha256()
        for name in (results.MANIFEST, results.SAMPLES):
            if (directory / name).exists():
                digest.update(results.sha256_file(directory / name).encode())
        return digest.hexdigest(), True
    problems = results.verify_checksums(directory)
    if problems:
        raise CheckFailed(
            f"{directory} fails its checksums ({'; '.join(problems[:5])}); not indexed",
            hint="the run's files changed after the run; index an intact copy",
        )
    return hashlib.sha256(listing.read_bytes()).hexdigest(), False


def _load(path: Path) -> dict[str, Any]:
    """A manifest or summary through the results reader (size, depth, UTF-8, version)."""
    return results.read_document(path)


def _checked_manifest(manifest: dict[str, Any], path: Path) -> None:
    """Refuse a manifest whose fields the history keeps have other types (a store's rows
    must hold their types: history/rows.py)."""
    wrong = manifest_shape.wrong_fields(manifest)
    if wrong:
        raise FormatError(f"{path}: {'; '.join(wrong[:5])}; not indexed")


def _checked_start_time(text: str, path: Path) -> None:
    """The store orders, filters (--since), prunes and plots runs by start_time as text:
    only an ISO 8601 time in UTC (as evbench writes it) sorts and parses right."""
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        when = None
    if when is None or when.utcoffset() != dt.timedelta(0):
        raise FormatError(
            f"{path}: start_time {text[:40]!r} is not an ISO 8601 time in UTC; not indexed",
            hint="the manifest was edited by hand; index an intact copy",
        )
    if when > dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1):
        raise FormatError(
            f"{path}: start_time {text[:40]!r} is in the future; not indexed",
            hint="the board's clock was ahead when it ran (no RTC or NTP?): set its clock",
        )


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _refuse_test_cases(manifest: dict, directory: Path) -> None:
    """A run `evbench lava results --test-cases` made holds one number per record and no
    replicates, which the history's checks test: refused as docs/lava.md says, why named."""
    source = manifest.get("source")
    lava = source.get("lava") if isinstance(source, dict) else None
    if isinstance(lava, dict) and lava.get("from") == "test cases":
        raise UserError(
            f"{directory} was made from LAVA job {lava.get('job')}'s test cases: one number "
            "per record and no replicates, which the history tests; not indexed",
            hint="import the run the board uploaded: evbench lava results JOB --uploaded FILE",
        )


def index_run(directory: Path) -> IndexedRun:
    """Read and verify a run directory; its rows, ready for `Store.add`."""
    directory = Path(directory).resolve()
    if not directory.is_dir():
        raise UserError(f"{directory} is not a run directory")
    manifest = _load(directory / results.MANIFEST)
    _checked_manifest(manifest, directory / results.MANIFEST)
    _refuse_test_cases(manifest, directory)
    complete = (directory / results.COMPLETE).exists()
    digest, unverified = _verify(directory, complete)
    try:
        sample_sets = list(results.read_samples(directory))
    except (ValueError, KeyError, TypeError) as error:
        raise FormatError(f"{directory / results.SAMPLES} cannot be read: {error}") from error
    partial = unverified or not complete or manifest.get("status") not in (None, "complete")
    if (directory / results.SUMMARY).exists():
        summary = _load(directory / results.SUMMARY)
        records = results.read_records(summary, directory / results.SUMMARY)
        partial = partial or bool(summary.get("partial"))
    else:
        records = results.summarize(sample_sets)
    run_id = str(manifest.get("run_id") or "")
    if not run_id or not manifest.get("start_time"):
        raise FormatError(f"{directory / results.MANIFEST} has no run_id or start_time")
    _checked_start_time(str(manifest["start_time"]), directory / results.MANIFEST)
    platform = manifest.get("platform") or {}
    spec = manifest.get("spec") or {}
    board, source = board_identity(manifest)
    row = RunRow(
        run_id=run_id,
        board=board,
        board_source=source,
        place=manifest.get("place") or (manifest.get("board_identity") or {}).get("place"),
        start_time=str(manifest["start_time"]),
        end_time=manifest.get("end_time"),
        quick=int(bool(manifest.get("quick"))),
        partial=int(partial),
        profiles=",".join(spec.get("profiles") or []),
        codecs=",".join(spec.get("codecs") or []),
        image=platform.get("os"),
        kernel=platform.get("kernel"),
        python=platform.get("python"),
        protobuf=platform.get("protobuf"),
        protobuf_backend=platform.get("protobuf_backend"),
        codec_versions=json.dumps(platform.get("codecs") or {}, sort_keys=True),
        agent=platform.get("agent"),
        directory=str(directory),
        digest=digest,
        added_at=_now(),
        manifest=json.dumps(manifest, sort_keys=True),
    )
    return IndexedRun(row, _record_rows(run_id, records), _sample_rows(run_id, sample_sets))


def _identity(item: dict[str, Any]) -> tuple[str, str, str, str, str]:
    params = item.get("params") or {}
    return (
        str(item["suite"]),
        str(item.get("profile") or "-"),
        str(item.get("codec") or "-"),
        series_metric(str(item["metric"]), params),
        json.dumps(params, sort_keys=True),
    )


def _record_rows(run_id: str, records: list[dict[str, Any]]) -> list[tuple]:
    rows: dict[tuple[str, ...], tuple] = {}
    for record in records:
        key = _identity(record)
        figures = tuple(
            record.get(name)
            for name in ("n", "median", "mean", "stdev", "min", "max", "ci95_low", "ci95_high")
        )
        rows.setdefault(key, (run_id, *key, str(record.get("unit") or ""), *figures))
    return list(rows.values())


def _sample_rows(run_id: str, sample_sets: list[results.SampleSet]) -> list[tuple]:
    pooled: dict[tuple, list[float]] = {}
    for sample_set in sample_sets:
        pooled.setdefault(_identity(sample_set.as_dict()), []).extend(
            float(v) for v in sample_set.values
        )
    return [(run_id, *key, len(values), pack_values(values)) for key, values in pooled.items()]
