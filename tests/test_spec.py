"""The run spec is validated before anything runs."""

from __future__ import annotations

import pytest

from evbench_agent import codecs, spec
from evbench_agent.errors import UserError


def test_defaults_and_all_expansion():
    default = spec.from_dict({})
    assert default.profiles == ("seed", "ev-full")
    assert default.codecs == tuple(codecs.available())
    everything = spec.from_dict({"profiles": "all", "suites": "all"})
    assert "skip-nested" in everything.profiles
    assert everything.suites == spec.SUITES


def test_quick_is_a_fixed_small_plan_not_a_time_limit():
    quick = spec.from_dict({"quick": True}).plan
    assert quick == spec.QUICK_PLAN
    assert spec.from_dict({}).plan.processes * spec.from_dict({}).plan.values >= 100
    assert spec.from_dict({"quick": True, "processes": 3}).plan.processes == 3


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"colour": "red"}, "unknown spec key 'colour'"),
        ({"codecs": "json,nope"}, "unknown codec 'nope'"),
        ({"profiles": ["seed", "huge"]}, "unknown profile 'huge'"),
        ({"suites": "codec,warp"}, "unknown suite 'warp'"),
        ({"processes": 0}, "'processes' must be a number of at least 1"),
        ({"values": "ten"}, "'values' must be a number"),
        ({"quick": "yes"}, "'quick' must be true or false"),
        ({"codecs": []}, "'codecs' must be a non-empty list"),
        ({"cpu": -1}, "'cpu' must be a number of at least 0"),
    ],
)
def test_bad_specs_are_refused_naming_what_is_wrong(document, message):
    with pytest.raises(UserError, match=message):
        spec.from_dict(document)


def test_refusals_name_what_is_available():
    with pytest.raises(UserError) as caught:
        spec.from_dict({"profiles": "nope"})
    assert "seed" in caught.value.hint
    with pytest.raises(UserError) as caught:
        spec.from_dict({"colour": 1})
    assert "codecs" in caught.value.hint


def test_cpu_zero_is_a_cpu():
    assert spec.from_dict({"cpu": 0}).cpu == 0


def test_a_cpu_the_process_cannot_use_is_refused():
    with pytest.raises(UserError, match="cannot pin to CPU 4096") as caught:
        spec.from_dict({"cpu": 4096})
    assert "0" in caught.value.hint


def test_spec_round_trips_through_its_dict():
    original = spec.from_dict({"profiles": "seed", "codecs": "json,protobuf", "quick": True})
    assert spec.from_dict(original.as_dict()) == original
