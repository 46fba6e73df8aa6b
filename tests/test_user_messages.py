"""Messages that say what to do: a typo gets the nearest flag, an impossible value the
option and its range, an old results format the way to read it; counts and facts read
as English; a progress line drawn over a longer one leaves nothing behind (a real pty)."""

from __future__ import annotations

import logging
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evbench.boards.serial import board as serial_board
from evbench.report.answer import answer_lines
from evbench.report.units import counted
from evbench_core import results
from evbench_core.comparison import compare
from evbench_core.errors import FormatError
from evbench_core.results import SampleSet

EVBENCH = [sys.executable, "-m", "evbench"]


def _evbench(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([*EVBENCH, *argv], capture_output=True, text=True, timeout=120)


def test_a_mistyped_flag_gets_the_nearest_one_and_an_impossible_rate_its_range(tmp_path):
    done = _evbench("run", "--quik", "--out", str(tmp_path / "run"))
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "evbench: error: unrecognized arguments: --quik",
        "evbench: hint: did you mean --quick for --quik? (see 'evbench --help')",
    ]
    assert not (tmp_path / "run").exists()
    done = _evbench("run", "--rate", "0", "--out", str(tmp_path / "run"))
    assert done.returncode == 2
    error, hint = done.stderr.splitlines()
    assert error.startswith("evbench: error: --rate: ") and "at least 0.01, not 0.0" in error
    assert hint == (
        "evbench: hint: give --rate 0.01 or more, or leave it out for the default (see --help)"
    )


@pytest.mark.parametrize(
    ("version", "says", "never"),
    [
        (0, "an older evbench wrote this run (format 0)", "update evbench"),
        ("0.9", "an older evbench wrote this run (format 0.9)", "update evbench"),
        (2, "a newer evbench wrote this run (format 2): update evbench", "older"),
        ("one", "damaged or not written by evbench", "update evbench"),
    ],
)
def test_a_results_format_it_cannot_read_gets_a_hint_for_its_age(version, says, never):
    with pytest.raises(FormatError) as raised:
        results.check_version({"format": "evbench-results", "version": version}, Path("m.json"))
    assert says in raised.value.hint and never not in raised.value.hint


COUNTS = [
    (1, "processes", "1 process"), (8, "processes", "8 processes"),
    (1, "phase pairs", "1 phase pair"), (1, "phases/codec", "1 phase/codec"),
    (1, "phases per codec", "1 phase per codec"), (0, "values", "0 values"),
]  # fmt: skip


@pytest.mark.parametrize(("n", "what", "said"), COUNTS)
def test_a_count_of_one_is_singular(n, what, said):
    assert counted(n, what) == said


def _sizes(profile: str, json_bytes: float, protobuf_bytes: float) -> list[SampleSet]:
    sizes = {"json": json_bytes, "protobuf": protobuf_bytes}
    return [
        SampleSet("codec", profile, codec, "size", "bytes", {"payloads": 3}, [size] * 3, worker)
        for codec, size in sizes.items()
        for worker in range(2)
    ]


def test_equal_sizes_are_said_equal_and_different_ones_by_how_much():
    lines = answer_lines(compare(_sizes("a", 100, 100) + _sizes("b", 100, 80), "json", "protobuf"))
    assert lines == [
        "a: Facts, exact: Protobuf's Size equal (100.0 B for both).",
        # (80 - 100) / 100 = -20 %, worked by hand
        "b: Facts, exact: Protobuf's Size smaller by 20.0 % (80.0 B against 100.0 B).",
    ]


def _screen(raw: str) -> str:
    """What a terminal shows on the last line after carriage returns overwrite it."""
    line: list[str] = []
    column = 0
    for char in raw.replace("\r\n", "\n").split("\n")[-1]:
        if char == "\r":
            column = 0
            continue
        if column < len(line):
            line[column] = char
        else:
            line.append(char)
        column += 1
    return "".join(line).rstrip()


def _drain(controller: int) -> str:
    """All the terminal has received (a pty hands it over one write at a time)."""
    chunks = []
    while select.select([controller], [], [], 0.5)[0]:
        chunks.append(os.read(controller, 4096))
    return b"".join(chunks).decode()


def test_a_shorter_progress_line_leaves_no_residue_of_the_longer_one(monkeypatch, caplog):
    caplog.set_level(logging.WARNING)  # not --quiet (an earlier test may have set it)
    controller, terminal = pty.openpty()
    with os.fdopen(terminal, "w", closefd=True) as stream:
        monkeypatch.setattr(sys, "stderr", stream)
        show = serial_board._show_progress("sending", "agent.tar")
        show(10, 100, 10.0)  # "... about 10 s left"
        time.sleep(0.25)  # lines on a terminal come at most every 0.2 s
        show(20, 100, 9.0)  # "... about 9 s left": one character shorter
        stream.flush()
        raw = _drain(controller)
    os.close(controller)
    assert _screen(raw) == "evbench: sending agent.tar: 20/100 bytes, about 9 s left"
