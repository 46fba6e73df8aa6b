"""Wild nights: what makes one night wild, and the robust levels it is put back on.

One night far off its neighbours is no news of the code, yet it can hide a step
or raise one: a rank knows order, not distance, and would count a wild night
before a step as one after it, and a least-squares line or a spread swings
toward it. The history's tests therefore tame such a night first. What counts
as wild is shared (`OUTLIER_SCALES` robust spreads off a robust level); the
level differs with what is tamed:

- `tame_outliers`: a running median of `RUNNING_NIGHTS` nights, for a whole
  series before it is segmented (`segmentation.detect`);
- `tame_about_line`: Theil and Sen's line (`robust_line`), for the dozen
  reference nights a window is tested against (`window_tests`), where a running
  median equals too many of the nights themselves.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: The running median's width, in nights, and how many robust spreads make a night wild.
RUNNING_NIGHTS = 5
OUTLIER_SCALES = 5.0


def tame_outliers(logs: Sequence[float]) -> list[float]:
    """The series with wild single nights replaced by their neighbourhood's median.

    A running median of `RUNNING_NIGHTS` keeps a step's edge where it is but
    not a lone wild night; a night further than `OUTLIER_SCALES` robust
    spreads (1.4826 MAD of the residuals) from it is replaced by it. Ranks
    alone would count a wild night before a step as one after it.
    """
    n = len(logs)
    if n < RUNNING_NIGHTS:
        return list(logs)
    half = RUNNING_NIGHTS // 2
    array = np.asarray(logs, dtype=float)
    level = np.array([np.median(array[max(0, i - half) : min(n, i + half + 1)]) for i in range(n)])
    residuals = array - level
    spread = 1.4826 * float(np.median(np.abs(residuals)))
    if spread == 0:
        return list(logs)
    wild = np.abs(residuals) > OUTLIER_SCALES * spread
    return [float(v) for v in np.where(wild, level, array)]


def tame_about_line(reference: np.ndarray) -> np.ndarray:
    """The reference nights with a wild night put back on their robust line.

    The line is Theil and Sen's (the median of the slopes between every two nights,
    the level the median of what it leaves); a night further than OUTLIER_SCALES
    robust spreads (1.4826 MAD of the residuals) from it is replaced by the line's
    value plus the median residual. Not `tame_outliers`: on a dozen nights a running
    median of 5 equals many of the nights themselves, so the MAD of its residuals is
    near 0 and ordinary nights were taken for wild, which smoothed the scatter away
    (a drifting lab's nights then raised alarms).
    """
    slope, centre, spread = robust_line(reference)
    t = np.arange(len(reference), dtype=float)
    if spread == 0:
        return reference
    wild = np.abs(reference - slope * t - centre) > OUTLIER_SCALES * spread
    return np.where(wild, slope * t + centre, reference)


def robust_line(reference: np.ndarray, nights: np.ndarray | None = None
                ) -> tuple[float, float, float]:  # fmt: skip
    """(slope, level, robust spread) of the nights (at `nights`, default 0, 1, ...):
    Theil and Sen's slope, the median residual and 1.4826 MAD of the residuals."""
    t = np.arange(len(reference), dtype=float) if nights is None else nights.astype(float)
    i, j = np.triu_indices(len(reference), k=1)
    slope = float(np.median((reference[j] - reference[i]) / (t[j] - t[i])))
    residual = reference - slope * t
    centre = float(np.median(residual))
    return slope, centre, 1.4826 * float(np.median(np.abs(residual - centre)))
