"""How often the nightly watch sees a second step soon after a first, and what it costs.

    python benchmarks/watch_second_step.py [--series 300]

Synthetic nightly series (Gaussian noise on a log scale, 30 nights, seeded):
a first step of +30 % at night 12 (a machine's, say), then

- a second step of +50 % 1 to 4 nights after it: found when the watch places a
  change within one night of it by 4 nights after it;
- no second step: alarms after the first change, in the nights where the watch
  tests against the nights before the first change moved to its new level (windows
  beginning 3 to 9 nights after it), against what alpha allows (7 tests a series).

at the check's family alpha (0.05 / 12) and at 0.05, for noise of 3, 5 and 7 %.
"""

from __future__ import annotations

import argparse

import numpy as np

from evbench.history import nightly_watch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=300)
    args = parser.parse_args()
    for alpha in (0.05 / 12, 0.05):
        for noise in (0.03, 0.05, 0.07):
            rng = np.random.default_rng(7)
            found = extra = 0
            for _ in range(args.series):
                flat = np.exp(rng.normal(0, noise, 30)) * 100
                flat[12:] *= 1.3
                seen = nightly_watch.watch(list(flat), alpha, worse="higher")
                extra += any(15 <= s.seen - 2 <= 21 for s in seen[1:])
                second = flat.copy()
                at = 12 + int(rng.integers(1, 5))
                second[at:] *= 1.5
                seen = nightly_watch.watch(list(second), alpha, worse="higher")
                found += any(abs(s.split.index - at) <= 1 and s.seen <= at + 4 for s in seen)
            n = args.series
            print(
                f"alpha {alpha:.4f}, noise {noise:.0%}: second step found {found}/{n} "
                f"({found / n:.1%}); alarms with no second step {extra}/{n} ({extra / n:.1%}; "
                f"alpha allows {7 * alpha:.1%})"
            )


if __name__ == "__main__":
    main()
