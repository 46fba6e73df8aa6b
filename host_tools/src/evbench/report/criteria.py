"""Regression thresholds: 5 % by default, per metric from a JSON criteria file.

    {
      "default_percent": 5,
      "metrics": {"decode": 3, "seed/json/encode": 10, "link/seed/protobuf/rtt": 8}
    }

A key is a metric name, `profile/codec/metric` or `suite/profile/codec/metric`;
the most specific key that matches wins. Thresholds are percentages of the
baseline's median, in the metric's worse direction.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from evbench_core.errors import UserError

DEFAULT_PERCENT = 5.0
KEYS = frozenset({"default_percent", "metrics"})
#: A criteria file is a few lines; anything larger is not one.
MAX_BYTES = 1024 * 1024
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
        {str(k): _percent(v, f"metrics[{_shown(k)}]", path) for k, v in per_metric.items()},
    )
