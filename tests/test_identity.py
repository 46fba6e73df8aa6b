"""Record identity: what was measured, which repetition, what happened; metric roles."""

from evbench_core.analysis import identity, metrics
from evbench_core.analysis.identity import CONTEXT, FACT, TESTED


def test_outcomes_and_replicates_do_not_change_what_was_measured_the_plan_and_payloads_do():
    plan = {"processes": 10, "values": 10, "payloads": 200, "seed": 1}
    one = identity.identify("codec", "seed", "encode", "s", dict(plan, loops=16, worker=0))
    other = identity.identify("codec", "seed", "encode", "s", dict(plan, loops=1024, round=3))
    assert one == other
    assert one.params_dict == plan
    # a different plan setting or payload set is a different measurement
    base = identity.identify("link", "seed", "rtt", "s", {"mode": "ack", "rate_hz": 20.0})
    echo = identity.identify("link", "seed", "rtt", "s", {"mode": "echo", "rate_hz": 20.0})
    assert base != echo
    # a param nobody declared counts as identity: it can only make rows finer
    new = identity.identify("link", "seed", "rtt", "s", {"mode": "ack", "rate_hz": 20.0, "x": 1})
    assert new != base
    assert identity.param_kind("x") == "identity"
    # records that differ only in their payload set's digest are two rows
    common = {"payloads": 200, "seed": 1, "loops": 10}
    one = identity.identify("codec", "seed", "encode", "s", dict(common, payload_digest="a" * 16))
    two = identity.identify("codec", "seed", "encode", "s", dict(common, payload_digest="b" * 16))
    assert one != two
    assert one.params_dict["payload_digest"] == "a" * 16


def test_telemetry_phases_and_kinds_are_separate_identities():
    periodic = {"phase": "link", "kind": "periodic", "interval_s": 0.1, "throttled": False}
    capacity = dict(periodic, kind="capacity", throttled=True, throttle_reasons=["thermal"])
    a = identity.identify("telemetry", "seed", "agent_cpu", "percent", periodic)
    b = identity.identify("telemetry", "seed", "agent_cpu", "percent", capacity)
    assert a != b
    # throttling is an outcome: the same phase kind throttled or not is one identity
    assert a == identity.identify(
        "telemetry", "seed", "agent_cpu", "percent", dict(periodic, throttled=True)
    )


def test_roles_and_every_known_metric_has_one():
    assert identity.role("codec", "encode") == TESTED
    assert identity.role("link", "rtt_transport") == TESTED
    assert identity.role("codec", "size") == FACT
    assert identity.role("link", "bandwidth_wire") == FACT
    assert identity.role("link", "capacity_bytes") == CONTEXT
    assert identity.role("link", "lost") == CONTEXT
    # everything a telemetry phase records is context, whatever the metric
    for metric in ("agent_cpu", "cpu_util", "rss_max", "temp_max", "freq_min", "energy_per_op"):
        assert identity.role("telemetry", metric) == CONTEXT
    # nothing gets a verdict unless declared testable
    assert identity.role("codec", "something_new") == CONTEXT
    # so a metric added to metrics.py without a role would silently become context
    assert set(metrics.METRICS) <= set(identity.METRIC_ROLES)
    assert set(identity.METRIC_ROLES.values()) <= set(identity.ROLES)


def test_identity_of_a_summary_record_matches_its_sample_sets():
    record = {"suite": "codec", "profile": "seed", "codec": "json", "metric": "decode",
              "unit": "s", "params": {"loops": 8, "seed": 1}}  # fmt: skip
    sets = identity.identify("codec", "seed", "decode", "s", {"seed": 1, "loops": 99})
    assert identity.of_record(record) == sets
    assert identity.of_record(record).as_dict()["params"] == {"seed": 1}
