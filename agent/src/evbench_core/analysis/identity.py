"""What a record measured (its identity) and what role its metric plays in a comparison.

A sample set's ``params`` mix three kinds of entries:

- **identity** params say *what was measured*: the plan and settings
  (payloads, seed, mode, rate, window, phase kind, telemetry phase, ...).
  Two sample sets with different identity params are different
  measurements: they are never pooled, and a codec comparison only pairs
  sets whose identity is the same.
- **replicate** params say *which repetition* of the same measurement a set
  is (worker process, round, phase index). They split the data into the
  units a test counts, never into rows.
- **outcome** params say *what happened* while measuring (calibrated loops,
  real-time scheduling granted, throttling, the idle power found, the
  shortest sample span). Codecs may differ in them; they never split a
  comparison.

Any param not declared here counts as identity: an unknown param can only
make rows finer, never pool two measurements that differ.

Each metric has a role:

- ``TESTED``: a measured performance figure; gets a verdict from the
  replication-aware method (docs/method.md) within its test family.
- ``FACT``: exact or nominal (encoded sizes; bandwidth, which follows from
  sizes and the nominal rate): shown as a difference, never tested.
- ``CONTEXT``: telemetry (machine and agent CPU, RSS, temperature, clock,
  power), modelled energy, rare-event counts and informational figures:
  shown per codec with its spread, no winner, outside every test family.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

TESTED = "tested"
FACT = "fact"
CONTEXT = "context"
ROLES = (TESTED, FACT, CONTEXT)

#: Params that say which repetition a set is, not what it measured.
REPLICATE_PARAMS = frozenset(
    {
        "worker",
        "process",
        "process_index",
        "round",
        "rounds",
        "rounds_order",
        "phase_index",
        # a sequential run's stage (--until-decided): its replicates are new ones
        "stage",
    }
)

#: Params that record what happened while measuring. Codecs may differ in them.
OUTCOME_PARAMS = frozenset(
    {
        # codec suite: calibration results and what the samples really spanned
        "loops",
        "calibration_loops",
        "recalibrated",
        "shortest_span_s",
        "shortest_s",
        "calibrated_loops",
        "min_span_s",
        # link: what the kernel granted, not what was asked for
        "realtime_granted",
        "policy",
        "timer_slack_ns",
        # telemetry: what the board did and what was found
        "throttled",
        "throttle_reasons",
        "idle_power_w",
        "median_time_s",
        "messages",
        "operations",
        "elapsed_s",
    }
)

#: The role of every metric evbench records. Unknown metrics are CONTEXT:
#: nothing gets a verdict unless it is declared testable here.
METRIC_ROLES: dict[str, str] = {
    # codec suite
    "encode": TESTED,
    "decode": TESTED,
    "decode_access": TESTED,
    "size": FACT,
    "size_deflate": FACT,
    # link suite, per message (tested on per-phase medians)
    "rtt": TESTED,
    "rtt_transport": TESTED,
    "rtt_delta_abs": TESTED,
    "send_lateness": TESTED,
    # link suite, one value per phase
    "jitter_stdev": TESTED,
    "jitter_rfc3550": TESTED,
    "cpu_per_msg_client": TESTED,
    "cpu_per_msg_responder": TESTED,
    "capacity_msgs": TESTED,
    # follows from the encoded sizes and the nominal rate
    "bandwidth_payload": FACT,
    "bandwidth_wire": FACT,
    "bus_load": FACT,
    # informational: higher would reward bigger messages
    "capacity_bytes": CONTEXT,
    # rare events, mostly zero: a ratio test cannot apply
    "lost": CONTEXT,
    "late": CONTEXT,
    # the client's timer wake-up, measured without any codec
    "wakeup_latency": CONTEXT,
    # a bus interface's counters over a link phase: events on the bus, not the codec's
    "bus_errors": CONTEXT,
    "bus_counter": CONTEXT,
    # the machine around each replicate: why a row may be unreliable, not the codec's
    "contention_others_cpu": CONTEXT,
    "contention_steal": CONTEXT,
    "contention_freq_change": CONTEXT,
    # telemetry and modelled energy
    "cpu_util": CONTEXT,
    "agent_cpu": CONTEXT,
    "temp_max": CONTEXT,
    "freq_min": CONTEXT,
    "power_mean": CONTEXT,
    "rss_max": CONTEXT,
    "energy_per_op": CONTEXT,
    "energy_per_msg": CONTEXT,
}

#: The suite of the records telemetry derives from its samples (per phase, energy):
#: not a suite a run is asked for, but a suite a record may name.
TELEMETRY = "telemetry"
#: Suites whose every record is context, whatever the metric (telemetry of a phase).
CONTEXT_SUITES = frozenset({TELEMETRY})
#: The A/A control's second arm: `json-aa` is json under another name, so that
#: a run can compare a codec with itself (evbench run --aa json).
COPY_SUFFIX = "-aa"


def copy_name(name: str) -> str:
    """The name of `name`'s identical second arm in an A/A run."""
    return f"{name}{COPY_SUFFIX}"


def role(suite: str, metric: str) -> str:
    """TESTED, FACT or CONTEXT for a metric of a suite."""
    if suite in CONTEXT_SUITES:
        return CONTEXT
    return METRIC_ROLES.get(metric, CONTEXT)


def param_kind(name: str) -> str:
    """'identity', 'replicate' or 'outcome'."""
    if name in REPLICATE_PARAMS:
        return "replicate"
    if name in OUTCOME_PARAMS:
        return "outcome"
    return "identity"


def identity_params(params: dict[str, Any]) -> dict[str, Any]:
    """The params that make a record's identity."""
    return {k: v for k, v in params.items() if param_kind(k) == "identity"}


def outcome_params(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if param_kind(k) == "outcome"}


@dataclass(frozen=True, order=True)
class Identity:
    """What one row measured: everything but the codec and the repetition.

    ``params`` is the canonical JSON of the identity params (sorted keys), so
    identities hash, compare and sort.
    """

    suite: str
    profile: str
    metric: str
    unit: str
    params: str

    @property
    def params_dict(self) -> dict[str, Any]:
        params: dict[str, Any] = json.loads(self.params)  # a JSON object's text
        return params

    @property
    def role(self) -> str:
        return role(self.suite, self.metric)

    def as_dict(self) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "profile": self.profile,
            "metric": self.metric,
            "unit": self.unit,
            "params": self.params_dict,
        }


def identify(
    suite: str, profile: str | None, metric: str, unit: str, params: dict[str, Any]
) -> Identity:
    """The identity of a sample set or summary record (its codec aside)."""
    canonical = json.dumps(identity_params(params), sort_keys=True, default=str)
    return Identity(suite, "" if profile is None else str(profile), metric, unit, canonical)


def of_record(record: dict[str, Any]) -> Identity:
    """The identity of a summary.json record or a SampleSet's dict."""
    return identify(
        record["suite"],
        record.get("profile"),
        record["metric"],
        record["unit"],
        record.get("params") or {},
    )


__all__ = [
    "COPY_SUFFIX",
    "TELEMETRY",
    "TESTED",
    "Identity",
    "copy_name",
    "identity_params",
    "of_record",
    "role",
]
