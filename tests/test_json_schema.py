"""evbench_core.json_schema against the `jsonschema` package: every shipped schema is valid
draft 2020-12 in the agent's subset, and on documents generated near it the two validators
agree (jsonschema's type checker given the stated differences: integers have no fraction,
numbers are finite)."""

import functools
import json
import math
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evbench_core import json_schema
from evbench_core.errors import FormatError, UserError

ROOT = Path(__file__).resolve().parents[1]
#: Every schema file shipped, found on disk (not from a list the code keeps).
SHIPPED = sorted(
    path
    for base in (ROOT / "agent" / "src", ROOT / "host_tools" / "src")
    for path in base.rglob("schemas/*.schema.json")
)


def _vocabulary(schema: object) -> tuple[list[str], list[object]]:
    """The keys and the literal values (enums, defaults, bounds) a schema mentions."""
    keys: list[str] = []
    values: list[object] = []
    pending = [schema]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            keys += [k for k in item.get("properties", {}) if isinstance(k, str)]
            values += list(item.get("enum", []))
            values += [item[n] for n in ("const", "default", "minimum", "maximum") if n in item]
            pending += list(item.values())
        elif isinstance(item, list):
            pending += item
    return sorted(set(keys)), values


def _documents(schema: dict) -> st.SearchStrategy:
    keys, literals = _vocabulary(schema)
    scalars = st.one_of(
        st.none(), st.booleans(), st.integers(-10, 10), st.integers(),
        st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, 1.0, 2.5, -1.0]),
        st.text(max_size=6),
        st.sampled_from(["local", "labgrid://a", "a b", "am62x-1", "json,protobuf", ""]),
        st.sampled_from([v for v in literals if not isinstance(v, (dict, list))] or [None]),
    )  # fmt: skip
    names = st.sampled_from(keys or ["x"]) | st.text(max_size=4)
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(names, inner, max_size=5),
        max_leaves=20,
    )


def _paths(document: object, path: tuple = ()) -> list[tuple]:
    """Every place in a document: the paths of its objects' keys and lists' items."""
    if not isinstance(document, (dict, list)):
        return [path]
    places = document.items() if isinstance(document, dict) else enumerate(document)
    return [path, *(found for key, value in places for found in _paths(value, (*path, key)))]


def _replaced(document: object, path: tuple, value: object) -> object:
    if not path:
        return value
    copy = target = json.loads(json.dumps(document))
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return copy


def _near_valid(schema: dict) -> st.SearchStrategy:
    """The schema's own valid examples with one place changed (a value replaced, a key
    added): most get past the first checks, where random documents stop at the top."""
    keys, _ = _vocabulary(schema)

    @st.composite
    def mutate(draw: st.DrawFn) -> object:
        example = draw(st.sampled_from(schema["examples"]))
        path = draw(st.sampled_from(_paths(example)))
        value = draw(_documents(schema))
        if draw(st.booleans()) and path:
            return _replaced(example, path, value)
        parent = path[:-1] if path else ()
        if isinstance(functools.reduce(lambda node, part: node[part], parent, example), dict):
            key = draw(st.sampled_from(keys) | st.text(max_size=3))
            return _replaced(example, (*parent, key), value)
        return example

    return mutate()


def test_the_schemas_are_found():
    names = {path.name for path in SHIPPED}
    assert {"lab.schema.json", "lab-index.schema.json"} <= names


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_a_shipped_schema_is_in_the_subset_its_examples_pass_and_the_validators_agree(path):
    schema = json.loads(path.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    json_schema.check_schema(schema)  # no keyword the agent's validator would not check
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"

    # jsonschema's type checker given the stated differences
    def integer(_checker: object, v: object) -> bool:
        return isinstance(v, int) and not isinstance(v, bool)

    def number(_checker: object, v: object) -> bool:
        return integer(_checker, v) or (isinstance(v, float) and math.isfinite(v))

    types = {"integer": integer, "number": number}
    checker = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine_many(types)
    kind = jsonschema.validators.extend(jsonschema.Draft202012Validator, type_checker=checker)
    oracle = kind(schema)
    assert schema["examples"]
    for example in schema["examples"]:
        assert json_schema.first_problem(example, schema) is None
        assert oracle.is_valid(example)

    @settings(
        max_examples=300, deadline=None, suppress_health_check=list(HealthCheck), database=None
    )
    @given(document=_documents(schema) | _near_valid(schema) | st.sampled_from(schema["examples"]))
    def agree(document: object) -> None:
        ours = json_schema.first_problem(document, schema)
        theirs = oracle.is_valid(document)
        assert (ours is None) == theirs, (document, ours)

    agree()


SMALL = {
    "type": "object",
    "additionalProperties": False,
    "required": ["n"],
    "properties": {
        "n": {"type": "integer", "minimum": 1, "maximum": 5},
        "x": {"type": "number", "exclusiveMinimum": 0},
        "names": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
        "mode": {"enum": ["echo", "ack"]},
        "either": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
        "label": {"type": "string", "pattern": "^[a-z]+$", "title": "a lower-case word"},
    },
}


@pytest.mark.parametrize(
    ("document", "said"),
    [
        ([], "the top level must be an object, not []"),
        ({"n": 1, "colour": 1, "size": 2}, "unknown keys 'colour', 'size' in the top level"),
        ({}, "'n' is missing"),
        ({"n": 0}, "n must be a whole number of at least 1 and at most 5, not 0"),
        ({"n": 2.0}, "n must be a whole number of at least 1 and at most 5, not 2.0"),
        ({"n": True}, "n must be a whole number of at least 1 and at most 5, not True"),
        ({"n": 1, "x": 0}, "x must be a number above 0, not 0"),
        ({"n": 1, "x": math.nan}, "x must be a number above 0, not nan"),
        ({"n": 1, "names": []}, "names must be a non-empty list of text, not []"),
        ({"n": 1, "names": ["a", ""]}, "names[1] must not be empty"),
        ({"n": 1, "mode": "loud"}, "mode must be 'echo' or 'ack', not 'loud'"),
        ({"n": 1, "either": [1]}, "either[0] must be text, not 1"),
        ({"n": 1, "either": 1}, "either must be text or a list of text, not 1"),
        ({"n": 1, "label": "Ab"}, "label must be a lower-case word, not 'Ab'"),
    ],
)
def test_a_problem_is_one_line_naming_the_field(document, said):
    with pytest.raises(UserError) as raised:
        json_schema.validate(document, SMALL, "f.json")
    assert str(raised.value) == f"f.json: {said}"
    assert "\n" not in str(raised.value)


def test_an_unknown_key_names_the_keys_there_and_the_error_type_is_the_readers():
    with pytest.raises(FormatError) as raised:
        json_schema.validate({"n": 1, "nn": 2}, SMALL, "f.json", FormatError)
    assert raised.value.hint == "the keys there are n, x, names, mode, either, label"


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "propertyNames": {"pattern": "^a"}},
        {"type": "object", "properties": {"a": {"type": "strings"}}},
        {"$ref": "#/$defs/missing"},
        {"$defs": {"a": {"type": "string"}}, "$ref": "#/$defs/a", "minLength": 2},
        {"items": {"if": {"type": "string"}}},
        [],
    ],
)
def test_a_schema_outside_the_subset_is_refused_when_loaded(schema):
    with pytest.raises(json_schema.SchemaError):
        json_schema.check_schema(schema)
