"""A run's results as LAVA test-shell signals, so LAVA's dashboards read evbench.

LAVA's test shell watches the board's console for ``<LAVA_SIGNAL_NAME params>``
(lava_dispatcher's pattern ``<LAVA_SIGNAL_(\\S+) ([^>]+)>``). Its runner wraps
each test definition in STARTRUN/ENDRUN itself, so evbench never sends those
(a second STARTRUN would replace the runner's test id); it groups its cases in
one test set per suite (TESTSET START/STOP) and sends one TESTCASE per:

- summary record: ``<suite>.<profile>.<codec>.<metric>[.<phase>].<h>``, result
  ``pass`` with MEASUREMENT = the median in the record's unit and UNITS
  (spelled as evbench_agent.integrations.lava_units says; the results reader
  lets only finite medians through, and LAVA reads measurements with
  ``decimal.Decimal``: NaN and infinities are never sent);
- record a partial run misses (an identity another codec of the run has):
  the same id, result ``fail``, no measurement;
- verdict row (test set ``verdicts``): ``verdict.<profile>.<metric>[.<phase>].<h>``,
  MEASUREMENT = the ratio candidate/baseline, result by `Criteria`: ``skip``
  when the plan could not reach a verdict ("n too small"), ``unknown`` when the
  row is "undecided" (its interval straddles the +/- 2 % band) under the
  ``report`` rule; and a plain console line ``evbench verdict <id>: <word>``
  before it with the verdict in the table's words (a codec, ``equal``,
  ``undecided``, ``n too small``), which LAVA keeps in the job's log;
- ``run.complete``: pass when the run is complete.

``<h>`` is the first 8 hex digits of the SHA-256 of the identity's canonical
params: the same settings give the same id on every night, different ones never
share it. Ids hold only ``[A-Za-z0-9._-]``; parameters carry no ``=`` or space,
because LAVA splits them on white space and on ``=``.
"""

from __future__ import annotations

import math
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from evbench_agent.integrations import lava_units
from evbench_core import comparison, digests
from evbench_core.analysis import identity, verdicts
from evbench_core.results import Run, load_run

#: What decides a verdict test case's result.
REPORT = "report"  # pass whenever a verdict was reached (the row is informational)
NOT_WORSE = "candidate-not-worse"  # fail when the baseline wins
WINS = "candidate-wins"  # pass only when the candidate wins
CRITERIA = (REPORT, NOT_WORSE, WINS)
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def in_lava_test_shell() -> bool:
    """True inside a LAVA test shell: its helpers are on PATH and it sets its result dir."""
    return bool(os.environ.get("LAVA_RESULT_DIR")) or shutil.which("lava-test-case") is not None


def _part(text: object) -> str:
    return _UNSAFE.sub("-", str(text)).strip("-") or "none"


def _digest(key: identity.Identity) -> str:
    return digests.sha256(key.params.encode()).hexdigest()[:8]


def _phase(key: identity.Identity) -> list[str]:
    params = key.params_dict
    return [_part(params[name]) for name in ("phase", "operation", "kind") if name in params]


def record_case_id(key: identity.Identity, codec: str | None) -> str:
    """The test case id of one record (an identity measured for one codec)."""
    parts = [key.suite, key.profile or "all", codec or "all", key.metric, *_phase(key)]
    return ".".join(_part(p) for p in parts) + "." + _digest(key)


def verdict_case_id(key: identity.Identity) -> str:
    parts = ["verdict", key.profile or "all", key.metric, *_phase(key)]
    return ".".join(_part(p) for p in parts) + "." + _digest(key)


def _number(value: float) -> str:
    return repr(float(value))  # shortest round-trip form; Decimal reads "1e-06" too


def _signal(name: str, *params: str) -> str:
    return f"<LAVA_SIGNAL_{name} {' '.join(params)}>"


def _case(case_id: str, result: str, measurement: float | None, unit: str | None) -> str:
    params = [f"TEST_CASE_ID={case_id}", f"RESULT={result}"]
    if measurement is not None and math.isfinite(measurement):
        params.append(f"MEASUREMENT={_number(measurement)}")
        if unit:
            params.append(f"UNITS={_lava_unit(unit)}")
    return _signal("TESTCASE", *params)


def _lava_unit(unit: str) -> str:
    try:
        return lava_units.to_lava(unit)
    except lava_units.UnknownUnit:
        return _part(unit)  # a unit newer than the table still travels, legibly


@dataclass(frozen=True)
class Criteria:
    """How verdict rows become pass or fail."""

    rule: str = REPORT

    def result(self, row: comparison.Row) -> str:
        # Only the roles are read: the verdict's wording may change, its winner may not.
        outcome = row.outcome
        if outcome is None or row.too_small:
            return "skip"
        if self.rule == NOT_WORSE:
            return "fail" if outcome == verdicts.BASELINE else "pass"
        if self.rule == WINS:
            return "pass" if outcome == verdicts.CANDIDATE else "fail"
        return "unknown" if outcome == verdicts.UNDECIDED else "pass"


def verdict_word(row: comparison.Row, baseline: str, candidate: str) -> str:
    """The row's verdict as the table says it: the winning codec, equal, undecided or
    n too small."""
    outcome = row.outcome or verdicts.TOO_SMALL
    return {verdicts.BASELINE: baseline, verdicts.CANDIDATE: candidate}.get(outcome, outcome)


def record_signals(run: Run) -> Iterator[tuple[str, str]]:
    """(suite, signal line) for every record, and a failing case for every one missing."""
    by_suite: dict[str, dict[identity.Identity, dict[str | None, dict[str, Any]]]] = {}
    for record in run.records:
        key = identity.of_record(record)
        by_suite.setdefault(key.suite, {}).setdefault(key, {})[record.get("codec")] = record
    for suite, keys in by_suite.items():
        codecs_of_suite = sorted(
            {codec for measured in keys.values() for codec in measured if codec}, key=str
        )
        for key in sorted(keys):
            measured = keys[key]
            expected = [None] if None in measured else codecs_of_suite
            for codec in expected:
                found = measured.get(codec)
                case_id = record_case_id(key, codec)
                if found is None:
                    yield suite, _case(case_id, "fail", None, None)
                    continue
                yield suite, _case(case_id, "pass", found["median"], key.unit)


def verdict_signals(run: Run, baseline: str, candidate: str, criteria: Criteria) -> Iterator[str]:
    """One test case per TESTED row of the run's comparison of the two codecs."""
    answer = comparison.compare_run(run, baseline, candidate)
    for row in answer.by_role(identity.TESTED):
        ratio = row.verdict.ratio if row.verdict is not None else None
        case_id = verdict_case_id(row.identity)
        yield f"evbench verdict {case_id}: {verdict_word(row, baseline, candidate)}"
        yield _case(case_id, criteria.result(row), ratio, "ratio")


def signals(
    run: Run,
    baseline: str | None = None,
    candidate: str | None = None,
    criteria: Criteria | None = None,
) -> Iterator[str]:
    """Every signal line for a run, in the order LAVA should see them."""
    current = None
    for suite, line in record_signals(run):
        if suite != current:
            if current is not None:
                yield _signal("TESTSET", "STOP")
            yield _signal("TESTSET", "START", _part(suite))
            current = suite
        yield line
    if current is not None:
        yield _signal("TESTSET", "STOP")
    codecs = {r.get("codec") for r in run.records}
    if baseline and candidate and baseline in codecs and candidate in codecs:
        yield _signal("TESTSET", "START", "verdicts")
        yield from verdict_signals(run, baseline, candidate, criteria or Criteria())
        yield _signal("TESTSET", "STOP")
    yield _case("run.complete", "pass" if run.complete else "fail", None, None)


def emit(lines: Iterator[str], stream: TextIO) -> int:
    """Write each signal on a line of its own (LAVA reads the console line by line)."""
    count = 0
    for line in lines:
        stream.write("\n" + line + "\n")
        count += 1
    stream.flush()
    return count


def default_pair(run: Run) -> tuple[str | None, str | None]:
    """The codecs the run's table compares: its A/A arms, else json against protobuf."""
    aa = run.manifest.get("aa") if isinstance(run.manifest, dict) else None
    if isinstance(aa, dict) and aa.get("codec") and aa.get("copy"):
        return str(aa["codec"]), str(aa["copy"])
    return comparison.SEED_PAIR


def signal_run(directory: Path, stream: TextIO, criteria: Criteria | None = None) -> int:
    """Read a run directory and send its signals; returns how many were sent."""
    run = load_run(directory)
    baseline, candidate = default_pair(run)
    return emit(signals(run, baseline, candidate, criteria), stream)
