"""The default output's key table fits 100 columns whatever its cells hold: the label
column gives way to wide figures, changes and a row's busy mark (worked by hand)."""

from __future__ import annotations

from evbench.report import glance, table

HEADERS = ["Profile", "Metric", "JSON", "Protobuf", "Change", "Verdict"]


def test_a_wide_row_shortens_the_labels_to_the_width_left():
    # Other columns: Profile 7, JSON 30, Protobuf 12 ("1 of 3 buses"), Change 8
    # ("+185.8 %"), Verdict 9 ("undecided") = 66, and 5 separators of 3 = 15: 19 are
    # left for the label, so "RTT, encode to decoded reply (periodic)" with its busy
    # mark " *" keeps 17 characters: its first 14, "RTT, encode to", and "...".
    rows = [
        ["seed", "RTT, encode to decoded reply (periodic) *", "1" * 30, "1 of 3 buses",
         "+185.8 %", "undecided"],
        ["seed", "Size", "995.5 B", "277.1 B", "-72.2 %", "fact"],
    ]  # fmt: skip
    fitted = glance.fit_labels(HEADERS, rows)
    assert [row[1] for row in fitted] == ["RTT, encode to... *", "Size"]
    assert [row[2:] for row in fitted] == [row[2:] for row in rows]
    lines = table.format_rows(HEADERS, fitted).splitlines()
    assert max(len(line) for line in lines) == 100


def test_a_table_that_fits_keeps_its_labels():
    rows = [
        ["seed", "Jitter, stdev of RTT (periodic) *", "41 µs", "40.5 µs", "-1.0 %", "undecided"]
    ]
    assert glance.fit_labels(HEADERS, rows) == rows
