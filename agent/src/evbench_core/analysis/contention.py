"""Whether a replicate ran on a busy machine: the bounds, and the words for them.

The agent measures the figures around each replicate a verdict counts
(evbench_agent.telemetry.contention: other processes' CPU, steal, the clock's
change) and records them as the metrics below; this module judges them, on the
board and on the host alike. A replicate is **busy** beyond any of the bounds
(docs/method.md, "Contention"): others' CPU above OTHERS_CPU_BOUND % of one core,
steal above STEAL_BOUND %, or the clock moving by more than FREQUENCY_BOUND %.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

#: Other processes' CPU above this, in % of one core, marks a replicate busy: a fifth
#: of a core taken by others can preempt the measured threads (the sender and the
#: responder take two threads of a 2-core board).
OTHERS_CPU_BOUND = 20.0
#: CPU steal above this, in % of all CPUs' time (a VM whose host is oversubscribed).
STEAL_BOUND = 5.0
#: A change of the current CPU frequency by more than this, in %, start to end.
FREQUENCY_BOUND = 10.0

#: The metrics a replicate's figures are recorded as (unit percent, codec none).
OTHERS_CPU = "contention_others_cpu"
STEAL = "contention_steal"
FREQUENCY_CHANGE = "contention_freq_change"
METRICS = (OTHERS_CPU, STEAL, FREQUENCY_CHANGE)


def reasons(found: Mapping[str, float]) -> list[str]:
    """Why a replicate with these figures counts as busy (empty: it does not)."""
    said = []
    if found.get(OTHERS_CPU, 0.0) > OTHERS_CPU_BOUND:
        said.append(f"other processes {found[OTHERS_CPU]:.0f} % of a core")
    if found.get(STEAL, 0.0) > STEAL_BOUND:
        said.append(f"steal {found[STEAL]:.1f} %")
    if found.get(FREQUENCY_CHANGE, 0.0) > FREQUENCY_BOUND:
        said.append(f"clock changed {found[FREQUENCY_CHANGE]:.0f} %")
    return said


def bound_words() -> str:
    return (
        f"other processes above {OTHERS_CPU_BOUND:g} % of a core, steal above "
        f"{STEAL_BOUND:g} %, or the clock moving more than {FREQUENCY_BOUND:g} %"
    )


def busy_share(values: Iterable[Mapping[str, float]]) -> tuple[int, int]:
    """(busy, all) replicates among these figures."""
    listed = list(values)
    return sum(1 for found in listed if reasons(found)), len(listed)


__all__ = ["METRICS", "OTHERS_CPU", "bound_words", "busy_share", "reasons"]
