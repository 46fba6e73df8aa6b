"""Atheris campaign: the bmap parser on arbitrary files (run by hand).

    .venv/bin/pip install atheris
    mkdir -p /tmp/bmap-found
    .venv/bin/python benchmarks/fuzz/bmap.py -runs=1000000 \\
        /tmp/bmap-found benchmarks/fuzz/corpus/bmap

Each input is written to a scratch file (in /dev/shm when there is one) and read
with evbench.flash.bmap.parse_bmap. Allowed outcomes: a Bmap whose ranges lie
inside the image, in order, and add up to its mapped count; or one of the project's
own errors (UserError, CheckFailed). Anything else is a crash: atheris stops and
saves the input; minimise it (-minimize_crash=1 -runs=100000 INPUT) and keep it in
tests/test_flash_bmap.py as a regression case.

The seed corpus holds bmaptool-format files of versions 1.2, 1.3 and 2.0 whose file
checksums are correct, so mutations reach the fields behind the checksum check too.
libFuzzer adds what it finds to the FIRST corpus directory: give it a scratch one,
so the seed corpus in the repository stays as it is.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import atheris

with atheris.instrument_imports():
    from evbench.flash.bmap import parse_bmap
    from evbench_core.errors import EvbenchError

#: One scratch folder per campaign, reused by every run: libFuzzer ends the process
#: without Python's atexit, so a fresh temporary folder each run would pile up.
_SHM = Path("/dev/shm")
SCRATCH = (_SHM if _SHM.is_dir() else Path(tempfile.gettempdir())) / "evbench-fuzz-bmap"
SCRATCH.mkdir(exist_ok=True)
FILE = SCRATCH / "input.bmap"


def test_one_input(data: bytes) -> None:
    FILE.write_bytes(data)
    try:
        bmap = parse_bmap(FILE)
    except EvbenchError:
        return
    previous = -1
    for block_range in bmap.ranges:
        if not previous < block_range.first <= block_range.last < bmap.blocks_count:
            raise AssertionError(f"accepted range {block_range} after block {previous}")
        previous = block_range.last
    if sum(r.blocks for r in bmap.ranges) != bmap.mapped_blocks:
        raise AssertionError("accepted ranges that disagree with MappedBlocksCount")


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
