"""How far a row moves from one night to the next on its board: the null for `compare`.

Two runs are two nights, and the processes of one run share that night's
machine, so a test on their replicates cannot tell a change from the noise
between nights (docs/history.md). A board's history can: its nights of the same
row, identical code or not, show how far that row moves from one night to the
next. Each later run's change against the baseline is one more such move.

Method: on a log scale, the differences of consecutive nights d_1 .. d_k
(k = nights - 1) of the same row of the same board. Under "no change", the
baseline-to-candidate difference D is one more draw of that distribution, mean
0, so D / s follows Student's t, with s the root mean square of the d's (the
mean square successive difference, von Neumann 1941: a step or a drift in the
history moves one d, not all of them). Adjacent differences share a night, so
the estimate is worth about two thirds of k independent ones: the degrees of
freedom are floor(2k / 3). The p-value is two-sided; `compare` corrects it
with Holm over the rows it tests against history.

A history shorter than `MIN_NIGHTS` gives no p-value: the row stays "not
confirmed: n nights".
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from evbench.history.indexing import series_metric
from evbench.history.store import Store
from evbench.history.trends import comparable_identity, record_params
from evbench_core.analysis.identity import Identity
from evbench_core.analysis.stats import student_t_sf, successive_differences_df

#: The fewest nights of history that confirm or refute a change (7 differences,
#: 4 degrees of freedom: t at p 0.05 two-sided is 2.78 spreads).
MIN_NIGHTS = 8


@dataclass(frozen=True)
class NightSpread:
    """One row's history on one board: its nights and their night-to-night spread."""

    nights: int
    #: Root mean square of consecutive nights' log differences (0 when nights < 2).
    rms: float

    @property
    def enough(self) -> bool:
        return self.nights >= MIN_NIGHTS and self.rms > 0

    @property
    def df(self) -> int:
        return successive_differences_df(self.nights)

    def p_value(self, ratio: float) -> float | None:
        """Two-sided p of a change `ratio` (later / baseline) against this history."""
        if not self.enough or not ratio > 0:
            return None
        return 2 * student_t_sf(abs(math.log(ratio)) / self.rms, self.df)


def of_values(values: Sequence[float]) -> NightSpread:
    """The spread of nightly figures (oldest first); figures of 0 or below are left out."""
    logs = [math.log(v) for v in values if v > 0]
    steps = [b - a for a, b in itertools.pairwise(logs)]
    rms = math.sqrt(math.fsum(d * d for d in steps) / len(steps)) if steps else 0.0
    return NightSpread(len(logs), rms)


class BoardHistory:
    """The night spreads of one board's rows in a store, the compared runs left out."""

    def __init__(self, store: Store, board: str, left_out: Sequence[str]) -> None:
        self.store = store
        self.board = board
        self.left_out = frozenset(left_out)

    def spread(self, codec: str, identity: Identity) -> NightSpread:
        params = identity.params_dict
        key = (
            identity.suite,
            identity.profile or "-",
            codec,
            series_metric(identity.metric, params),
        )
        wanted = comparable_identity(params)
        values = [
            float(point.record["median"])
            for point in self.store.series(self.board, key)
            if point.run["run_id"] not in self.left_out
            and comparable_identity(record_params(point.record)) == wanted
        ]
        return of_values(values)

    def test(self, codec: str, identity: Identity, ratio: float) -> tuple[int, float | None]:
        """(nights of history, two-sided p of the change `ratio` or None when too short)."""
        found = self.spread(codec, identity)
        return found.nights, found.p_value(ratio)
