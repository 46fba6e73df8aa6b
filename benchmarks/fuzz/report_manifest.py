"""Atheris campaign: the report's reading of a manifest (run by hand).

    .venv/bin/pip install atheris
    mkdir -p /tmp/report_manifest-found
    .venv/bin/python benchmarks/fuzz/report_manifest.py -runs=1000000 \\
        /tmp/report_manifest-found benchmarks/fuzz/corpus/report_manifest

The first byte of an input picks what the rest is:
    even: manifest.json's bytes, read as `evbench report` reads them
          (results.read_document, then report.manifest_shape.checked);
    odd:  edits of the committed run's manifest (tests/data/runs/core-v1): up to 4
          fields, at any depth the report reads, set to a value of another type
          (none, bool, whole numbers up to 4000 digits, floats with inf and nan, text,
          lists, objects) by atheris' FuzzedDataProvider.
Either manifest then goes through every part of the report that reads one: the run's
context rows, the partial headline and section, the compared codecs, the bus budget's
rate, the comparison's labels and the JUnit timestamp, beside the committed run's
records. Allowed outcomes: what they return, or the project's own errors (EvbenchError).
Anything else is a crash (minimise it and keep it in tests/test_readers_untrusted.py).
"""

from __future__ import annotations

import copy
import json
import sys
import tempfile
from pathlib import Path

import atheris

with atheris.instrument_imports():
    from evbench.report import (
        bus_budget,
        compare,
        context,
        exports,
        headline,
        manifest_shape,
        sections,
    )
    from evbench_core import results
    from evbench_core.errors import EvbenchError

RUN = Path(__file__).resolve().parents[2] / "tests" / "data" / "runs" / "core-v1"
BASE = json.loads((RUN / results.MANIFEST).read_text())
RECORDS = results.read_records(results.read_document(RUN / results.SUMMARY), RUN / results.SUMMARY)
_SHM = Path("/dev/shm")
SCRATCH = (_SHM if _SHM.is_dir() else Path(tempfile.gettempdir())) / "evbench-fuzz-manifest"
SCRATCH.mkdir(exist_ok=True)


def _paths(value, prefix=()):
    """Every key path of the committed manifest, and the fields the report reads."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*prefix, key)
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield (*prefix, index)
            yield from _paths(item, (*prefix, index))


PATHS = [
    *sorted(set(_paths(BASE)), key=str),
    ("reason",),
    ("aa",),
    ("aa", "codec"),
    ("telemetry", "sensors"),
    ("telemetry", "sensors", "absent"),
    ("spec", "schema"),
    ("spec", "schema", "files"),
    ("spec", "schema", "samples"),
    ("spec", "schema", "generator"),
    ("spec", "link_rate_hz"),
    ("platform", "image"),
]


def _value(data: atheris.FuzzedDataProvider, depth: int = 0):
    kind = data.ConsumeIntInRange(0, 8 if depth < 3 else 5)
    if kind == 0:
        return None
    if kind == 1:
        return data.ConsumeBool()
    if kind == 2:
        return data.ConsumeInt(data.ConsumeIntInRange(1, 16))
    if kind == 3:
        return int("9" * data.ConsumeIntInRange(1, 4000))
    if kind == 4:
        return data.PickValueInList([float("inf"), float("-inf"), float("nan"), 1e308, -0.0])
    if kind == 5:
        return data.ConsumeUnicodeNoSurrogates(data.ConsumeIntInRange(0, 64))
    if kind in (6, 7):
        return [_value(data, depth + 1) for _ in range(data.ConsumeIntInRange(0, 3))]
    return {
        data.ConsumeUnicodeNoSurrogates(8): _value(data, depth + 1)
        for _ in range(data.ConsumeIntInRange(0, 3))
    }


def _edited(data: atheris.FuzzedDataProvider) -> dict:
    manifest = copy.deepcopy(BASE)
    for _ in range(data.ConsumeIntInRange(1, 4)):
        path = data.PickValueInList(PATHS)
        holder = manifest
        for step in path[:-1]:
            try:
                holder = holder[step]
            except (KeyError, IndexError, TypeError):
                holder = None
                break
        last = path[-1]
        if isinstance(holder, dict) or (
            isinstance(holder, list) and isinstance(last, int) and last < len(holder)
        ):
            holder[last] = _value(data)
    return manifest


def _read(raw: bytes) -> dict:
    path = SCRATCH / results.MANIFEST
    path.write_bytes(raw)
    return results.read_document(path)


def _render(manifest: dict) -> None:
    problems: list[str] = []
    shaped = manifest_shape.checked(manifest, problems)
    run = context.RunContext(RUN, shaped, RECORDS, [], problems)
    for what, value in context.context_rows(run):
        if not isinstance(what, str) or not isinstance(value, str):
            raise AssertionError(f"a context row that is not text: {what!r} {value!r}")
    _ = run.partial, run.run_id, run.codecs()
    headline.partial_headline(run.manifest, run.missing, run.problems)
    sections.partial_section(run)
    sections.compared_codecs(run)
    bus_budget.rate_of(run.manifest)
    compare.labels([run, run])
    exports.junit_xml(run.run_id, RECORDS[:1], timestamp=run.manifest.get("start_time"))


def test_one_input(raw: bytes) -> None:
    if not raw:
        return
    try:
        edits = raw[0] % 2
        _render(_edited(atheris.FuzzedDataProvider(raw[1:])) if edits else _read(raw[1:]))
    except EvbenchError:
        return


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
