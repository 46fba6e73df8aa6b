"""Regression thresholds: 5 % by default, per metric from a JSON criteria file.

    {
      "default_percent": 5,
      "metrics": {"decode": 3, "seed/json/encode": 10, "link/seed/protobuf/rtt": 8}
    }

A key is a metric name, `profile/codec/metric` or `suite/profile/codec/metric`;
the most specific key that matches wins. Thresholds are percentages of the
baseline's median, in the metric's worse direction. A key no record can match (a
misspelt metric or suite, two parts, five) is refused, naming it: accepted, it would
leave the default threshold in place without a word.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from evbench_agent.registry import RECORD_SUITES
from evbench_core.analysis.metrics import METRICS
from evbench_core.errors import UserError

DEFAULT_PERCENT = 5.0
KEYS = frozenset({"default_percent", "metrics"})
#: A criteria file is a few lines; anything larger is not one.
MAX_BYTES = 1024 * 1024
#: The keys threshold() looks up, by their number of parts: the metric alone,
#: profile/codec/metric, suite/profile/codec/metric.
KEY_PARTS = (1, 3, 4)
KEY_FORMS = "a metric (decode), profile/codec/metric (seed/json/decode) or"
KEY_FORMS += " suite/profile/codec/metric (codec/seed/json/decode)"
#: No threshold is meaningful above this many percent (and a huge integer must not
#: reach float(), which overflows).
MAX_PERCENT = 1e6


@dataclass(frozen=True)
class Criteria:
    default_percent: float = DEFAULT_PERCENT
    metrics: dict[str, float] = field(default_factory=dict)

    def threshold(self, suite: str, profile: str, codec: str, metric: str) -> float:
        """The threshold in percent for one metric, the most specific key first."""
        for key in (f"{suite}/{profile}/{codec}/{metric}", f"{profile}/{codec}/{metric}", metric):
            if key in self.metrics:
                return self.metrics[key]
        return self.default_percent


def _shown(value: object) -> str:
    text = repr(value) if not isinstance(value, int) or abs(value) < 10**30 else "a huge integer"
    return text if len(text) <= 60 else f"{text[:40]}... ({len(text)} characters)"


def _percent(value: object, where: str, path: Path) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UserError(f"{path}: {where} must be a number of percent, not {_shown(value)}")
    if value < 0:
        raise UserError(f"{path}: {where} must not be negative ({_shown(value)})")
    # Compared before any float(): an integer beyond a float's range would overflow.
    if (isinstance(value, float) and not math.isfinite(value)) or value > MAX_PERCENT:
        raise UserError(
            f"{path}: {where} is {_shown(value)}; a threshold is at most {MAX_PERCENT:g} percent"
        )
    return float(value)


def _metric_key(key: str, path: Path) -> str:
    """`key` when some record could match it; refused, naming why, when none ever could.

    The metric and the suite are closed lists (metrics.METRICS, the suites' registry);
    profiles and codecs are not (a user's schema:NAME profile, a native codec, an A/A
    copy), so any non-empty name passes there."""
    parts = key.split("/")
    if len(parts) not in KEY_PARTS:
        _refuse_key(key, f"{len(parts)} parts, not 1, 3 or 4", path)
    if "" in parts:
        _refuse_key(key, "an empty part", path)
    if parts[-1] not in METRICS:
        # A qualified name as history shows it (encode[phase=...]) means its metric.
        meant = _closest(parts[-1].split("[", 1)[0], METRICS)
        _refuse_key(key, f"evbench records no metric {_shown(parts[-1])}", path, meant)
    if len(parts) == 4 and parts[0] not in RECORD_SUITES:
        meant = _closest(parts[0], RECORD_SUITES)
        _refuse_key(key, f"evbench records no suite {_shown(parts[0])}", path, meant)
    return key


def _closest(name: str, known: Iterable[str]) -> str:
    """A hint's opening: the known name `name` may have meant, or every known name."""
    names = list(known)
    # Cut: difflib's cost grows with the name's length, and no known name is this long.
    close = difflib.get_close_matches(name[:64], names, n=1)
    return f"did you mean {close[0]!r}? " if close else f"known: {', '.join(names)}; "


def _refuse_key(key: str, why: str, path: Path, opening: str = "") -> NoReturn:
    raise UserError(
        f"{path}: the metrics key {_shown(key)} can never match: {why}",
        hint=f"{opening}a key is {KEY_FORMS}",
    )


def load(path: Path) -> Criteria:
    """Read a criteria file; anything unexpected is refused, naming it."""
    try:
        with Path(path).open("rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
    except OSError as error:
        raise UserError(f"cannot read the criteria file {path}: {error.strerror}") from error
    if len(raw) > MAX_BYTES:
        raise UserError(f"the criteria file {path} is larger than {MAX_BYTES} bytes")
    try:
        document = json.loads(raw.decode("utf-8"))
    except RecursionError as error:
        raise UserError(f"the criteria file {path} is nested too deeply") from error
    except ValueError as error:  # not UTF-8, not JSON, or an integer of 4300+ digits
        raise UserError(
            f"the criteria file {path} is not JSON: {error}",
            hint='write e.g. {"default_percent": 5, "metrics": {"decode": 3}}',
        ) from error
    if not isinstance(document, dict) or set(document) - KEYS:
        unknown = sorted(set(document) - KEYS) if isinstance(document, dict) else document
        raise UserError(
            f"{path}: unknown criteria keys {_shown(unknown)}",
            hint=f"known: {', '.join(sorted(KEYS))}",
        )
    per_metric = document.get("metrics", {})
    if not isinstance(per_metric, dict):
        raise UserError(f"{path}: 'metrics' must map metric keys to percentages")
    return Criteria(
        _percent(document.get("default_percent", DEFAULT_PERCENT), "default_percent", path),
        {
            _metric_key(k, path): _percent(v, f"metrics[{_shown(k)}]", path)
            for k, v in per_metric.items()
        },
    )
