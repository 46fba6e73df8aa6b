"""benchmarks/verdict_calibration.py's own logic (the real calibration is run by hand): its
Clopper-Pearson bounds against SciPy's beta quantiles, its judging on synthetic runs.
"""

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from scipy.stats import beta

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "verdict_calibration.py"

#: These experiments' known answers were worked against a 2 % relative band on every
#: row (issue 27): the margins the script passes on, as a run's --margin would.
RELATIVE = ["--margin", "rtt=2%", "--margin", "cpu=2%", "--margin", "codec=2%"]


def _load():
    spec = importlib.util.spec_from_file_location("verdict_calibration", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


calibration = _load()


@pytest.mark.parametrize("k,n", [(0, 5), (5, 5), (3, 60), (1, 20), (18, 20), (27, 30)])
def test_clopper_pearson_bounds_match_the_beta_quantiles(k, n):
    low, high = calibration.clopper_pearson(k, n)
    assert low == pytest.approx(beta.ppf(0.025, k, n - k + 1) if k else 0.0, abs=1e-9)
    assert high == pytest.approx(beta.ppf(0.975, k + 1, n - k) if k < n else 1.0, abs=1e-9)
    upper = beta.ppf(0.95, k + 1, n - k) if k < n else 1.0
    assert calibration.upper_bound(k, n) == pytest.approx(upper, abs=1e-9)
    lower = beta.ppf(0.05, k, n - k + 1) if k else 0.0
    assert calibration.lower_bound(k, n) == pytest.approx(lower, abs=1e-9)


def _synthetic(tmp_path, *argv: str) -> tuple[int, dict]:
    """The script on synthetic runs: its exit status and its JSON summary."""
    out = tmp_path / "summary.json"
    code = calibration.main(["--synthetic", *argv, "--json", str(out)])
    return code, json.loads(out.read_text())


def test_synthetic_runs_with_known_answers_are_judged_right(tmp_path, capsys):
    only = "codec-aa,codec-slow,link-delay,link-aa,quick,link-hold-beyond,link-delay-hog"
    code, summary = _synthetic(tmp_path, "--runs", "2", "--only", only, *RELATIVE)
    assert summary["codec-aa"]["events"] == 0  # identical arms: no winner
    assert summary["codec-slow"]["events"] == 2  # 10 % slower: loser in every timed row
    assert summary["link-delay"]["events"] == 2  # 50 us later replies: RTT row loser
    assert summary["link-aa"]["events"] == 0  # identical arms, paired phases: no winner
    assert summary["quick"]["events"] == 2  # 20x faster encode: protobuf wins
    rows = summary["codec-aa"]["rows"]["Serialization"]
    assert rows["equal"] + rows["undecided"] == 2 and rows["baseline"] + rows["candidate"] == 0
    # two runs cannot bound a false-winner rate below 10 %: the target is missed, exit 3
    assert summary["codec-aa"]["meets_target"] is False and code == 3
    assert "Clopper-Pearson" in capsys.readouterr().out
    # Without --hog only link-delay-hog runs beside the one-core hog; with it, every one.
    assert summary["link-hold-beyond"]["beside_hog"] is False
    assert summary["link-delay-hog"]["beside_hog"] is True
    _code, summary = _synthetic(tmp_path, "--only", "link-hold-beyond", "--runs", "2", "--hog")
    assert summary["link-hold-beyond"]["beside_hog"] is True


def test_link_experiments_at_full_counts_what_rows_detect_and_holds_by_margin(tmp_path, capsys):
    """20 synthetic runs each of link A/A, the 50 us delay, and the delay beside the hog
    (synthetic: no hog runs): the paired design keeps false winners to <= 1 of 20 and
    detects the delay in >= 18 of 20, as the targets of issue 27 ask of real runs.

    Each row's `detectable` over the A/A runs, worked by hand: a pair's RTT log ratio is
    the difference of two phases' medians of 20 log-normal values of sigma 0.1: sd
    sqrt(2) x 1.2533 x 0.1 / sqrt(20) = 0.0396 (the machine's level cancels in the pair).
    The family is RTT and client CPU (m = 2), so the interval is at 1 - 0.05 / 2: its half
    width is about z(0.9875) x sd / sqrt(16 pairs) x 1.023 (the signed-rank interval's
    efficiency against the mean's) = 2.241 x 0.0396 / 4 x 1.023 = 0.0227, and detectable
    = 1.02 x exp(0.0227) - 1 = 4.3 %. The CPU row's pair ratio has sd sqrt(2) x 0.02 =
    0.0283: 1.02 x exp(0.0162) - 1 = 3.7 %."""
    _code, summary = _synthetic(tmp_path, "--only", "link-aa,link-delay,link-delay-hog", *RELATIVE)
    assert sorted(summary) == ["link-aa", "link-delay", "link-delay-hog"]
    assert all(entry["runs"] == 20 for entry in summary.values())
    assert summary["link-aa"]["events"] <= 1 and summary["link-aa"]["meets_target"]
    assert summary["link-delay"]["events"] >= 18 and summary["link-delay"]["meets_target"]
    assert "contention:" in capsys.readouterr().out
    seen = summary["link-aa"]["detectable"]
    rtt, cpu = seen["RTT, encode to decoded reply"], seen["CPU per message, client"]
    assert rtt["runs"] == cpu["runs"] == 20
    assert rtt["median"] == pytest.approx(0.043, abs=0.008)
    assert cpu["median"] == pytest.approx(0.037, abs=0.006)
    assert rtt["min"] <= rtt["median"] <= rtt["max"] < 0.10
    assert rtt["at_most_10pct"] == rtt["at_most_20pct"] == 20
    # The default RTT margin at 20 Hz is 50 µs (0.1 % of the period). A synthetic pair's
    # RTT difference is the difference of two phases' medians of 20 values of 300 µs with
    # 10 % log-normal noise: sd sqrt(2) x 1.2533 x 30 µs / sqrt(20) = 11.9 µs; over 16 pairs
    # at level 1 - 0.05 / 2 the interval's half width is about 2.24 x 11.9 / 4 x 1.023 = 6.8
    # µs. A 75 µs hold gives about [68, 82] µs, beyond 50: named in every run; a 10 µs hold
    # about [3, 17] µs, inside: equal or negligible in every run.
    # On a row decided on differences the detectable is seconds, not a fraction: the margin
    # plus the interval's half width, 50 + about 6.8 µs, printed as µs (it was printed as
    # 0.0 %).
    _code, summary = _synthetic(tmp_path, "--only", "link-hold-beyond,link-hold-inside")
    assert summary["link-hold-beyond"]["events"] == 20
    assert summary["link-hold-inside"]["events"] == 20
    rtt = summary["link-hold-inside"]["detectable"]["RTT, encode to decoded reply"]
    assert rtt["scale"] == "difference" and "at_most_10pct" not in rtt
    assert rtt["median"] == pytest.approx(56.8e-6, abs=3e-6)
    printed = [line for line in capsys.readouterr().out.splitlines() if "detectable, RTT" in line]
    assert printed and all(" µs " in line and "%" not in line for line in printed)
