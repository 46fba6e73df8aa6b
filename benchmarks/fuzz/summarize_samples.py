"""Atheris campaign: summaries rebuilt from raw samples (run by hand).

    .venv/bin/pip install atheris
    mkdir -p /tmp/summarize_samples-found
    .venv/bin/python benchmarks/fuzz/summarize_samples.py -runs=1000000 \\
        /tmp/summarize_samples-found benchmarks/fuzz/corpus/summarize_samples

What `evbench report` and `compare` do with a run interrupted before its summary.json.
The first byte of an input picks what the rest is:
    even: samples.jsonl's bytes: results.read_samples (skipping bad lines, as the
          report does), then results.summarize of what it read;
    odd:  a list of floats (atheris' FuzzedDataProvider, with 0, -0, the extremes of
          the float range, subnormals, inf and nan mixed in) for stats.summarize itself.
Allowed outcomes: records (or a Summary) whose figures are ordered (min <= median <=
max, min <= mean <= max for finite values), or the project's own errors (EvbenchError);
stats.summarize may refuse an empty sample with ValueError, its documented contract.
Anything else is a crash (minimise it and keep it in tests/test_readers_untrusted.py).
"""

from __future__ import annotations

import math
import sys
import tempfile
from pathlib import Path

import atheris

with atheris.instrument_imports():
    from evbench_core import results
    from evbench_core.analysis import stats
    from evbench_core.errors import EvbenchError

_SHM = Path("/dev/shm")
SCRATCH = (_SHM if _SHM.is_dir() else Path(tempfile.gettempdir())) / "evbench-fuzz-summarize"
SCRATCH.mkdir(exist_ok=True)
SPECIAL = [0.0, -0.0, 1e308, -1e308, 1.7976931348623157e308, 5e-324, 1e100, -1e100]


def _ordered(summary: dict) -> None:
    low, middle, high, mean = summary["min"], summary["median"], summary["max"], summary["mean"]
    if not low <= middle <= high:
        raise AssertionError(f"min {low} median {middle} max {high}")
    # the mean of finite values lies within their range (up to rounding)
    if math.isfinite(mean) and not low - abs(low) * 1e-12 <= mean <= high + abs(high) * 1e-12:
        raise AssertionError(f"mean {mean} outside {low}..{high}")
    stdev = summary["stdev"]
    if stdev is not None and not (stdev >= 0 or math.isnan(stdev)):
        raise AssertionError(f"stdev {stdev}")


def _from_samples(raw: bytes) -> None:
    (SCRATCH / results.SAMPLES).write_bytes(raw)
    problems: list[str] = []
    sets = list(results.read_samples(SCRATCH, errors="skip", problems=problems))
    for record in results.summarize(sets):
        _ordered(record)
        if record["n"] < 1:
            raise AssertionError(f"a record of {record['n']} values")


def _floats(data: atheris.FuzzedDataProvider) -> None:
    values = []
    for _ in range(data.ConsumeIntInRange(0, 200)):
        if data.ConsumeBool():
            values.append(data.PickValueInList(SPECIAL))
        else:
            values.append(data.ConsumeRegularFloat())
    try:
        summary = stats.summarize(values).as_dict()
    except ValueError:
        if values:
            raise
        return
    _ordered(summary)


def test_one_input(raw: bytes) -> None:
    if not raw:
        return
    try:
        if raw[0] % 2:
            _floats(atheris.FuzzedDataProvider(raw[1:]))
        else:
            _from_samples(raw[1:])
    except EvbenchError:
        return


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
