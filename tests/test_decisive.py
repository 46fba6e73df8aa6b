"""Issue 42: margins in the product's terms, every verdict word on hand-worked data, a
sequential run's looks, and the verdict in one line against comparison.csv.

Walsh intervals worked by hand: for n = 10 paired differences at 95 % the exact
signed-rank test's lower critical count is 8, so the interval runs from the 9th
smallest to the 9th largest of the 55 Walsh averages. For an arithmetic sequence
a + i h (i = 0..9) the averages are a + h (i + j) / 2, and the counts of i + j = 0, 1,
2, 3, 4 are 1, 1, 2, 2, 3 (cumulative 9 at i + j = 4): the interval is
[a + 2 h, a + 7 h]. All ten of one sign give p = 2 / 2**10.
"""

from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path

import pytest

from evbench.report import exports, verdict_line
from evbench_core import comparison, results, sequential
from evbench_core.analysis import margins
from evbench_core.analysis import verdicts as v
from evbench_core.errors import UserError
from evbench_core.results import SampleSet

RUN = Path(__file__).parent / "data" / "runs" / "codec-link-v1"
PERIOD_20HZ = {"phase": "periodic", "rate_hz": 20.0}


def test_margins_parse_and_resolve_in_the_products_terms():
    jitter = dict.fromkeys(("jitter_stdev", "jitter_rfc3550", "rtt_delta_abs"), "50us")
    assert margins.parse(["jitter=50us", "encode=2%"]) == {**jitter, "encode": "2%"}
    # 0.1 % of a 50 ms period is 50 µs; of a core at 20 Hz x 4 streams 0.001 / 80 s
    assert margins.resolve("rtt", PERIOD_20HZ).half_width == pytest.approx(50e-6)
    cpu = margins.resolve("cpu_per_msg_client", PERIOD_20HZ, streams=4)
    assert cpu.scale == margins.DIFFERENCE and cpu.half_width == pytest.approx(12.5e-6)
    # no period (the capacity phase): a relative margin
    assert margins.resolve("rtt_transport", {"phase": "capacity"}).scale == margins.RATIO
    chosen = margins.parse(["jitter=0.2ms"])
    assert margins.resolve("jitter_stdev", PERIOD_20HZ, chosen).half_width == pytest.approx(2e-4)
    for bad in (["jitter"], ["jitter=fast"], ["nothing=5%"], ["rtt=5%core"], ["rtt=0us"]):
        with pytest.raises(UserError):
            margins.parse(bad)


def _differences(first: float, step: float) -> v.Paired:
    values = [first + i * step for i in range(10)]
    return v.Paired("RTT", v.LOWER_IS_BETTER, [0.0] * 10, 400e-6, 400e-6, values)


@pytest.mark.parametrize(
    ("first_us", "step_us", "interval_us", "word"),
    [
        (100, 1, (102, 107), v.BASELINE),  # beyond +50 µs and significant: the baseline wins
        (10, 1, (12, 17), v.NEGLIGIBLE),  # significant, but inside the 50 µs margin
        (-4.5, 1, (-2.5, 2.5), v.EQUAL),  # inside the margin and holds zero
        (30, 5, (40, 65), v.UNDECIDED),  # significant, straddles the margin's edge
    ],
)
def test_every_word_on_hand_worked_differences(first_us, step_us, interval_us, word):
    band = margins.Band(margins.DIFFERENCE, 50e-6, "50 µs")
    (verdict,) = v.decide_family([_differences(first_us * 1e-6, step_us * 1e-6)], bands=[band])
    assert verdict.winner == word
    assert verdict.diff_low == pytest.approx(interval_us[0] * 1e-6)
    assert verdict.diff_high == pytest.approx(interval_us[1] * 1e-6)
    if word != v.EQUAL:
        assert verdict.p_holm == pytest.approx(2 / 1024)


def _link_rtt(stage: int, pairs: int, offset: int, slower: float) -> list[SampleSet]:
    """`pairs` duets of one stage: JSON's replies at 400 µs, Protobuf's `slower` later."""
    sets = []
    for phase in range(offset, offset + pairs):
        params = {**PERIOD_20HZ, "stage": stage}
        wobble = 1e-6 * (phase % 7)
        for codec, level in (("json", 400e-6), ("protobuf", 400e-6 + slower + wobble)):
            sets.append(SampleSet("link", "seed", codec, "rtt", "s", params, [level] * 3, phase))
    return sets


def test_a_sequential_run_decides_at_the_look_that_can_and_spends_its_alpha():
    # alpha(t) = 0.025 + 0.025 ln(1 + (e - 1) t): 0.025 + 0.025 x 0.62013 at t = 1/2
    first = sequential.next_alpha([], 300, 600, final=False)
    assert first == pytest.approx(0.025 + 0.025 * math.log(1 + (math.e - 1) / 2))
    last = sequential.next_alpha([first], 500, 600, final=True)
    assert first + last == pytest.approx(0.05)
    # 5 pairs: the best exact p, 2 / 32, cannot reach the first look's alpha (n too small);
    # 10 more pairs, 200 µs slower each: decided at look 2, the baseline (JSON) wins
    stage_one = _link_rtt(1, 5, 0, 200e-6)
    stage_two = _link_rtt(2, 10, 0, 200e-6)  # the same phase numbers: new replicates
    looked = comparison.compare_looks(stage_one, "json", "protobuf", [first])
    (row,) = [r for r in looked.rows if r.verdict]
    assert row.outcome == v.TOO_SMALL and row.n == 5
    assert sequential.open_rows(looked) == [row]
    both = comparison.compare_looks(stage_one + stage_two, "json", "protobuf", [first, last])
    (row,) = [r for r in both.rows if r.verdict]
    assert row.outcome == v.BASELINE and row.n == 15 and row.verdict.look == 2
    assert both.looks == 2 and both.alpha == pytest.approx(0.05)
    assert sequential.open_rows(both) == []


def test_a_row_keeps_the_verdict_of_the_look_that_decided_it():
    first, last = 0.04, 0.01
    decided = _link_rtt(1, 10, 0, 200e-6)
    later = _link_rtt(2, 40, 0, -200e-6)  # the other way: a later look must not undo it
    both = comparison.compare_looks(decided + later, "json", "protobuf", [first, last])
    (row,) = [r for r in both.rows if r.verdict]
    assert row.outcome == v.BASELINE and row.verdict.look == 1 and row.n == 10


def test_the_one_line_verdict_says_what_comparison_csv_says():
    run = results.load_run(RUN)
    found = comparison.compare_run(run, "json", "protobuf")
    (line,) = verdict_line.lines(found)
    assert len(line) <= verdict_line.WIDTH and line.startswith("seed: Protobuf - ")
    rows = list(csv.DictReader(io.StringIO(exports.comparison_csv(found))))
    by_metric = {(r["metric"], r["phase"]): r for r in rows}
    size = float(by_metric[("size", "")]["estimate"])
    encode = float(by_metric[("encode", "")]["estimate"])
    said = dict(re.findall(r"([\d.]+)x (smaller|faster to encode)", line)[i][::-1] for i in (0, 1))
    # the factors the line prints are the estimates' inverses, rounded as printed
    assert float(said["smaller"]) == pytest.approx(1 / size, abs=0.05)
    assert float(said["faster to encode"]) == pytest.approx(1 / encode, rel=0.01, abs=0.5)
    assert by_metric[("encode", "")]["change"] == f"{1 / encode:.0f}x faster"
    undecided = sum(r["verdict"] in ("undecided", "n too small") for r in rows)
    assert line.endswith(f"{undecided} undecided")
