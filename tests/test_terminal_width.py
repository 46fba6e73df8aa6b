"""Output that reads and fits: three significant digits in a unit that fits; the terminal's
width, never a word broken or a number split from its unit; wide tables split into column
groups that repeat a row's names. Expected values by hand."""

import contextlib
import os
import pty
import struct
import subprocess
import sys
import tempfile
import termios
from fcntl import ioctl

import pytest

from evbench.report import glance, table
from evbench.report.table import format_markdown, format_median_ci
from evbench.report.units import display_scale, format_value, significant

PROBE = "from evbench.report import terminal; print(terminal.width())"


def on_pty(argv: list[str], columns: int, env: dict[str, str]) -> tuple[int, str, str]:
    """`argv` with standard output on a pty of `columns` columns (standard error piped):
    its exit code, what it printed (newlines as '\\n') and its standard error."""
    master, slave = pty.openpty()
    ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    with tempfile.TemporaryFile() as errors:  # a file: a full pipe would block the child
        child = subprocess.Popen(argv, stdout=slave, stderr=errors, env=env)
        os.close(slave)
        said = b""
        with contextlib.suppress(OSError):  # EIO: the child closed its end
            while chunk := os.read(master, 65536):
                said += chunk
        os.close(master)
        code = child.wait(timeout=900)
        errors.seek(0)
        stderr = errors.read().decode(errors="replace")
    return code, said.decode().replace("\r\n", "\n"), stderr


def terminal_env(**extra: str) -> dict[str, str]:
    """os.environ without COLUMNS and LINES (they override the terminal's size), plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return {**env, **extra}


def _width_under_pty(columns: int, env: dict[str, str]) -> int:
    code, said, stderr = on_pty([sys.executable, "-c", PROBE], columns, env)
    assert code == 0, stderr
    return int(said.strip())


def test_the_width_is_the_terminals_else_120_and_wrapping_keeps_numbers_with_units():
    env = terminal_env()
    assert (_width_under_pty(80, env), _width_under_pty(100, env)) == (80, 100)
    assert _width_under_pty(80, {**env, "COLUMNS": "72"}) == 72  # COLUMNS honoured
    for extra in ({}, {"COLUMNS": "72"}):  # not a terminal: today's 120, whatever COLUMNS
        piped = subprocess.run(
            [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60,
            env={**env, **extra},
        )  # fmt: skip
        assert piped.stdout.strip() == "120", piped.stderr
    # 60 a's, " took" (5) and " 113" (4) end at column 69; " µs" would end at 72 > 70:
    # the number goes down with its unit.
    text = "a" * 60 + " took 113 µs; 22 %"
    assert glance.wrap(text, 70) == ["a" * 60 + " took", "113 µs; 22 %"]
    # a word longer than the line is never cut: it gets a line of its own
    long_word = "x" * 90
    assert glance.wrap(f"see {long_word} here", 80) == ["see", long_word, "here"]
    # a '- ' item's next lines stay under its text
    lines = glance.wrap("- " + "word " * 20, 40)
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


KEY_HEADERS = ["Profile", "Metric", "JSON", "Protobuf", "Change", "Verdict"]
SCHEMA_PROFILE = "schema:com.example.ev.v1.BatteryManagementStatus"  # 48 characters


@pytest.mark.parametrize(
    ("rows", "names", "width"),
    [
        # Other columns: JSON 30, Protobuf 12 ("1 of 3 buses"), Change 8 ("+185.8 %"),
        # Verdict 9 ("undecided"), Profile 7 = 66, and 5 separators of 3 = 15: 19 are left
        # for the label, so with its busy mark " *" it keeps 17 characters: its first 14
        # and "...". The table is 100 wide.
        (
            [["seed", "RTT, encode to decoded reply (periodic) *", "1" * 30, "1 of 3 buses",
              "+185.8 %", "undecided"],
             ["seed", "Size", "995.5 B", "277.1 B", "-72.2 %", "fact"]],
            [["seed", "RTT, encode to... *"], ["seed", "Size"]],
            100,
        ),
        # 7 + 33 + 5 + 8 + 6 + 9 = 68 and 15 of separators: 83 fit, nothing shortened
        (
            [["seed", "Jitter, stdev of RTT (periodic) *", "41 µs", "40.5 µs", "-1.0 %",
              "undecided"]],
            [["seed", "Jitter, stdev of RTT (periodic) *"]],
            83,
        ),
        # Other columns 7 + 8 + 10 + 8 = 33, with 4 separators 45; the profile's 48 and a
        # label's 15 with one more separator make 111 > 100: the profile gives way first,
        # down to 100 - 45 - 15 - 3 = 37 characters: "..." and the dotted parts that fit
        # (32), so the table is 45 + 32 + 3 + 15 = 95 wide.
        (
            [[SCHEMA_PROFILE, "Serialization", "32.3 µs", "386 ns", "84x faster", "Protobuf"],
             [SCHEMA_PROFILE, "Deserialization", "31.6 µs", "554 ns", "57x faster",
              "Protobuf"]],
            [["...ev.v1.BatteryManagementStatus", "Serialization"],
             ["...ev.v1.BatteryManagementStatus", "Deserialization"]],
            95,
        ),
    ],
    ids=["wide-cells-shorten-the-label", "fits-as-it-is", "long-profile-before-labels"],
)  # fmt: skip
def test_the_key_tables_names_take_the_width_its_figures_leave(rows, names, width):
    fitted = glance.fit_labels(KEY_HEADERS, rows)
    assert [row[:2] for row in fitted] == names
    assert [row[2:] for row in fitted] == [row[2:] for row in rows]
    lines = table.format_rows(KEY_HEADERS, fitted).splitlines()
    assert max(len(line) for line in lines) == width


@pytest.mark.parametrize(
    ("headers", "rows", "keys", "width", "expected"),
    [
        (["Metric", "Value"], [["size", "3 B"]], 1, 120,
         ["| Metric | Value |", "|---|---|", "| size | 3 B |"]),
        # "| seed | encode | " is 18 characters; with A and B the line is
        # 18 + 20 + 3 + 20 + 2 = 63 > 50: B goes to a second part that repeats the keys
        (["Profile", "Metric", "A", "B"], [["seed", "encode", "x" * 20, "y" * 20]], 2, 50,
         ["| Profile | Metric | A |", "|---|---|---|", f"| seed | encode | {'x' * 20} |", "",
          "The same rows, continued: B.", "",
          "| Profile | Metric | B |", "|---|---|---|", f"| seed | encode | {'y' * 20} |"]),
        # 30 - len("|  | 12 |") = 21 characters for the 39 of the cell: 17 of it, then
        # "…[1]" (4), so the line is exactly 30 wide, and the cell is listed whole
        (["Metric", "n"], [["RTT, encode to decoded reply (periodic)", "12"]], 1, 30,
         ["| Metric | n |", "|---|---|", "| RTT, encode to de…[1] | 12 |", "",
          "Shortened cells:", "", "- [1] RTT, encode to decoded reply (periodic)"]),
    ],
    ids=["narrow-left-as-it-is", "wide-splits-repeating-keys", "cell-too-wide-shortened"],
)  # fmt: skip
def test_report_md_tables_fit_their_width(headers, rows, keys, width, expected):
    assert format_markdown(headers, rows, keys=keys, width=width).splitlines() == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (6004.57, "6000"),  # %.3g would print 6e+03
        (999.7, "1000"),  # rounds up into the next decade: still no exponent
        (57.14, "57.1"),
        (1.1, "1.1"),  # %g drops the trailing zero; the seed's table showed 1.1
        (0.012345, "0.0123"),
        (0.0, "0"),
        (-2.345, "-2.35"),
    ],
)
def test_significant_digits_never_use_an_exponent(value, expected):
    assert significant(value) == expected


@pytest.mark.parametrize(
    ("value", "unit", "metric", "expected"),
    [
        # 6148679.68 B/s / 1024 / 1024 = 5.8638 MiB/s (the "6004.57 KiB/s")
        (6148679.68, "bytes/s", "bandwidth_wire", "5.86 MiB/s"),
        (1200.0, "bytes/s", "bandwidth_payload", "1.17 KiB/s"),  # 1200 / 1024 = 1.171875
        (980.0, "bytes/s", "bandwidth_payload", "980 B/s"),
        # 67792896 B / 1048576 = 64.65 MiB (the "67792896.0 B")
        (67792896.0, "bytes", "rss_max", "64.7 MiB"),
        (995.5, "bytes", "size", "995.5 B"),  # a message size stays in bytes
        (276.0, "bytes", "size", "276.0 B"),
        (3 * 1024**3, "bytes", "size", "3 GiB"),
        (57.14e-6, "s", "encode", "57.1 µs"),
        (1.5e-3, "s", "rtt", "1.5 ms"),
        (1.52e-5, "J", "energy_per_op", "15.2 µJ"),
        (0.00123, "W", "power_mean", "1.23 mW"),
        (1.4e9, "Hz", "freq_min", "1400 MHz"),
        (12.345, "percent", "cpu_util", "12.3 %"),
        (1234.0, "messages/s", "capacity_msgs", "1.23k msg/s"),
        (None, "s", "rtt", "-"),
    ],
)
def test_values_read_in_a_unit_that_fits(value, unit, metric, expected):
    assert format_value(value, unit, metric) == expected


def test_an_interval_shares_the_medians_unit_and_a_series_is_drawn_in_its_typical_unit():
    # 57.14 µs [52.3, 58.5]: the bounds in the median's unit, not repeated.
    assert format_median_ci(57.14e-6, 52.3e-6, 58.5e-6, "s") == "57.1 µs [52.3, 58.5]"
    # a bound in another decade keeps its own unit (999 µs against 1.2 ms)
    assert format_median_ci(1.1e-3, 0.999e-3, 1.2e-3, "s") == "1.1 ms [999 µs, 1.2]"
    assert format_median_ci(1.1e-3, None, None, "s") == "1.1 ms"
    # The median of 5.7e-05, 6.1e-05 and 2.0e-03 s is 6.1e-05 s: microseconds.
    assert display_scale([5.7e-05, 6.1e-05, 2.0e-03], "s") == (1e-06, "µs")
    assert display_scale([0.25, 1.5, 2.0], "s") == (1.0, "s")
    assert display_scale([3.0e-10], "s") == (1e-09, "ns")
    # Sizes stay in bytes below 10 000 B, as the tables show them; above, KiB and up.
    assert display_scale([277.0, 995.0], "bytes") == (1.0, "B")
    assert display_scale([2.5 * 1024**2], "bytes") == (1024.0**2, "MiB")
    assert display_scale([40.0], "percent") == (1.0, "%")
    assert display_scale([3.0], "msg") == (1.0, "msg")
