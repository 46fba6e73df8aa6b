"""A run's answer to one question: how does a candidate codec compare with a baseline?

Pure domain code (no I/O beyond reading the run's samples, no rendering): the
terminal table, the report, compare, CSV and JUnit render what this returns,
and the board can print it under LAVA.

API (stable; extended only compatibly)::

    comparison = compare_run(run, "json", "protobuf")        # or compare(sample_sets, ...)
    for row in comparison.rows:                               # one row per record identity
        row.identity      # identity.Identity: suite, profile, metric, unit, identity params
        row.label         # "Serialization", "Agent CPU, % of one core (link, periodic)"
        row.role          # identity.TESTED, FACT or CONTEXT
        row.unit, row.better
        row.baseline, row.candidate   # Side: codec, summary (every value), replicates,
                                      # replicate_summary (of per-replicate medians)
        row.verdict       # verdicts.Verdict for TESTED rows, else None
        row.outcome       # "baseline" | "candidate" | "equal" | "undecided" | "n too small"
                          # | None
        row.fact_difference  # FACT rows: (candidate - baseline) / baseline of the means
        row.n, row.n_counts  # what the test counted: 10, "processes"
        row.min_detectable   # m: the plan could name ratios >= 1 + m or <= 1 / (1 + m); None
                             # when no verdict was reachable
        row.too_small        # True when no verdict was reachable ("n too small")
        row.family        # test family name ("codec seed"), None outside tests
        row.busy          # replicates of the row measured on a busy machine (contention)
    comparison.families   # family name -> its TESTED rows, Holm-corrected together
    comparison.unmatched  # identities measured for only one of the two codecs
    comparison.busy       # (busy, measured) replicates: the machine beyond contention's bound
    labels(identities)    # the rows' labels for any identities (e.g. every codec's medians)

    # Two runs, each codec against itself (evbench compare): one row per codec and identity
    runs = compare_runs(samples_a, samples_b, "A", "B")
    row.baseline.codec == row.candidate.codec  # the codec; baseline: run A, candidate: run B
    runs.left_out         # (codec, identity) measured in only one of the two runs

Rules (docs/method.md): a row is one identity (analysis/identity.py); records that
differ in an identity param are never pooled, outcome params never split a
row. TESTED rows are decided on replicates: the codec suite pairs the codecs
within each worker process (one log-ratio per process: the median over rounds
of log(candidate / baseline) of the same round); the link suite pairs the
codecs within each pair (phase i of each codec: a periodic duet, run at once, or
a capacity pair, its blocks interleaved: one log-ratio per pair, of the two
phases' values, a per-message figure reduced to the phase's median). Test families are (suite,
profile).
FACT rows carry the exact difference; CONTEXT rows only per-codec summaries.

Two runs (`compare_runs`) share no replicate: a worker process of run A is not
paired with any of run B. Each codec's per-replicate medians of one run are
compared with the other run's as independent samples, in every suite (exact
Mann-Whitney, Moses' interval, as the link suite within a run); n counts the
replicates per run. Families stay (suite, profile), across codecs.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from evbench_core.analysis import contention, identity, margins, metrics, stats, verdicts
from evbench_core.analysis.identity import CONTEXT, FACT, TESTED, Identity
from evbench_core.results import Run, SampleSet

#: How each suite's replicates are compared, and what n counts: the codec suite pairs
#: the codecs within a worker process, the link suite within a pair (phase i of each
#: codec: a duet, or a capacity pair of interleaved blocks).
PAIRED_SUITES = {"codec": "processes", "link": "phase pairs"}
INDEPENDENT_SUITES: dict[str, str] = {}
#: What n counts when two runs are compared (nothing is paired across runs).
RUN_COUNTS = {"codec": "processes per run", "link": "phases per run"}
#: The codecs a run's table compares when both ran and nothing else is asked (the seed's
#: table): JSON, the baseline, against Protobuf.
SEED_PAIR = ("json", "protobuf")


def answer_pair(codecs: Sequence[str], aa: str | None = None) -> tuple[str, str] | None:
    """The two codecs a run's answer is about: an A/A run's codec and its copy, JSON
    against Protobuf when both ran (the seed's table), else the first two codecs."""
    if aa:
        return aa, identity.copy_name(aa)
    if set(SEED_PAIR) <= set(codecs):
        return SEED_PAIR
    return (codecs[0], codecs[1]) if len(codecs) >= 2 else None


#: Suites in display order (the order the agent runs them in, then the telemetry it
#: derives); a suite not listed follows alphabetically.
SUITE_ORDER = ("codec", "link", identity.TELEMETRY)
#: Params shown in a row's label whenever present (they name what was measured).
LABEL_PARAMS = ("phase", "kind", "operation")


@dataclass(frozen=True)
class Side:
    """One codec's data for one identity."""

    codec: str
    summary: stats.Summary  # every value (n counts values)
    replicates: int  # worker processes, phases, or 1
    #: Summary of the per-replicate medians (its ci95 is the defensible interval
    #: of the median across replicates); None with a single replicate.
    replicate_summary: stats.Summary | None


@dataclass(frozen=True)
class Row:
    identity: Identity
    label: str
    role: str
    unit: str
    better: str
    baseline: Side
    candidate: Side
    verdict: verdicts.Verdict | None = None
    fact_difference: float | None = None
    n: int = 0
    n_counts: str = "values"
    family: str | None = None
    #: Replicates of this row (either codec's) measured while the machine was busy
    #: beyond telemetry.contention's bound: the row may be unreliable.
    busy: int = 0

    @property
    def outcome(self) -> str | None:
        return self.verdict.winner if self.verdict else None

    @property
    def too_small(self) -> bool:
        return self.verdict is not None and self.verdict.too_small

    @property
    def min_detectable(self) -> float | None:
        return self.verdict.min_detectable if self.verdict else None


@dataclass(frozen=True)
class Margins:
    """The margins a comparison decides on: the run's choices (metric -> margin text, as
    `--margin` gives them) and its stream count; `relative_only` keeps 1 +/- min_effect
    for every row (two runs compared with each other)."""

    chosen: dict[str, str] = field(default_factory=dict)
    streams: int = 1
    relative_only: bool = False

    def band(self, key: Identity) -> margins.Band | None:
        if self.relative_only:
            return None
        return margins.resolve(key.metric, key.params_dict, self.chosen, self.streams)


@dataclass(frozen=True)
class Comparison:
    baseline: str
    candidate: str
    rows: tuple[Row, ...]
    unmatched: tuple[Identity, ...] = ()
    alpha: float = verdicts.ALPHA
    min_effect: float = verdicts.MIN_EFFECT
    families: dict[str, tuple[Row, ...]] = field(default_factory=dict)
    #: compare_runs: (codec, identity) measured in only one of the two runs.
    left_out: tuple[tuple[str, Identity], ...] = ()
    #: (busy, measured): replicates whose machine state was beyond contention's bound,
    #: of those whose state was measured.
    busy: tuple[int, int] = (0, 0)
    margins: Margins = field(default_factory=lambda: Margins())
    #: Looks of a sequential run replayed (compare_looks); 1 for a single look.
    looks: int = 1
    #: Seconds one stage of the run's plan takes (its planned duration, or a sequential
    #: run's mean stage): what "about N min more" of an undecided row counts in.
    stage_s: float | None = None

    def by_role(self, role: str) -> list[Row]:
        return [row for row in self.rows if row.role == role]

    def winners(self) -> list[Row]:
        """TESTED rows whose verdict names a codec."""
        return [row for row in self.rows if row.verdict and row.verdict.significant]


# --- grouping samples by identity, codec and replicate ------------------------------


def _replicate(sample_set: SampleSet) -> Any:
    """Which replicate a set belongs to: its process or phase, within its stage when a
    sequential run measured it in stages (each stage's replicates are new ones)."""
    params = sample_set.params
    found = sample_set.worker
    for name in ("process", "process_index", "phase_index"):
        if name in params:
            found = params[name]
            break
    return (params["stage"], found) if "stage" in params else found


Grouped = dict[Identity, dict[str, dict[Any, list[float]]]]
#: (suite, profile, link phase kind, replicate) -> why it was busy.
Busy = dict[tuple[Any, ...], list[str]]


def _contention_key(
    suite: str, profile: str | None, params: dict[str, Any], replicate: Any
) -> tuple[Any, ...]:
    """Where a replicate's machine state applies: a link phase (of its kind), or a codec
    worker process (every profile ran in it: profile None)."""
    if suite == "link":
        return (suite, profile, params.get("phase"), replicate)
    return (suite, None, None, replicate)


def busy_replicates(sample_sets: Iterable[SampleSet]) -> tuple[Busy, int]:
    """The replicates measured on a busy machine, and how many had their state measured.
    Both phases of a link pair count as one replicate: the busier decides."""
    found: dict[tuple[Any, ...], dict[str, float]] = {}
    for sample_set in sample_sets:
        if sample_set.metric not in contention.METRICS or not sample_set.values:
            continue
        key = _contention_key(
            sample_set.suite, sample_set.profile, sample_set.params, _replicate(sample_set)
        )
        figures = found.setdefault(key, {})
        figures[sample_set.metric] = max(figures.get(sample_set.metric, 0.0), *sample_set.values)
    busy = {key: why for key, figures in found.items() if (why := contention.reasons(figures))}
    return busy, len(found)


def _busy_count(key: Identity, replicates: Iterable[Any], busy: Busy) -> int:
    if not busy:
        return 0
    return sum(
        1 for r in replicates if _contention_key(key.suite, key.profile, key.params_dict, r) in busy
    )


def identity_of(sample_set: SampleSet) -> Identity:
    """The record identity of a sample set (its codec and repetition aside)."""
    return identity.identify(
        sample_set.suite, sample_set.profile, sample_set.metric, sample_set.unit, sample_set.params
    )


def group(sample_sets: Iterable[SampleSet]) -> Grouped:
    """identity -> codec -> replicate -> values in recorded order (rounds stay in order)."""
    grouped: Grouped = {}
    for sample_set in sample_sets:
        if sample_set.codec is None:
            continue  # telemetry of a block where every codec ran: not one codec's figure
        key = identity_of(sample_set)
        replicates = grouped.setdefault(key, {}).setdefault(sample_set.codec, {})
        replicates.setdefault(_replicate(sample_set), []).extend(sample_set.values)
    return grouped


def _side(codec: str, replicates: dict[Any, list[float]]) -> Side:
    values = [v for vs in replicates.values() for v in vs]
    medians = _replicate_medians(replicates)
    return Side(
        codec=codec,
        summary=stats.summarize(values),
        replicates=len(medians),
        replicate_summary=stats.summarize(medians) if len(medians) > 1 else None,
    )


def process_log_ratio(baseline: Sequence[float], candidate: Sequence[float]) -> float:
    """One process's log(candidate / baseline): the median of the per-round log-ratios
    when both codecs have one value per round, else the log of the ratio of medians."""
    if not baseline or not candidate:
        return math.nan
    if min(baseline) <= 0 or min(candidate) <= 0:
        return math.nan
    if len(baseline) == len(candidate):
        return statistics.median(
            math.log(c) - math.log(b) for b, c in zip(baseline, candidate, strict=True)
        )
    return math.log(statistics.median(candidate)) - math.log(statistics.median(baseline))


def phase_log_ratio(baseline: Sequence[float], candidate: Sequence[float]) -> float:
    """One phase pair's log(candidate / baseline): of the two phases' medians (a
    per-phase figure is its one value). Messages are not paired across phases."""
    if not baseline or not candidate or min(baseline) <= 0 or min(candidate) <= 0:
        return math.nan
    return math.log(statistics.median(candidate)) - math.log(statistics.median(baseline))


#: Each paired suite's log-ratio of one replicate.
PAIR_RATIO = {"codec": process_log_ratio, "link": phase_log_ratio}


def process_difference(baseline: Sequence[float], candidate: Sequence[float]) -> float:
    """One process's candidate - baseline: the median of the per-round differences when
    both codecs have one value per round, else the difference of the medians."""
    if not baseline or not candidate:
        return math.nan
    if len(baseline) == len(candidate):
        return statistics.median(c - b for b, c in zip(baseline, candidate, strict=True))
    return statistics.median(candidate) - statistics.median(baseline)


def phase_difference(baseline: Sequence[float], candidate: Sequence[float]) -> float:
    """One phase pair's candidate - baseline: of the two phases' medians."""
    if not baseline or not candidate:
        return math.nan
    return statistics.median(candidate) - statistics.median(baseline)


#: Each paired suite's difference of one replicate (for a margin in seconds).
PAIR_DIFFERENCE = {"codec": process_difference, "link": phase_difference}


def _evidence(
    key: Identity,
    label: str,
    better: str,
    base: dict[Any, list[float]],
    cand: dict[Any, list[float]],
    paired: bool = True,
) -> tuple[verdicts.Paired | verdicts.Independent, str]:
    """The test's input for one row, and what its n counts. `paired`: both sides are
    from one run, so a suite in PAIRED_SUITES pairs them by replicate."""
    if paired and key.suite in PAIRED_SUITES:
        evidence = _paired_evidence(key.suite, label, better, base, cand)
        return evidence, PAIRED_SUITES[key.suite]
    per_base, per_cand = _replicate_medians(base), _replicate_medians(cand)
    counts = _independent_counts(key.suite, paired)
    return verdicts.Independent(label, better, per_base, per_cand), counts


def _paired_evidence(
    suite: str,
    label: str,
    better: str,
    base: dict[Any, list[float]],
    cand: dict[Any, list[float]],
) -> verdicts.Paired:
    """Paired evidence over the replicates both codecs measured: one log-ratio (and one
    difference, for a margin in seconds) per replicate, the suite's way (PAIR_RATIO,
    PAIR_DIFFERENCE), and each side's median over exactly those replicates."""
    shared = sorted((r for r in base if r in cand), key=str)
    pair_ratio, pair_difference = PAIR_RATIO[suite], PAIR_DIFFERENCE[suite]
    ratios = [pair_ratio(base[r], cand[r]) for r in shared]
    differences = [pair_difference(base[r], cand[r]) for r in shared]
    return verdicts.Paired(
        label,
        better,
        _finite(ratios),
        _pooled_median(base, shared),
        _pooled_median(cand, shared),
        _finite(differences),
    )


def _finite(values: Iterable[float]) -> list[float]:
    """The values a test can use: a replicate whose ratio or difference is undefined
    (NaN: an empty or non-positive side) drops out rather than poisoning the test."""
    return [v for v in values if math.isfinite(v)]


def _pooled_median(replicates: dict[Any, list[float]], shared: Sequence[Any]) -> float:
    """One side's median over every value of the paired replicates only (NaN when none
    is shared), so both sides' levels describe the same replicates as the test."""
    if not shared:
        return math.nan
    return statistics.median(v for r in shared for v in replicates[r])


def _replicate_medians(replicates: dict[Any, list[float]]) -> list[float]:
    """Each replicate's median (empty replicates skipped): one value per replicate, what
    independent samples and a side's replicate summary are made of."""
    return [statistics.median(vs) for vs in replicates.values() if vs]


def _independent_counts(suite: str, paired: bool) -> str:
    """What n counts when per-replicate medians are compared as independent samples:
    replicates per codec within one run, replicates per run across two (`paired` False)."""
    if paired:
        return INDEPENDENT_SUITES.get(suite, "replicates per codec")
    return RUN_COUNTS.get(suite, "replicates per run")


# --- labels and order ---------------------------------------------------------------


def _metric_label(metric: str) -> str:
    known = metrics.METRICS.get(metric)
    return known.label if known else metric


def labels(keys: Sequence[Identity]) -> dict[Identity, str]:
    """Each identity's label: the metric's, plus what tells it apart from its siblings.

    The params that name what was measured (telemetry phase, phase kind,
    operation) are always shown; other params only where two identities of
    the same metric would otherwise share a label, and then only those that
    differ between them.
    """
    first: dict[Identity, tuple[str, list[str]]] = {}
    for key in keys:
        p = key.params_dict
        first[key] = (_metric_label(key.metric), [str(p[n]) for n in LABEL_PARAMS if n in p])
    collisions: dict[tuple[Any, ...], list[Identity]] = {}
    for key, (base, shown) in first.items():
        collisions.setdefault((key.suite, key.profile, base, *shown), []).append(key)
    named = {}
    for group_keys in collisions.values():
        params = [k.params_dict for k in group_keys]
        varying = sorted(
            {n for p in params for n in p if any(q.get(n) != p.get(n) for q in params)}
            - set(LABEL_PARAMS)
        )
        for key, p in zip(group_keys, params, strict=True):
            base, shown = first[key]
            shown = shown + [f"{n}={p.get(n)}" for n in varying]
            named[key] = f"{base} ({', '.join(shown)})" if shown else base
    return named


def _order(key: Identity) -> tuple[Any, ...]:
    names = list(metrics.METRICS)
    suite = SUITE_ORDER.index(key.suite) if key.suite in SUITE_ORDER else len(SUITE_ORDER)
    metric = names.index(key.metric) if key.metric in names else len(names)
    return (suite, key.suite, key.profile, metric, key.metric, key.params)


def family_name(key: Identity) -> str:
    return f"{key.suite} {key.profile}".strip()


# --- the comparison ------------------------------------------------------------------


#: One row to decide: its identity, then each side's codec and replicates.
_Match = tuple[Identity, str, dict[Any, list[float]], str, dict[Any, list[float]]]


def _rows(
    matches: Sequence[_Match],
    paired: bool,
    alpha: float,
    min_effect: float,
    busy: Busy,
    margins_used: Margins,
) -> tuple[list[Row], dict[str, tuple[Row, ...]]]:
    """Rows in the order of `matches`, TESTED ones decided per family (suite, profile)."""
    names = labels(list(dict.fromkeys(match[0] for match in matches)))
    evidence: dict[str, list[tuple[int, Any, str, margins.Band | None]]] = {}
    for index, (key, _b, base_values, _c, cand_values) in enumerate(matches):
        if key.role == TESTED:
            better = metrics.better(key.metric)
            item, counts = _evidence(key, names[key], better, base_values, cand_values, paired)
            band = margins_used.band(key)
            evidence.setdefault(family_name(key), []).append((index, item, counts, band))
    decided: dict[int, tuple[verdicts.Verdict, str, str]] = {}
    for name, items in evidence.items():
        results = verdicts.decide_family(
            [item for _i, item, _c, _b in items], alpha, min_effect, [b for *_x, b in items]
        )
        for (index, _item, counts, _band), verdict in zip(items, results, strict=True):
            decided[index] = (verdict, counts, name)
    rows = []
    for index, (key, base_codec, base_values, cand_codec, cand_values) in enumerate(matches):
        base = _side(base_codec, base_values)
        cand = _side(cand_codec, cand_values)
        common = Row(
            identity=key,
            label=names[key],
            role=key.role,
            unit=key.unit,
            better=metrics.better(key.metric),
            baseline=base,
            candidate=cand,
            busy=_busy_count(key, set(base_values) | set(cand_values), busy) if paired else 0,
        )
        if index in decided:
            verdict, counts, name = decided[index]
            rows.append(
                replace(common, verdict=verdict, n=verdict.n or 0, n_counts=counts, family=name)
            )
        elif key.role == FACT:
            difference = (
                (cand.summary.mean - base.summary.mean) / base.summary.mean
                if base.summary.mean
                else None
            )
            rows.append(
                replace(common, fact_difference=difference, n=min(base.summary.n, cand.summary.n))
            )
        else:
            rows.append(replace(common, n=min(base.summary.n, cand.summary.n)))
    families: dict[str, tuple[Row, ...]] = {}
    for row in rows:
        if row.family is not None:
            families[row.family] = (*families.get(row.family, ()), row)
    return rows, families


def compare(
    sample_sets: Iterable[SampleSet],
    baseline: str,
    candidate: str,
    alpha: float = verdicts.ALPHA,
    min_effect: float = verdicts.MIN_EFFECT,
    margins_used: Margins | None = None,
) -> Comparison:
    """Compare two codecs over every identity both measured, each tested row against
    its margin (`margins_used`; default: analysis/margins.py's defaults, one stream)."""
    sample_sets = list(sample_sets)
    margins_used = margins_used or Margins()
    grouped = group(sample_sets)
    busy, measured = busy_replicates(sample_sets)
    both = sorted(
        (k for k, codecs in grouped.items() if baseline in codecs and candidate in codecs),
        key=_order,
    )
    unmatched = tuple(
        sorted((k for k, c in grouped.items() if (baseline in c) != (candidate in c)), key=_order)
    )
    matches = [
        (key, baseline, grouped[key][baseline], candidate, grouped[key][candidate]) for key in both
    ]
    rows, families = _rows(matches, True, alpha, min_effect, busy, margins_used)
    return Comparison(
        baseline=baseline,
        candidate=candidate,
        rows=tuple(rows),
        unmatched=unmatched,
        alpha=alpha,
        min_effect=min_effect,
        families=families,
        busy=(len(busy), measured),
        margins=margins_used,
    )


def _stage(sample_set: SampleSet) -> int:
    stage = sample_set.params.get("stage", 1)
    return stage if isinstance(stage, int) else 1


def compare_looks(
    sample_sets: Iterable[SampleSet],
    baseline: str,
    candidate: str,
    alphas: Sequence[float],
    margins_used: Margins | None = None,
) -> Comparison:
    """A sequential run's comparison (`--until-decided`): look k decides on the stages
    1..k at the alpha it spent, `alphas[k - 1]`; a row keeps the verdict of the first
    look that decided it (verdicts.DECIDED), and a row no look decided shows the last
    look's. The looks' intervals hold together with probability 1 - sum(alphas)."""
    sample_sets = list(sample_sets)
    found: dict[Identity, verdicts.Verdict] = {}
    latest: Comparison | None = None
    for look, alpha in enumerate(alphas, start=1):
        seen = [s for s in sample_sets if _stage(s) <= look]
        latest = compare(seen, baseline, candidate, alpha, margins_used=margins_used)
        for row in latest.rows:
            if row.verdict is not None and row.identity not in found and row.verdict.decided:
                found[row.identity] = replace(row.verdict, look=look)
    if latest is None:
        return compare(sample_sets, baseline, candidate, margins_used=margins_used)
    last = len(alphas)
    rows = tuple(
        replace(row, verdict=found[row.identity], n=found[row.identity].n or 0)
        if row.identity in found
        else replace(row, verdict=replace(row.verdict, look=last) if row.verdict else None)
        for row in latest.rows
    )
    families: dict[str, tuple[Row, ...]] = {}
    for row in rows:
        if row.family is not None:
            families[row.family] = (*families.get(row.family, ()), row)
    return replace(latest, rows=rows, families=families, alpha=sum(alphas), looks=len(alphas))


def compare_runs(
    baseline_sets: Iterable[SampleSet],
    candidate_sets: Iterable[SampleSet],
    baseline: str = "baseline",
    candidate: str = "candidate",
    alpha: float = verdicts.ALPHA,
    min_effect: float = verdicts.MIN_EFFECT,
) -> Comparison:
    """Each codec of one run against the same codec of another, per identity both
    measured: nothing paired across runs (module docstring), families (suite, profile)
    over every codec. `baseline` and `candidate` name the runs. Every row is judged
    against 1 +/- `min_effect` (a change between runs, not a product margin)."""
    grouped_base, grouped_cand = group(baseline_sets), group(candidate_sets)
    codec_order: dict[str, int] = {}
    for grouped in (grouped_base, grouped_cand):
        for codecs in grouped.values():
            for codec in codecs:
                codec_order.setdefault(codec, len(codec_order))

    def order(pair: tuple[str, Identity]) -> tuple[Any, ...]:
        codec, key = pair
        suite, suite_name, profile, *rest = _order(key)
        return (suite, suite_name, profile, codec_order[codec], *rest, key)

    measured = [
        {(codec, key) for key, codecs in grouped.items() for codec in codecs}
        for grouped in (grouped_base, grouped_cand)
    ]
    both = sorted(measured[0] & measured[1], key=order)
    matches = [
        (key, codec, grouped_base[key][codec], codec, grouped_cand[key][codec])
        for codec, key in both
    ]
    relative = Margins(relative_only=True)
    rows, families = _rows(matches, False, alpha, min_effect, {}, relative)
    return Comparison(
        baseline=baseline,
        candidate=candidate,
        rows=tuple(rows),
        alpha=alpha,
        min_effect=min_effect,
        families=families,
        left_out=tuple(sorted(measured[0] ^ measured[1], key=order)),
        margins=relative,
    )


def margins_of(manifest: dict[str, Any]) -> Margins:
    """The margins a run asked for (its spec's `margins` and `streams`); a manifest that
    does not say (an older run, a hostile one) gets the defaults."""
    spec = manifest.get("spec")
    spec = spec if isinstance(spec, dict) else {}
    chosen = spec.get("margins")
    streams = spec.get("streams")
    try:
        parsed = margins.parse(chosen) if isinstance(chosen, dict) else {}
    except Exception:  # a manifest's margins that no longer parse: the defaults
        parsed = {}
    return Margins(parsed, streams if isinstance(streams, int) and streams > 0 else 1)


def looks_of(manifest: dict[str, Any]) -> list[float] | None:
    """A sequential run's alpha per look, as its manifest records them; None otherwise."""
    sequential = manifest.get("sequential")
    if not isinstance(sequential, dict):
        return None
    looks = sequential.get("looks")
    if not isinstance(looks, list) or not looks:
        return None
    alphas = [look.get("alpha") for look in looks if isinstance(look, dict)]
    if len(alphas) != len(looks) or not all(isinstance(a, float) and 0 < a < 1 for a in alphas):
        return None
    return alphas  # type: ignore[return-value]


def compare_run(
    run: Run,
    baseline: str,
    candidate: str,
    alpha: float = verdicts.ALPHA,
    min_effect: float = verdicts.MIN_EFFECT,
) -> Comparison:
    """`compare` on a run directory's raw samples, with the margins it asked for; a
    sequential run's looks are replayed (`compare_looks`)."""
    return compare_recorded(run.samples(), run.manifest, baseline, candidate, alpha, min_effect)


def stage_seconds(manifest: dict[str, Any]) -> float | None:
    """One stage of the run's plan, in seconds: a sequential run's longest stage, else
    the planned duration of its tested suites (None when the manifest does not say)."""
    sequential = manifest.get("sequential")
    if isinstance(sequential, dict) and isinstance(sequential.get("looks"), list):
        took = [look.get("seconds") for look in sequential["looks"] if isinstance(look, dict)]
        numbers = [t for t in took if isinstance(t, (int, float)) and t > 0]
        if numbers:
            return float(max(numbers))
    planned = manifest.get("planned_seconds")
    if isinstance(planned, dict):
        numbers = [
            v for k, v in planned.items() if k in PAIRED_SUITES and isinstance(v, (int, float))
        ]
        return float(sum(numbers)) if numbers else None
    return None


def compare_recorded(
    sample_sets: Iterable[SampleSet],
    manifest: dict[str, Any],
    baseline: str,
    candidate: str,
    alpha: float = verdicts.ALPHA,
    min_effect: float = verdicts.MIN_EFFECT,
) -> Comparison:
    """A run's comparison as its manifest asked for it: its margins and streams, a
    sequential run's looks replayed (`compare_looks`), and its stage's seconds."""
    chosen = margins_of(manifest)
    alphas = looks_of(manifest)
    if alphas:
        found = compare_looks(sample_sets, baseline, candidate, alphas, chosen)
    else:
        found = compare(sample_sets, baseline, candidate, alpha, min_effect, chosen)
    return replace(found, stage_s=stage_seconds(manifest))


__all__ = [
    "CONTEXT",
    "FACT",
    "SEED_PAIR",
    "SUITE_ORDER",
    "TESTED",
    "Comparison",
    "Margins",
    "Row",
    "Side",
    "answer_pair",
    "busy_replicates",
    "compare",
    "compare_looks",
    "compare_recorded",
    "compare_run",
    "compare_runs",
    "group",
    "identity_of",
    "labels",
    "phase_log_ratio",
    "process_log_ratio",
]


#: Until renderers move to `labels` (kept for them; same function).
_labels = labels
