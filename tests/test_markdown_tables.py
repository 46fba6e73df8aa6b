"""report.md's tables fit 120 columns (issue 31): a wide table splits into parts that
repeat the columns naming a row; a cell too wide even then is shortened and listed whole.
Expected lines written out by hand."""

from __future__ import annotations

from evbench.report.table import format_markdown


def test_a_narrow_table_is_left_as_it_is():
    assert format_markdown(["Metric", "Value"], [["size", "3 B"]], keys=1) == (
        "| Metric | Value |\n|---|---|\n| size | 3 B |"
    )


def test_a_wide_table_splits_and_repeats_its_key_columns():
    headers = ["Profile", "Metric", "A", "B"]
    rows = [["seed", "encode", "x" * 20, "y" * 20]]
    # "| seed | encode | " is 18 characters; with A and B the line is 18 + 20 + 3 + 20 + 2 = 63
    text = format_markdown(headers, rows, keys=2, width=50)
    assert text.splitlines() == [
        "| Profile | Metric | A |",
        "|---|---|---|",
        "| seed | encode | xxxxxxxxxxxxxxxxxxxx |",
        "",
        "The same rows, continued: B.",
        "",
        "| Profile | Metric | B |",
        "|---|---|---|",
        "| seed | encode | yyyyyyyyyyyyyyyyyyyy |",
    ]
    assert all(len(line) <= 50 for line in text.splitlines())


def test_a_cell_too_wide_alone_is_shortened_with_a_legend():
    label = "RTT, encode to decoded reply (periodic)"  # 39 characters
    text = format_markdown(["Metric", "n"], [[label, "12"]], keys=1, width=30)
    # 30 - len("|  | 12 |") = 21 characters for the cell: 17 of the label, then "…[1]"
    # (4), so the line is exactly 30 wide
    assert text.splitlines() == [
        "| Metric | n |",
        "|---|---|",
        "| RTT, encode to de…[1] | 12 |",
        "",
        "Shortened cells:",
        "",
        f"- [1] {label}",
    ]
