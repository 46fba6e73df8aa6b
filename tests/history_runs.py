"""Runs for the history tests: `night` copies the committed sample run (tests/data/runs/
core-v1) under a new id and time, its timings scaled, re-summarized and re-checksummed as
the agent would; `stored` puts runs in a store; `step_p` is the step test's p, worked apart.
"""

import datetime as dt
import json
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np
from conftest import ROOT

from evbench.history import open_store, parse_url
from evbench.history.indexing import index_run
from evbench_core import results

CORE_V1 = ROOT / "tests" / "data" / "runs" / "core-v1"
TIMING_METRICS = ("encode", "decode", "decode_access")


def night(out: Path, number: int, factor: float = 1.0, platform: dict[str, Any] | None = None,
          board: str = "name:bench-1", source: Path = CORE_V1, machine_cpu: float | None = None,
          codec_params: dict[str, Any] | None = None, codec_factors: dict[str, float] | None = None,
          operation_factors: dict[tuple[str, str], float] | None = None,
          copied_codecs: dict[str, str] | None = None) -> Path:  # fmt: skip
    """Night `number` (a day after 2026-11-01 per number) as a run directory in `out`.
    `codec_factors`, `operation_factors`: further factors on one codec's or one (codec,
    metric)'s timings; `codec_params`: params added to every codec record (a payload digest,
    say); `machine_cpu`: the codec phase's machine CPU telemetry (a context metric), in %;
    `copied_codecs`: {new: existing}: a codec more, measured as the existing one was."""
    directory = out / f"night-{number:02d}"
    shutil.copytree(source, directory)
    manifest = json.loads((directory / results.MANIFEST).read_text())
    run_id = f"2026{number:04d}T020000Z-{number:06x}"
    start = dt.datetime(2026, 11, 1, 2, tzinfo=dt.timezone.utc) + dt.timedelta(days=number)
    manifest.update(run_id=run_id, start_time=start.isoformat(timespec="milliseconds"))
    manifest["board_identity"] = {"id": board, "source": "--board-name", "place": None}
    manifest["platform"].update(platform or {})
    results.write_json(directory / results.MANIFEST, manifest)
    lines = []
    sample_sets = [
        json.loads(line) for line in (directory / results.SAMPLES).read_text().splitlines()
    ]
    for name, like in (copied_codecs or {}).items():
        sample_sets += [{**item, "codec": name} for item in sample_sets if item["codec"] == like]
    for sample_set in sample_sets:
        if sample_set["metric"] in TIMING_METRICS:
            scale = factor * (codec_factors or {}).get(sample_set["codec"], 1.0)
            scale *= (operation_factors or {}).get((sample_set["codec"], sample_set["metric"]), 1.0)
            sample_set["values"] = [v * scale for v in sample_set["values"]]
        if codec_params and sample_set["suite"] == "codec":
            sample_set["params"] = {**sample_set["params"], **codec_params}
        lines.append(json.dumps(sample_set) + "\n")
    if machine_cpu is not None:
        telemetry = {"suite": "telemetry", "profile": "seed", "codec": None, "metric": "cpu_util",
                     "unit": "percent", "params": {"phase": "codec", "interval_s": 1.0},
                     "worker": 0, "values": [machine_cpu] * 7}  # fmt: skip
        lines.append(json.dumps(telemetry) + "\n")
    (directory / results.SAMPLES).write_text("".join(lines))
    records = results.summarize(results.read_samples(directory))
    summary = {"format": results.FORMAT, "version": results.VERSION, "run_id": run_id,
               "partial": False, "records": records}  # fmt: skip
    results.write_json(directory / results.SUMMARY, summary)
    results.write_checksums(directory)
    (directory / results.COMPLETE).write_text(f"{run_id}\n")
    return directory


def stored(path: Path, directories: list[Path]) -> Any:
    """A store at `path` holding these run directories, added in turn: its parsed URL."""
    url = parse_url(str(path))
    with open_store(url) as store:
        for directory in directories:
            store.add(index_run(directory))
    return url


def step_p(logs: Any, first: int, walk_variance: float = 0.0, walk_df: int = 0) -> float:
    """One-sided p (higher is worse) of d in y_t = a + b t + d [t >= first], by least squares
    (numpy) and Student's t tail (SciPy), never by the module under test; its error the
    larger of the fit's own and sqrt(walk_variance x w' min(i, j) w)."""
    from scipy import stats

    y = np.asarray(logs, dtype=float)
    t = np.arange(len(y))
    x = np.column_stack([np.ones(len(y)), t, t >= first])
    w = np.linalg.inv(x.T @ x) @ x.T
    coef, rss, *_ = np.linalg.lstsq(x, y, rcond=None)
    df = len(y) - 3
    error = math.sqrt(rss[0] / df * (w[2] @ w[2]))
    walk = math.sqrt(walk_variance * (w[2] @ np.minimum.outer(t, t) @ w[2]))
    if walk > error:
        error, df = walk, walk_df
    return stats.t.sf(coef[2] / error, df)
