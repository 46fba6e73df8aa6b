"""Atheris campaign: the results readers on arbitrary files (run by hand).

    .venv/bin/pip install atheris
    mkdir -p /tmp/results-found
    .venv/bin/python benchmarks/fuzz/results.py -runs=1000000 \\
        /tmp/results-found benchmarks/fuzz/corpus/results

The first byte of an input picks the reader, the rest is the file:
    0 manifest.json / summary.json: results.read_document, then read_records
    1 samples.jsonl: results.read_samples, strict and skipping
    2 SHA256SUMS: results.parse_checksums
Allowed outcomes: what the reader returns, or one of the project's own errors
(FormatError, UserError: both EvbenchError). Anything else is a crash (minimise it
and keep it as a regression case in the results tests; tell the results reader's
owner). Give libFuzzer a scratch directory first, so the seed corpus stays as it is.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import atheris

with atheris.instrument_imports():
    from evbench_core import results
    from evbench_core.errors import EvbenchError

#: One scratch folder per campaign, reused by every run: libFuzzer ends the process
#: without Python's atexit, so a fresh temporary folder each run would pile up.
_SHM = Path("/dev/shm")
SCRATCH = (_SHM if _SHM.is_dir() else Path(tempfile.gettempdir())) / "evbench-fuzz-results"
SCRATCH.mkdir(exist_ok=True)


def _document(data: bytes) -> None:
    path = SCRATCH / "summary.json"
    path.write_bytes(data)
    document = results.read_document(path)
    if not isinstance(document, dict):
        raise AssertionError(f"read_document returned {type(document).__name__}")
    records = results.read_records(document, path)
    if not all(isinstance(record, dict) for record in records):
        raise AssertionError("read_records returned a record that is not an object")


def _samples(data: bytes) -> None:
    (SCRATCH / results.SAMPLES).write_bytes(data)
    problems: list[str] = []
    skipped = list(results.read_samples(SCRATCH, errors="skip", problems=problems))
    strict = list(results.read_samples(SCRATCH))  # raises FormatError when a line is bad
    if problems or len(strict) != len(skipped):
        raise AssertionError("the strict reader accepted a line the tolerant one skipped")


def _checksums(data: bytes) -> None:
    for digest, name in results.parse_checksums(data, "fuzz"):
        if name.startswith("/") or ".." in name.split("/") or len(digest) != 64:
            raise AssertionError(f"accepted listing entry {digest!r} {name!r}")


READERS = (_document, _samples, _checksums)


def test_one_input(data: bytes) -> None:
    if not data:
        return
    try:
        READERS[data[0] % len(READERS)](data[1:])
    except EvbenchError:
        return


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
