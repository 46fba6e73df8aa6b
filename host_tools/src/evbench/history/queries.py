"""What the store answers: runs, one metric over time, everything as CSV."""

from __future__ import annotations

import csv
import io
from typing import Any

from evbench.history.indexing import base_metric
from evbench.history.store import Store
from evbench.report.table import format_median_ci
from evbench_core.errors import UserError

RUN_HEADERS = ("Run", "Started", "Board", "Source", "Quick", "Status", "Image", "Kernel",
               "Python", "Protobuf", "Agent")  # fmt: skip
EXPORT_COLUMNS = (
    "run_id", "board", "board_source", "place", "start_time", "quick", "partial", "suite",
    "profile", "codec", "metric", "unit", "n", "median", "ci95_low", "ci95_high", "mean",
    "stdev", "min", "max", "image", "kernel", "python", "protobuf", "protobuf_backend",
    "agent", "directory",
)  # fmt: skip


def run_cells(runs: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    rows = [
        [
            r["run_id"],
            r["start_time"],
            r["board"],
            r["board_source"],
            "yes" if r["quick"] else "no",
            "PARTIAL" if r["partial"] else "complete",
            r["image"] or "-",
            r["kernel"] or "-",
            r["python"] or "-",
            r["protobuf"] or "-",
            r["agent"] or "-",
        ]
        for r in runs
    ]
    return list(RUN_HEADERS), rows


def find_series(
    store: Store, board: str, metric: str, codec: str, profile: str | None, suite: str | None
) -> tuple[str, str, str, str]:
    """The one series of `board` these name; several or none is a clear error."""
    keys = store.series_keys(board)
    if not keys:
        raise UserError(f"no runs of the board {board!r} in the store", hint="evbench history list")
    matching = [
        k
        for k in keys
        if (k[3] == metric or (base_metric(k[3]) == metric and "[" not in metric))
        and k[2] == codec
        and (profile is None or k[1] == profile)
        and (suite is None or k[0] == suite)
    ]
    if not matching:
        raise UserError(
            f"no series {metric} of codec {codec}"
            + (f", profile {profile}" if profile else "")
            + f" for the board {board!r}",
            hint="the board has: "
            + ", ".join(sorted({f"{k[1]}/{k[2]}/{k[3]}" for k in keys})[:20]),
        )
    if len(matching) > 1:
        raise UserError(
            f"{len(matching)} series match: " + ", ".join("/".join(k) for k in matching),
            hint="name one with --profile and --suite, or the metric with its [qualifier]",
        )
    return matching[0]


def series_cells(
    store: Store, board: str, key: tuple[str, str, str, str]
) -> tuple[list[str], list[list[str]]]:
    """One metric over time: date, run, median [95 % CI] (n), what changed since the last."""
    from evbench.history.run_differences import version_changes
    from evbench.history.trends import comparable_identity, record_params

    points = store.series(board, key, include_partial=True)
    # Nights whose payloads or settings differ are separate series (as `check` and the
    # trend page keep them): a column says which row is of which, by what differs.
    series = _series_labels([comparable_identity(record_params(p.record)) for p in points])
    rows: list[list[str]] = []
    previous: dict[str, Any] | None = None
    for point, label in zip(points, series, strict=True):
        record, run = point.record, point.run
        moved = version_changes(previous, run) if previous else {}
        rows.append(
            [
                run["start_time"],
                run["run_id"],
                format_median_ci(
                    record["median"], record["ci95_low"], record["ci95_high"], record["unit"]
                )
                + f" (n={record['n']})",
                "PARTIAL" if run["partial"] else "",
                "; ".join(f"{k} {a} -> {b}" for k, (a, b) in moved.items()),
                *([label] if label else []),
            ]
        )
        if not run["partial"]:
            previous = run
    headers = ["Started", "Run", "Median [95% CI] (n)", "Status", "Changed since the last"]
    return headers + (["Series (not comparable across)"] if any(series) else []), rows


def _series_labels(identities: list[str]) -> list[str]:
    """Each night's series by the settings that tell the series apart (payloads=50);
    all empty when the nights are one series."""
    import json

    if len(set(identities)) < 2:
        return ["" for _ in identities]
    params = [json.loads(identity) for identity in identities]
    keys = sorted({key for each in params for key in each})
    differing = [key for key in keys if len({str(each.get(key)) for each in params}) > 1]
    return [", ".join(f"{key}={each.get(key)}" for key in differing) for each in params]


def export_csv(store: Store, board: str | None = None, since: str | None = None) -> str:
    """Every record of every run (of `board`, since `since`), one line each, with its run."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(EXPORT_COLUMNS)
    for run in store.runs(board=board, since=since):
        for record in store.records(run["run_id"]):
            merged = {**run, **record}
            writer.writerow(["" if merged[c] is None else merged[c] for c in EXPORT_COLUMNS])
    return out.getvalue()
