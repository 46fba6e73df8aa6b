"""The criteria reader on hostile or broken files (issue 16, item 4: huge integers, deep
nesting): Criteria or the project's UserError, never an internal error; the properties
(hypothesis) feed any JSON value and any bytes."""

import json
import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evbench.cli import evbench
from evbench.report import criteria
from evbench_core.errors import UserError

REFUSED = {
    "an integer beyond a float": '{"default_percent": 1' + "0" * 400 + "}",
    "a per-metric integer beyond a float": '{"metrics": {"decode": ' + "9" * 400 + "}}",
    "4300+ digits": '{"default_percent": ' + "9" * 5000 + "}",
    "deep nesting": '{"metrics": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "deep nesting at the top": "[" * 100_000,
    "not UTF-8": b'{"metrics": {"\xff": 3}}',
    "infinite": '{"default_percent": Infinity}',
    "a huge key list": '{"' + '": 1, "'.join(f"k{i}" for i in range(20_000)) + '": 1}',
    "an unknown key": '{"default": 5}',
    "a misspelt metric": '{"metrics": {"decodee": 3}}',
    "a huge metric key": '{"metrics": {"' + "x" * 100_000 + '": 3}}',
}

#: Metric keys no record can match, and why (docs/reports.md: a key is a metric,
#: profile/codec/metric or suite/profile/codec/metric; a metric is one evbench records).
NEVER_MATCHED = {
    "decodee": ("evbench records no metric 'decodee'", "did you mean 'decode'?"),
    "a/b/c/d/e": ("5 parts, not 1, 3 or 4", "a key is a metric"),
    "json/encode": ("2 parts, not 1, 3 or 4", "profile/codec/metric"),
    "seed//encode": ("an empty part", "suite/profile/codec/metric"),
    "cdec/seed/json/encode": ("evbench records no suite 'cdec'", "did you mean 'codec'?"),
    "seed/json/speed": ("evbench records no metric 'speed'", "known: size, size_deflate, encode"),
    # History's qualified names are looked up by their metric alone: never with "[...]".
    "encode[phase=periodic]": ("no metric 'encode[phase=periodic]'", "did you mean 'encode'?"),
}


def write(folder: Path, content: str | bytes) -> Path:
    path = folder / "criteria.json"
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_hostile_criteria_are_refused_with_a_clear_error(tmp_path, case):
    with pytest.raises(UserError) as refused:
        criteria.load(write(tmp_path, REFUSED[case]))
    assert str(tmp_path / "criteria.json") in str(refused.value)
    assert len(str(refused.value)) < 600, "the error must not echo the whole file"


def test_the_most_specific_key_wins_a_value_not_a_number_is_refused_every_form_read(tmp_path):
    metrics = {"decode": 3, "seed/json/decode": 2, "codec/seed/json/encode": 9}
    limits = criteria.load(write(tmp_path, json.dumps({"default_percent": 7, "metrics": metrics})))
    assert limits.default_percent == 7
    assert limits.threshold("codec", "seed", "json", "decode") == 2
    assert limits.threshold("codec", "seed", "protobuf", "decode") == 3
    assert limits.threshold("codec", "seed", "json", "encode") == 9
    assert limits.threshold("codec", "seed", "json", "size") == 7
    assert criteria.Criteria().threshold("codec", "seed", "json", "size") == 5
    with pytest.raises(UserError, match="must be a number of percent"):
        criteria.load(write(tmp_path, json.dumps({"metrics": {"decode": "fast"}})))
    # docs/reports.md's key forms, then a user's profile, a native codec and an A/A copy
    # (names evbench does not list), and a telemetry record's metric
    keys = ["decode", "seed/json/encode", "link/seed/protobuf/rtt", "codec/seed/json/decode"]
    keys += ["schema:bms.Pack/json/encode", "seed/nanopb-c/decode", "codec/seed/json-aa/size"]
    keys += ["telemetry/seed/json/cpu_util"]
    limits = criteria.load(write(tmp_path, json.dumps({"metrics": dict.fromkeys(keys, 9)})))
    assert limits.metrics == dict.fromkeys(keys, 9.0)


@pytest.mark.parametrize("key", sorted(NEVER_MATCHED))
def test_a_metric_key_that_can_never_match_is_refused_naming_it_and_the_forms(tmp_path, key):
    said, hinted = NEVER_MATCHED[key]
    with pytest.raises(UserError) as refused:
        criteria.load(write(tmp_path, json.dumps({"metrics": {"decode": 3, key: 1}})))
    assert f"the metrics key {key!r} can never match: " in str(refused.value)
    assert said in str(refused.value)
    assert hinted in (refused.value.hint or "")


KEY = st.text(max_size=8)
SCALARS = st.none() | st.booleans() | st.integers(-(10**400), 10**400) | st.floats() | KEY
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEY, inner, max_size=3),
    max_leaves=8,
)
CRITERIA = st.fixed_dictionaries(
    {}, optional={"default_percent": JSON, "metrics": JSON | st.dictionaries(KEY, JSON)}
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(JSON, CRITERIA).map(json.dumps) | st.binary(max_size=512))
def test_any_json_value_or_bytes_give_sane_criteria_or_a_user_error(content):
    with tempfile.TemporaryDirectory() as folder:
        try:
            loaded = criteria.load(write(Path(folder), content))
        except UserError:
            return
    for value in (loaded.default_percent, *loaded.metrics.values()):
        assert isinstance(value, float) and math.isfinite(value) and value >= 0


@pytest.mark.parametrize(
    ("case", "said"),
    [
        ("an integer beyond a float", "default_percent is a huge integer"),
        ("deep nesting", "is nested too deeply"),
        ("an unknown key", "unknown criteria keys ['default']"),
        ("a misspelt metric", "the metrics key 'decodee' can never match"),
    ],
)
def test_the_command_line_exits_2_naming_the_file(tmp_path, capsys, case, said):
    run = Path(__file__).parent / "data" / "runs" / "core-v1"  # read after the criteria
    path = write(tmp_path, REFUSED[case])
    code = evbench(["compare", str(run), str(run), "--criteria", str(path)])
    _, err = capsys.readouterr()
    assert code == 2, err
    assert str(path) in err and said in err and "internal error" not in err
