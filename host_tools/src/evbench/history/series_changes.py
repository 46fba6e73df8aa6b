"""Every change of one series: the watch's, and the older ones only the segmentation sees.

The nightly watch (`nightly_watch`) raises an alarm on the newest nights; it
cannot see a change in a stretch too short for its tests, nor a slow drift. The
segmentation (`segmentation.detect`) looks back over every night and finds
those. A check shows both, each with the night the series first
showed it (`changes_of`); the segmentation's changes must stand on the nights
before the watch's newest `WINDOW` (`segmentation`), and `series_needed` is how
many nights that takes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from evbench.history.nightly_watch import WINDOW, Seen, watch
from evbench.history.segmentation import MIN_SEGMENT, REFINE_NIGHTS, Split, detect, nights_needed
from evbench_core.analysis.verdicts import ALPHA

#: `detect` over the first N nights of one series, each prefix scanned once.
PrefixScans = Callable[[int], list[Split]]


def prefix_scans(values: Sequence[float], alpha: float = ALPHA, wanders: bool = False
                 ) -> PrefixScans:  # fmt: skip
    """The scan of each prefix of `values`, remembered: `first_seen` and `segmentation`
    ask for the same prefixes (a prefix and the one WINDOW nights shorter)."""

    @functools.cache
    def scan(nights: int) -> list[Split]:
        return detect(values[:nights], alpha, wanders)

    return scan


def segmentation(
    values: Sequence[float], alpha: float = ALPHA, scans: PrefixScans | None = None
) -> list[Split]:
    """The segmentation's changes the check shows: found by `detect` over every night
    and, near the same night, over the nights before the newest WINDOW alike.

    The scan cannot place a change with fewer than MIN_SEGMENT nights after it, so a
    step in the newest nights lends them to an earlier split (nights that lay high
    before the step then look like its start); those nights are the watch's, which
    places a step among them. A change must therefore stand on the nights before
    them, and still hold with them. `scans` (of a longer series `values` begins) saves
    scanning again.
    """
    scan = scans or prefix_scans(values, alpha)
    settled = scan(max(0, len(values) - WINDOW))
    return [
        split
        for split in scan(len(values))
        if any(abs(other.index - split.index) <= REFINE_NIGHTS for other in settled)
    ]


def first_seen(
    values: Sequence[float], index: int, alpha: float = ALPHA, scans: PrefixScans | None = None
) -> int:
    """The newest night of the shortest prefix whose `segmentation` shows a change near
    `index`."""
    scan = scans or prefix_scans(values, alpha)
    for last in range(index + MIN_SEGMENT - 1, len(values)):
        shown = segmentation(values[: last + 1], alpha, scan)
        if any(abs(s.index - index) <= REFINE_NIGHTS for s in shown):
            return last
    return len(values) - 1


def changes_of(
    values: Sequence[float],
    alpha: float = ALPHA,
    worse: str | None = None,
    companions: Sequence[Sequence[float]] = (),
    watched: Sequence[Seen] | None = None,
    wanders: bool = False,
) -> list[Seen]:
    """The watch's changes and the segmentation's (older ones the watch could not see:
    in a too-short stretch, or a drift), each with the night it was first shown.
    `companions` place the watch's changes (`watch`). The segmentation's changes stand
    on the nights before the newest WINDOW (`segmentation`).
    """
    if watched is None:  # alone; a board's series are watched together (watch_family)
        watched = watch(values, alpha, worse, companions, wanders)
    found = list(watched)
    scans = prefix_scans(values, alpha, wanders)
    for split in segmentation(values, alpha, scans):
        if any(abs(seen.split.index - split.index) <= REFINE_NIGHTS for seen in watched):
            continue
        found.append(Seen(split, first_seen(values, split.index, alpha, scans)))
    return sorted(found, key=lambda seen: seen.split.index)


def series_needed(alpha: float = ALPHA) -> int:
    """The fewest nights of a series in which a change can be placed anywhere: the
    scan's `nights_needed` before the newest WINDOW nights (`segmentation`)."""
    return nights_needed(alpha) + WINDOW
