"""Atheris campaign: the regression criteria reader on arbitrary files (run by hand).

    .venv/bin/pip install atheris
    mkdir -p /tmp/criteria-found
    .venv/bin/python benchmarks/fuzz/criteria.py -runs=1000000 \\
        /tmp/criteria-found benchmarks/fuzz/corpus/criteria

Each input is written to a scratch file and read with evbench.report.criteria.load.
Allowed outcomes: Criteria whose thresholds are finite, non-negative floats; or
UserError. Anything else is a crash (minimise it and keep it in
tests/test_criteria_untrusted.py). Give libFuzzer a scratch directory first, so
the seed corpus in the repository stays as it is.
"""

from __future__ import annotations

import math
import sys
import tempfile
from pathlib import Path

import atheris

with atheris.instrument_imports():
    from evbench.report import criteria
    from evbench_core.errors import UserError

#: One scratch folder per campaign, reused by every run: libFuzzer ends the process
#: without Python's atexit, so a fresh temporary folder each run would pile up.
_SHM = Path("/dev/shm")
SCRATCH = (_SHM if _SHM.is_dir() else Path(tempfile.gettempdir())) / "evbench-fuzz-criteria"
SCRATCH.mkdir(exist_ok=True)
FILE = SCRATCH / "criteria.json"


def test_one_input(data: bytes) -> None:
    FILE.write_bytes(data)
    try:
        loaded = criteria.load(FILE)
    except UserError:
        return
    for value in (loaded.default_percent, *loaded.metrics.values()):
        if not (isinstance(value, float) and math.isfinite(value) and value >= 0):
            raise AssertionError(f"accepted threshold {value!r}")


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
