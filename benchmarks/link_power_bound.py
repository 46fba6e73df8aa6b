"""How narrow could a link row's verdict be with the messages a run measured?

    .venv/bin/python benchmarks/link_power_bound.py RUN_DIR [RUN_DIR ...]
        [--baseline json] [--candidate protobuf] [--resamples 400] [--seed 1]

For each periodic row of the link suite (seed profile) it prints the run's own
`detectable` (comparison.csv: the paired design, one log-ratio per duet) and
the duets that design would need for 20 %: the interval's half-width falls
with the square root of the pairs, so n x (log((1 + d) / 1.02) / log(1.2 /
1.02))^2 for a row at d with n pairs. Beside them, a pooled figure: ONE
statistic over every measured message of a codec
in the run, its log-ratio's standard error from a bootstrap that resamples
whole duets (both codecs' phases of a duet together, so that what the pairs
share stays shared), and the `detectable` an interval that narrow would give
at the link family's Holm level (1 - 0.05 / m, m the family's tested rows):
exp(log(1.02) + z * se) - 1. It then scales that to the messages per codec
that 20 % would take, as se falls with the square root of the messages.

The pooled statistics are the rows' own where a pooled form exists: medians
of the per-message rows; for jitter (stdev of RTT) the root of the mean
within-phase variance; for RFC 3550's jitter, whose smoothed value estimates
the mean |D| of consecutive RTTs, that mean over every phase; for |ΔRTT| the
median of every phase's consecutive differences. Differences are taken
within a phase only, as the suite takes them.

Both are estimates, not proofs. The pooled figure is no bound either: one
rare long RTT moves a pooled stdev far more than it moves the rank test on
per-duet ratios, so for the jitter rows the paired design can do better. What
they show is the scale: duets, and messages per codec, against the 30 duets
(about 720 messages at 20 Hz) the default plan measures in about a minute.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import math
import random
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from evbench_core.analysis.verdicts import ALPHA, MIN_EFFECT
from evbench_core.results import read_samples

AIM = 0.20
PROFILE = "seed"

Phase = list[float]
#: A duet: codec -> its phase's per-message values.
Duet = dict[str, Phase]


def _deltas(phases: Sequence[Phase]) -> list[float]:
    return [abs(b - a) for phase in phases for a, b in itertools.pairwise(phase)]


def _within_sd(phases: Sequence[Phase]) -> float:
    return math.sqrt(statistics.fmean(statistics.variance(p) for p in phases if len(p) > 1))


#: Row label (comparison.csv) -> (per-message metric it is computed from, pooled statistic).
ROWS: dict[str, tuple[str, Callable[[Sequence[Phase]], float]]] = {
    "RTT, encode to decoded reply (periodic)": (
        "rtt",
        lambda phases: statistics.median(v for p in phases for v in p),
    ),
    "RTT, transport (periodic)": (
        "rtt_transport",
        lambda phases: statistics.median(v for p in phases for v in p),
    ),
    "Send lateness (periodic)": (
        "send_lateness",
        lambda phases: statistics.median(v for p in phases for v in p),
    ),
    "Jitter, stdev of RTT (periodic)": ("rtt_transport", _within_sd),
    "Jitter, RFC 3550 (periodic)": (
        "rtt_transport",
        lambda phases: statistics.fmean(_deltas(phases)),
    ),
    "|ΔRTT|, consecutive (periodic)": (
        "rtt_transport",
        lambda phases: statistics.median(_deltas(phases)),
    ),
}


def duets(run: Path, metric: str, baseline: str, candidate: str) -> list[Duet]:
    """Every duet of the run's periodic phases that has both codecs' values of `metric`."""
    found: dict[object, Duet] = {}
    for sample_set in read_samples(run):
        params = sample_set.params
        if (
            sample_set.suite == "link"
            and sample_set.profile == PROFILE
            and sample_set.metric == metric
            and params.get("phase") == "periodic"
            and sample_set.codec in (baseline, candidate)
        ):
            found.setdefault(sample_set.worker, {})[sample_set.codec] = list(sample_set.values)
    return [d for _, d in sorted(found.items(), key=lambda item: str(item[0])) if len(d) == 2]


def pooled_bound(
    pairs: Sequence[Duet],
    statistic: Callable[[Sequence[Phase]], float],
    baseline: str,
    candidate: str,
    z: float,
    resamples: int,
    rng: random.Random,
) -> dict[str, float]:
    """The pooled log-ratio, its duet-bootstrap standard error, the `detectable` that
    gives at `z`, and the messages per codec for AIM."""

    def log_ratio(chosen: Sequence[Duet]) -> float:
        base = statistic([d[baseline] for d in chosen])
        cand = statistic([d[candidate] for d in chosen])
        return math.log(cand / base)

    boots = [log_ratio([rng.choice(pairs) for _ in pairs]) for _ in range(resamples)]
    se = statistics.stdev(boots)
    messages = sum(len(d[baseline]) for d in pairs)
    reach = math.log((1 + AIM) / (1 + MIN_EFFECT))
    return {
        "ratio": math.exp(log_ratio(pairs)),
        "se": se,
        "detectable": math.exp(math.log1p(MIN_EFFECT) + z * se) - 1,
        "messages": messages,
        "needed": messages * (z * se / reach) ** 2,
    }


def duets_for_aim(detectable: float, pairs: int) -> float:
    """The pairs a row at `detectable` with `pairs` pairs would need to reach AIM."""
    width = math.log((1 + detectable) / (1 + MIN_EFFECT))
    return pairs * (width / math.log((1 + AIM) / (1 + MIN_EFFECT))) ** 2


def plan_rows(run: Path) -> dict[str, float | None]:
    """comparison.csv's link rows of the profile: label -> detectable (a fraction)."""
    rows: dict[str, float | None] = {}
    with open(run / "comparison.csv", newline="", encoding="utf-8") as stream:
        for row in csv.DictReader(stream):
            if row["suite"] == "link" and row["profile"] == PROFILE and row["verdict"] != "fact":
                rows[row["label"]] = float(row["detectable"]) / 100 if row["detectable"] else None
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run directories (evbench run --out)")
    parser.add_argument("--baseline", default="json")
    parser.add_argument("--candidate", default="protobuf")
    parser.add_argument("--resamples", type=int, default=400)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    for run in args.runs:
        family = plan_rows(run)
        z = statistics.NormalDist().inv_cdf(1 - ALPHA / len(family) / 2)
        print(f"{run}: {len(family)} tested link rows, z = {z:.3f} (1 - {ALPHA} / {len(family)})")
        print(
            f"  {'row':42} {'plan':>7} {'duets':>5} {'for 20 %':>8}   "
            f"{'pooled':>7} {'se':>6} {'msgs':>5} {'for 20 %':>8}"
        )
        for label, (metric, statistic) in ROWS.items():
            pairs = duets(run, metric, args.baseline, args.candidate)
            if len(pairs) < 2:
                print(f"  {label:42} fewer than 2 duets")
                continue
            found = pooled_bound(
                pairs, statistic, args.baseline, args.candidate, z, args.resamples, rng
            )
            plan = family.get(label)
            if plan is None:
                shown = f"{'-':>7} {len(pairs):5d} {'-':>8}"
            else:
                needed = duets_for_aim(plan, len(pairs))
                within = f"{needed:8.0f}" if plan > AIM else f"{'within':>8}"
                shown = f"{100 * plan:6.1f}% {len(pairs):5d} {within}"
            print(
                f"  {label:42} {shown}   {100 * found['detectable']:6.1f}% {found['se']:6.3f} "
                f"{found['messages']:5.0f} {found['needed']:8.0f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
