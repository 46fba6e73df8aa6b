"""Issue 44, item 13: output follows the terminal's width (report/terminal.py), never breaks
a word or a number from its unit, splits a table too wide into column groups repeating
the columns that name a row, and shortens a long profile's name by its start, not the
metric's label. Expected values are counted by hand from the inputs."""

from __future__ import annotations

import os
import pty
import struct
import subprocess
import sys
import termios
from fcntl import ioctl

from evbench.report import glance, table

PROBE = "from evbench.report import terminal; print(terminal.width())"


def _width_under_pty(columns: int, env: dict[str, str]) -> int:
    """terminal.width() in a child whose standard output is a pty of `columns` columns."""
    master, slave = pty.openpty()
    ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    child = subprocess.run(
        [sys.executable, "-c", PROBE], stdout=slave, stderr=subprocess.PIPE, env=env, timeout=60
    )
    os.close(slave)
    said = os.read(master, 1024).decode()
    os.close(master)
    assert child.returncode == 0, child.stderr
    return int(said.strip())


def test_the_width_is_the_terminals_with_columns_honoured_else_120():
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    assert _width_under_pty(80, env) == 80
    assert _width_under_pty(100, env) == 100
    assert _width_under_pty(80, {**env, "COLUMNS": "72"}) == 72  # COLUMNS honoured
    for extra in ({}, {"COLUMNS": "72"}):  # not a terminal: today's 120, whatever COLUMNS
        piped = subprocess.run(
            [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60,
            env={**env, **extra},
        )  # fmt: skip
        assert piped.stdout.strip() == "120", piped.stderr


def test_wrapping_keeps_a_number_with_its_unit_and_words_whole():
    # 60 a's, " took" (5) and " 113" (4) end at column 69; " µs" would end at 72 > 70:
    # the number goes down with its unit.
    text = "a" * 60 + " took 113 µs; 22 %"
    assert glance.wrap(text, 70) == ["a" * 60 + " took", "113 µs; 22 %"]
    # a word longer than the line is never cut: it gets a line of its own
    long_word = "x" * 90
    assert glance.wrap(f"see {long_word} here", 80) == ["see", long_word, "here"]
    # a '- ' item's next lines stay under its text
    item = "- " + "word " * 20
    lines = glance.wrap(item, 40)
    assert all(len(line) <= 40 for line in lines)
    assert all(line.startswith("  word") for line in lines[1:])


HEADERS = ["Profile", "Metric", "JSON", "Protobuf (est.)", "Change (est.)", "Verdict",
           "margin", "p (Holm)", "CI (Holm step)", "n", "detectable"]  # fmt: skip
ROWS = [
    ["seed", "RTT, encode to decoded reply (periodic)", "509 µs [482, 554]", "398 µs",
     "-21.8%", "Protobuf", "50 µs", "1.9e-08", "-126 µs to -98.7 µs", "30 phase pairs",
     "63.8 µs"],
    ["seed", "Size", "995.5 B", "277.1 B", "3.6x smaller", "fact", "-", "-", "-",
     "200/200 values", "-"],
]  # fmt: skip


def test_a_wide_table_is_split_into_column_groups_that_repeat_profile_and_metric():
    whole = table.format_rows(HEADERS, ROWS)
    # column widths (the wider of header and cells): 7 + 39 + 17 + 15 + 13 + 8 + 6 + 8 +
    # 19 + 14 + 10 = 156, and 10 separators of 3: 186 columns, as before without a width
    assert max(len(line) for line in whole.splitlines()) == 186
    split = table.format_rows(HEADERS, ROWS, width=80).splitlines()
    assert max(len(line) for line in split) <= 80
    headers = [line for line in split if line.startswith("Profile ")]
    assert len(headers) > 1  # more than one group
    shown = set()
    for line in headers:
        cells = [cell.strip() for cell in line.split("|")]
        assert cells[:2] == ["Profile", "Metric"]  # each group names the rows
        shown.update(cells[2:])
    assert shown == set(HEADERS[2:])  # every column, once
    for cell in ("509 µs [482, 554]", "-126 µs to -98.7 µs", "200/200 values", "3.6x smaller"):
        assert cell in "\n".join(split)  # nothing cut: every column fits beside the keys
    assert split.count("The same rows, continued: " + ", ".join(
        c.strip() for c in headers[1].split("|")[2:]) + ".") == 1  # fmt: skip


def test_a_long_profile_name_is_shortened_by_its_start_and_labels_stay_whole():
    profile = "schema:com.example.ev.v1.BatteryManagementStatus"  # 48 characters
    headers = ["Profile", "Metric", "JSON", "Protobuf", "Change", "Verdict"]
    rows = [
        [profile, "Serialization", "32.3 µs", "386 ns", "84x faster", "Protobuf"],
        [profile, "Deserialization", "31.6 µs", "554 ns", "57x faster", "Protobuf"],
    ]
    # The other columns: 7 + 8 + 10 + 8 = 33, with 4 separators 45; the profile's 48 and
    # a label's 15 with one more separator make 111 > 100: the profile gives way first,
    # down to 100 - 45 - 15 - 3 = 37 characters: '...' and the dotted parts that fit.
    fitted = glance.fit_labels(headers, rows)
    assert [row[1] for row in fitted] == ["Serialization", "Deserialization"]
    assert {row[0] for row in fitted} == {"...ev.v1.BatteryManagementStatus"}
    lines = table.format_rows(headers, fitted).splitlines()
    assert max(len(line) for line in lines) <= 100
