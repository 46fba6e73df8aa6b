"""A small JSON Schema validator: the subset evbench's file schemas use.

The agent runs on stdlib, protobuf and psutil only, so it cannot use the
`jsonschema` package; its file formats (the run spec, generator files) and the
host's (LAB.yaml, lab.json) are checked here instead, each against a schema
shipped beside its reader (`schemas/*.schema.json`, draft 2020-12). The subset:

- annotations: ``$schema``, ``$id``, ``$comment``, ``title``, ``description``,
  ``default``, ``examples``; ``$defs`` and ``$ref`` to ``#/$defs/NAME``;
- ``type`` (a name or a list), ``enum``, ``const``, ``anyOf``;
- objects: ``properties``, ``additionalProperties`` (false or a schema), ``required``;
- arrays: ``items``, ``minItems``, ``maxItems``;
- numbers: ``minimum``, ``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum``;
- text: ``minLength``, ``maxLength``, ``pattern`` (searched, as JSON Schema says).

Two deliberate differences from JSON Schema, both stricter: an ``integer`` is a
whole number written without a fraction (``1.0`` is not one), and a ``number`` is
finite (YAML's ``.nan`` and ``.inf`` are not numbers). A schema with any other
keyword is refused when it is loaded (SchemaError: a bug, not the user's), so a
schema can never say more than is checked. `tests/test_json_schema.py` holds
this validator to the `jsonschema` package's verdicts over generated documents.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any, cast

from evbench_core.errors import UserError

__all__ = [
    "Problem",
    "SchemaError",
    "check_schema",
    "describe",
    "first_problem",
    "load",
    "validate",
]

ANNOTATIONS = frozenset(
    {"$schema", "$id", "$comment", "title", "description", "default", "examples", "$defs"}
)
KEYWORDS = ANNOTATIONS | {
    "$ref",
    "type",
    "enum",
    "const",
    "anyOf",
    "properties",
    "additionalProperties",
    "required",
    "items",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
}
TYPES = ("object", "array", "string", "integer", "number", "boolean", "null")
_KIND = {
    "object": "an object",
    "array": "a list",
    "string": "text",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
}


#: A place in a document: object keys and list indexes from the top.
Where = tuple[str | int, ...]


class SchemaError(ValueError):
    """A schema outside the subset: evbench's own mistake, found when it is loaded."""


@dataclass(frozen=True)
class Problem:
    """Where a document breaks its schema and how, said for a user."""

    path: Where
    keyword: str  # the schema keyword that failed ("additionalProperties", "type", ...)
    message: str  # "unknown key 'x'", "must be a whole number, not 'a'"
    value: Any
    schema: dict[str, Any]  # the part of the schema that failed

    @property
    def where(self) -> str:
        return where(self.path)


def where(path: Where) -> str:
    """A path as a reader writes it: `boards[0].name`; the top level when empty."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text or "the top level"


def load(package: str, name: str) -> dict[str, Any]:
    """The schema `schemas/NAME` shipped in `package`, checked to be within the subset."""
    text = resources.files(package).joinpath("schemas").joinpath(name).read_text(encoding="utf-8")
    schema = json.loads(text)
    check_schema(schema)
    return cast("dict[str, Any]", schema)


def check_schema(schema: Any, root: Any = None) -> None:
    """Refuse a schema that uses anything outside the subset (SchemaError)."""
    root = schema if root is None else root
    if not isinstance(schema, dict):
        raise SchemaError(f"a schema is an object, not {schema!r:.60}")
    unknown = sorted(set(schema) - KEYWORDS)
    if unknown:
        raise SchemaError(f"keywords outside the subset: {', '.join(unknown)}")
    for kind in _types(schema):
        if kind not in TYPES:
            raise SchemaError(f"unknown type {kind!r}")
    if "$ref" in schema:
        _resolve(root, schema["$ref"])
        beside = sorted(set(schema) - ANNOTATIONS - {"$ref"})
        if beside:  # checked would be the target alone: say so rather than ignore them
            raise SchemaError(f"$ref takes annotations beside it, not {', '.join(beside)}")
    if "pattern" in schema:
        re.compile(schema["pattern"])
    children = [*schema.get("properties", {}).values(), *schema.get("anyOf", [])]
    children += [*schema.get("$defs", {}).values()]
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            children.append(schema[key])
    for child in children:
        check_schema(child, root)


def _resolve(root: dict[str, Any], ref: str) -> dict[str, Any]:
    prefix = "#/$defs/"
    if not ref.startswith(prefix) or ref[len(prefix) :] not in root.get("$defs", {}):
        raise SchemaError(f"$ref {ref!r} is not one of this schema's #/$defs")
    return cast("dict[str, Any]", root["$defs"][ref[len(prefix) :]])


def _types(schema: dict[str, Any], default: Sequence[str] = ()) -> list[str]:
    """The type names a schema allows, as a new list: its `type` is a name or a list."""
    kinds = schema.get("type", default)
    return [kinds] if isinstance(kinds, str) else list(kinds)


def is_type(value: Any, kind: str) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and (isinstance(value, int) or math.isfinite(value))
        )
    kinds = {"object": dict, "array": list, "string": str, "boolean": bool}
    if kind == "null":
        return value is None
    return isinstance(value, kinds[kind])


#: The keywords that each say by themselves what a schema accepts, asked in this order
#: (the first one present is the answer): a `$ref` is said as its target, a `title` is
#: the schema's own name for what it accepts. A schema with none is said by its type.
_SAID_BY: dict[str, Callable[[dict[str, Any], dict[str, Any]], str]] = {
    "$ref": lambda schema, root: describe(_resolve(root, schema["$ref"]), root),
    "title": lambda schema, root: str(schema["title"]),
    "enum": lambda schema, root: " or ".join(_literal(v) for v in schema["enum"]),
    "const": lambda schema, root: _literal(schema["const"]),
    "anyOf": lambda schema, root: " or ".join(describe(o, root) for o in schema["anyOf"]),
}
#: A number's bounds in words, said in this order: 'of at least 1 and at most 5'.
_BOUND_WORDS = {
    "minimum": "of at least",
    "exclusiveMinimum": "above",
    "maximum": "at most",
    "exclusiveMaximum": "below",
}


def describe(schema: dict[str, Any], root: dict[str, Any] | None = None) -> str:
    """What a schema accepts, in a few words: 'a whole number of at least 1'."""
    root = schema if root is None else root
    for keyword, say in _SAID_BY.items():
        if keyword in schema:
            return say(schema, root)
    return _describe_type(schema, root)


def _describe_type(schema: dict[str, Any], root: dict[str, Any]) -> str:
    """A schema said by its types and bounds, null said last: 'a number above 0, or null'."""
    kinds = _types(schema)
    nullable = "null" in kinds and len(kinds) > 1
    if nullable:
        kinds.remove("null")
    text = _describe_kinds(kinds, schema, root) + _describe_bounds(schema)
    return f"{text}, or null" if nullable else text


def _describe_kinds(kinds: list[str], schema: dict[str, Any], root: dict[str, Any]) -> str:
    """The types by name; a list said with its items, as a reader would: 'a list of text'."""
    if kinds == ["array"] and isinstance(schema.get("items"), dict):
        non_empty = "non-empty " if schema.get("minItems") else ""
        return f"a {non_empty}list of {describe(schema['items'], root)}"
    return " or ".join(_KIND[kind] for kind in kinds) or "anything"


def _describe_bounds(schema: dict[str, Any]) -> str:
    """A number's bounds, led by a space to follow its type (' above 0'); '' if it has none."""
    bounds = " and ".join(
        f"{word} {schema[key]:g}" for key, word in _BOUND_WORDS.items() if key in schema
    )
    return f" {bounds}" if bounds else ""


def _literal(value: Any) -> str:
    """A value as a reader writes it: text quoted ('ack'), the rest as JSON."""
    return repr(value) if isinstance(value, str) else json.dumps(value)


def validate(
    document: Any, schema: dict[str, Any], what: str, error: type[UserError] = UserError
) -> None:
    """Raise a one-line `error` at the first problem: '{what}: {where} {how}', an
    unknown key named with the keys there, a missing one by name."""
    found = first_problem(document, schema)
    if found is None:
        return
    if found.keyword == "additionalProperties":
        known = ", ".join(found.schema.get("properties", {}))
        raise error(f"{what}: {found.message} in {found.where}", hint=f"the keys there are {known}")
    if found.keyword == "required":
        place = f"{found.where}: " if found.path else ""
        raise error(f"{what}: {place}{found.message}")
    raise error(f"{what}: {found.where} {found.message}")


def first_problem(document: Any, schema: dict[str, Any]) -> Problem | None:
    """The first place (document order) where `document` breaks `schema`; None if none."""
    return _check(document, schema, schema, ())


@dataclass(frozen=True)
class _Spot:
    """A value at its place and the schema it must meet there: what a keyword's checker needs."""

    value: Any
    schema: dict[str, Any]
    root: dict[str, Any]
    path: Where

    def mismatch(self, keyword: str) -> Problem:
        """The value is not one the schema accepts, said with what it accepts."""
        message = f"must be {describe(self.schema, self.root)}, not {_shown(self.value)}"
        return Problem(self.path, keyword, message, self.value, self.schema)


def _check(value: Any, schema: dict[str, Any], root: dict[str, Any], path: Where) -> Problem | None:
    """The first problem with `value` at `path`: first the keywords any value meets (what
    it is), then those of its own kind (what it holds)."""
    if "$ref" in schema:
        return _check(value, _resolve(root, schema["$ref"]), root, path)
    spot = _Spot(value, schema, root, path)
    for keyword, check in _CHECKS.items():
        found = check(spot) if keyword in schema else None
        if found is not None:
            return found
    return _check_content(value, schema, root, path)


def _check_any_of(spot: _Spot) -> Problem | None:
    """No alternative accepts the value: when one alternative is of the value's own type,
    its problem says the most; otherwise the alternatives are named together."""
    options = spot.schema["anyOf"]
    found = [_check(spot.value, option, spot.root, spot.path) for option in options]
    if not all(found):
        return None
    pairs = zip(found, options, strict=True)
    typed = [f for f, option in pairs if _of_type(spot.value, option, spot.root)]
    return typed[0] if len(typed) == 1 else spot.mismatch("anyOf")


def _check_type(spot: _Spot) -> Problem | None:
    if any(is_type(spot.value, kind) for kind in _types(spot.schema)):
        return None
    return spot.mismatch("type")


def _check_enum(spot: _Spot) -> Problem | None:
    if any(_equal(spot.value, option) for option in spot.schema["enum"]):
        return None
    return spot.mismatch("enum")


def _check_const(spot: _Spot) -> Problem | None:
    return None if _equal(spot.value, spot.schema["const"]) else spot.mismatch("const")


#: The checkers of the keywords any value meets, tried in this order (the first problem is
#: the one reported): a value no alternative accepts, or of the wrong type, is said to be
#: so before anything inside it is looked at.
_CHECKS: dict[str, Callable[[_Spot], Problem | None]] = {
    "anyOf": _check_any_of,
    "type": _check_type,
    "enum": _check_enum,
    "const": _check_const,
}


def _check_content(
    value: Any, schema: dict[str, Any], root: dict[str, Any], path: Where
) -> Problem | None:
    """The keywords of the value's own kind: an object's keys, a list's items, text's
    length and pattern, a number's bounds (true, false and null have none)."""
    if isinstance(value, dict):
        return _check_object(value, schema, root, path)
    if isinstance(value, list):
        return _check_array(value, schema, root, path)
    if isinstance(value, str):
        return _check_text(value, schema, path)
    if is_type(value, "number"):
        return _check_number(value, schema, root, path)
    return None


def _of_type(value: Any, schema: dict[str, Any], root: dict[str, Any]) -> bool:
    if "$ref" in schema:
        schema = _resolve(root, schema["$ref"])
    return any(is_type(value, kind) for kind in _types(schema, TYPES))


def _check_object(
    value: dict[Any, Any], schema: dict[str, Any], root: dict[str, Any], path: Where
) -> Problem | None:
    keys = _keys_problem(value, schema)
    if keys is not None:
        keyword, message = keys
        return Problem(path, keyword, message, value, schema)
    properties = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        child = properties.get(key, extra if isinstance(extra, dict) else None)
        if child is not None:
            found = _check(item, child, root, (*path, key))
            if found is not None:
                return found
    return None


def _keys_problem(value: dict[Any, Any], schema: dict[str, Any]) -> tuple[str, str] | None:
    """The first wrong key of an object (not text, unknown or missing): (keyword, message)."""
    strange = [key for key in value if not isinstance(key, str)]
    if strange:
        return "type", f"has a key that is not text: {_shown(strange[0])}"
    unknown = _unknown_keys(value, schema)
    if unknown:
        keys = ", ".join(repr(key) for key in unknown)
        return "additionalProperties", f"unknown key{'s'[: len(unknown) - 1]} {keys}"
    missing = [key for key in schema.get("required", []) if key not in value]
    if missing:
        return "required", f"{missing[0]!r} is missing"
    return None


def _unknown_keys(value: dict[Any, Any], schema: dict[str, Any]) -> list[str]:
    """The keys a closed object (additionalProperties false) does not name."""
    if schema.get("additionalProperties", True) is not False:
        return []
    properties = schema.get("properties", {})
    return [key for key in value if key not in properties]


def _check_array(
    value: list[Any], schema: dict[str, Any], root: dict[str, Any], path: Where
) -> Problem | None:
    if len(value) < schema.get("minItems", 0):
        least = schema["minItems"]
        message = f"must hold at least {least} items"
        if least == 1:
            message = f"must be {describe(schema, root)}, not []"
        return Problem(path, "minItems", message, value, schema)
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        message = f"must hold at most {schema['maxItems']} items, not {len(value)}"
        return Problem(path, "maxItems", message, value, schema)
    if isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            found = _check(item, schema["items"], root, (*path, index))
            if found is not None:
                return found
    return None


def _check_text(value: str, schema: dict[str, Any], path: Where) -> Problem | None:
    if len(value) < schema.get("minLength", 0):
        return Problem(path, "minLength", "must not be empty", value, schema)
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        message = f"must be at most {schema['maxLength']} characters"
        return Problem(path, "maxLength", message, value, schema)
    if "pattern" in schema and not re.search(schema["pattern"], value):
        what = schema.get("title", f"text matching {schema['pattern']}")
        return Problem(path, "pattern", f"must be {what}, not {_shown(value)}", value, schema)
    return None


def _check_number(
    value: float, schema: dict[str, Any], root: dict[str, Any], path: Where
) -> Problem | None:
    for keyword in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        if keyword not in schema:
            continue
        limit = schema[keyword]
        fails = {
            "minimum": value < limit,
            "exclusiveMinimum": value <= limit,
            "maximum": value > limit,
            "exclusiveMaximum": value >= limit,
        }[keyword]
        if fails:
            message = f"must be {describe(schema, root)}, not {_shown(value)}"
            return Problem(path, keyword, message, value, schema)
    return None


def _equal(value: Any, option: Any) -> bool:
    """JSON equality: 1 == 1.0, but true is not 1."""
    if isinstance(value, bool) or isinstance(option, bool):
        return type(value) is type(option) and bool(value == option)
    return bool(value == option)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
