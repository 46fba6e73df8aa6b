"""Readable values: three significant digits in a unit that fits, memory in MiB.

Expected strings are worked out by hand from the stored SI values (shown beside
each case), not from the module's tables.
"""

from __future__ import annotations

import pytest

from evbench.report.table import format_median_ci
from evbench.report.units import display_scale, format_value, significant


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


def test_an_interval_shares_the_medians_unit():
    # 57.14 µs [52.3, 58.5]: the bounds in the median's unit, not repeated.
    assert format_median_ci(57.14e-6, 52.3e-6, 58.5e-6, "s") == "57.1 µs [52.3, 58.5]"
    # A bound in another decade keeps its own unit (999 µs against 1.2 ms).
    assert format_median_ci(1.1e-3, 0.999e-3, 1.2e-3, "s") == "1.1 ms [999 µs, 1.2]"
    assert format_median_ci(1.1e-3, None, None, "s") == "1.1 ms"


def test_a_series_is_drawn_in_the_unit_its_typical_value_reads_best_in():
    # The median of 5.7e-05, 6.1e-05 and 2.0e-03 s is 6.1e-05 s: microseconds.
    assert display_scale([5.7e-05, 6.1e-05, 2.0e-03], "s") == (1e-06, "µs")
    assert display_scale([0.25, 1.5, 2.0], "s") == (1.0, "s")
    assert display_scale([3.0e-10], "s") == (1e-09, "ns")
    # Sizes stay in bytes below 10 000 B, as the tables show them; above, KiB and up.
    assert display_scale([277.0, 995.0], "bytes") == (1.0, "B")
    assert display_scale([2.5 * 1024**2], "bytes") == (1024.0**2, "MiB")
    assert display_scale([40.0], "percent") == (1.0, "%")
    assert display_scale([3.0], "msg") == (1.0, "msg")
