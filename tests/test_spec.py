"""The run spec is validated before anything runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evbench_agent import cli, codecs, spec
from evbench_core.errors import UserError


def test_defaults_all_expansion_and_the_quick_plan():
    default = spec.from_dict({})
    assert default.profiles == ("seed", "ev-full")
    assert default.codecs == tuple(codecs.available())
    assert default.plan.processes * default.plan.values >= 100
    everything = spec.from_dict({"profiles": "all", "suites": "all"})
    assert "skip-nested" in everything.profiles
    assert everything.suites == spec.SUITES
    # quick is a fixed small plan, not a time limit
    assert spec.from_dict({"quick": True}).plan == spec.QUICK_PLAN
    assert spec.from_dict({"quick": True, "processes": 3}).plan.processes == 3
    assert spec.from_dict({"cpu": 0}).cpu == 0  # CPU 0 is a CPU


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"colour": "red"}, "unknown spec key 'colour'"),
        ({"codecs": "json,nope"}, "unknown codec 'nope'"),
        ({"profiles": ["seed", "huge"]}, "unknown profile 'huge'"),
        ({"suites": "codec,warp"}, "unknown suite 'warp'"),
        ({"processes": 0}, "'processes' must be a whole number of at least 1"),
        ({"values": "ten"}, "'values' must be a whole number"),
        ({"quick": "yes"}, "'quick' must be true or false"),
        ({"codecs": []}, "'codecs' must be a non-empty list"),
        ({"cpu": -1}, "'cpu' must be a whole number of at least 0"),
        # the A/A settings
        ({"aa_slowdown": 0.1}, "needs --aa CODEC"),
        ({"aa": "json", "aa_slowdown": -0.1}, "'aa_slowdown' must be a fraction from 0 to 10"),
        ({"aa": "json", "aa_slowdown": 11}, "'aa_slowdown' must be a fraction"),
        ({"aa": "json", "aa_slowdown": True}, "'aa_slowdown' must be a fraction"),
        ({"aa": "json-aa"}, "'aa' must name one installed codec"),
        ({"aa": ["json"]}, "'aa' must be the name of one installed codec"),
        ({"aa": "yaml"}, "unknown codec 'yaml'"),
        ({"cpu": 4096}, "cannot pin to CPU 4096"),
    ],
)
def test_bad_specs_are_refused_naming_what_is_wrong(document, message):
    with pytest.raises(UserError, match=message):
        spec.from_dict(document)


@pytest.mark.parametrize(
    ("document", "hint"),
    [({"profiles": "nope"}, "seed"), ({"colour": 1}, "codecs"), ({"cpu": 4096}, "0")],
)
def test_refusals_name_what_is_available(document, hint):
    with pytest.raises(UserError) as caught:
        spec.from_dict(document)
    assert hint in caught.value.hint


def test_an_aa_run_measures_the_codec_against_its_copy_instead_of_the_codec_list():
    aa = spec.from_dict({"aa": "json", "codecs": "protobuf,orjson"})
    assert aa.codecs == ("json", "json-aa")
    assert aa.slowdown("json") == 0.0 and aa.slowdown("json-aa") == 0.0
    slowed = spec.from_dict({"aa": "protobuf", "aa_slowdown": 0.1})
    assert slowed.slowdown("protobuf-aa") == 0.1 and slowed.slowdown("protobuf") == 0.0
    assert spec.from_dict(slowed.as_dict()) == slowed  # what the manifest keeps loads again


def test_a_spec_round_trips_through_its_dict_and_the_committed_run_spec_still_loads():
    original = spec.from_dict({"profiles": "seed", "codecs": "json,protobuf", "quick": True})
    assert spec.from_dict(original.as_dict()) == original
    manifest = Path(__file__).parent / "data" / "runs" / "core-v1" / "manifest.json"
    document = json.loads(manifest.read_text())["spec"]
    document["codecs"] = [c for c in document["codecs"] if c in codecs.available()]
    loaded = spec.from_dict(document)
    assert loaded.aa is None and loaded.aa_slowdown == 0.0


@pytest.mark.parametrize("text", ["[1, 2]", '"quick"', "3"])
def test_a_spec_file_that_is_not_a_json_object_is_a_user_error(tmp_path, text, capsys):
    path = tmp_path / "spec.json"
    path.write_text(text)
    with pytest.raises(UserError, match="is not a JSON object"):
        spec.load(path)
    # The agent merges its run options into the spec's keys: one line and exit 2, no traceback.
    assert cli.agent(["run", "--spec", str(path), "--out", str(tmp_path / "out")]) == 2
    assert "is not a JSON object" in capsys.readouterr().err
