"""The generator file's rules: checked against the message before anything runs.

A generator file tunes fields by dotted path from the measured message (see
generate.py and docs/own-messages.md). Every rule is checked here: first the
file's shape against its schema (schemas/generator.schema.json: an unknown option,
a value of the wrong type, a probability outside [0, 1]), then against the message:
an unknown path, a range outside the field's type (or outside what a
Timestamp's or Duration's field may hold), lo > hi, a probability outside
[0, 1], a rule that cannot apply to the field, each is a UserError naming the
file and the field path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from google.protobuf.descriptor import FieldDescriptor as F
from google.protobuf.descriptor import OneofDescriptor as PyOneofDescriptor

from evbench_agent.payloads.convert import is_repeated, is_required, message_type
from evbench_core import json_schema
from evbench_core.errors import UserError

if TYPE_CHECKING:
    from typing_extensions import TypeIs

    from evbench_agent.payloads.protobuf_types import Descriptor, FieldDescriptor, OneofDescriptor

#: The generator file's keys and types; docs/own-messages.md's table is made from it.
SCHEMA = json_schema.load("evbench_agent.payloads", "generator.schema.json")

_SIGNED32 = (F.TYPE_INT32, F.TYPE_SINT32, F.TYPE_SFIXED32)
_UNSIGNED32 = (F.TYPE_UINT32, F.TYPE_FIXED32)
_SIGNED64 = (F.TYPE_INT64, F.TYPE_SINT64, F.TYPE_SFIXED64)
_UNSIGNED64 = (F.TYPE_UINT64, F.TYPE_FIXED64)
FLOATS = (F.TYPE_FLOAT, F.TYPE_DOUBLE)
#: Type -> (the type's own bounds, the default range).
INT_BOUNDS = {
    **{t: ((-(2**31), 2**31 - 1), (-1000, 1000)) for t in _SIGNED32},
    **{t: ((0, 2**32 - 1), (0, 100_000)) for t in _UNSIGNED32},
    **{t: ((-(2**63), 2**63 - 1), (-(10**12), 10**12)) for t in _SIGNED64},
    **{t: ((0, 2**64 - 1), (0, 10**15)) for t in _UNSIGNED64},
}
FLOAT_LIMIT = {F.TYPE_FLOAT: 3.4028234663852886e38, F.TYPE_DOUBLE: 1.7976931348623157e308}
#: What the JSON mapping accepts in a Timestamp's and a Duration's fields (0001 to 9999,
#: +-10,000 years), so that a rule cannot make a value json_format refuses to print.
WELL_KNOWN_BOUNDS = {
    "google.protobuf.Timestamp.seconds": (-62_135_596_800, 253_402_300_799),
    "google.protobuf.Timestamp.nanos": (0, 999_999_999),
    "google.protobuf.Duration.seconds": (-315_576_000_000, 315_576_000_000),
    "google.protobuf.Duration.nanos": (-999_999_999, 999_999_999),
}
MAX_COUNT: int = SCHEMA["$defs"]["count"]["anyOf"][0]["maximum"]
ANY = "google.protobuf.Any"
OPTIONS = tuple(SCHEMA["$defs"]["options"]["properties"])


@dataclass(frozen=True)
class Rule:
    range: tuple[float, float] | None = None
    step: float | None = None
    choices: tuple[Any, ...] | None = None
    length: tuple[int, int] | None = None
    count: tuple[int, int] | None = None
    #: Probability that a repeated field or map has no element at all.
    empty: float | None = None
    presence: float | None = None


def _synthetic(oneof: OneofDescriptor) -> bool:
    """A proto3 `optional` field's hidden oneof, not a real one."""
    flag = getattr(oneof, "is_synthetic", None)
    if flag is not None:
        return bool(flag)
    return len(oneof.fields) == 1 and oneof.name == f"_{oneof.fields[0].name}"


def real_oneofs(descriptor: Descriptor) -> list[OneofDescriptor]:
    return [o for o in descriptor.oneofs if not _synthetic(o)]


class _RuleError(UserError):
    pass


def _fail(where: str, path: str, problem: str, hint: str | None = None) -> NoReturn:
    raise _RuleError(f"{where}: field {path!r}: {problem}", hint=hint)


def _pair(value: Any, where: str, path: str, option: str) -> tuple[int, int]:
    """A count or [lo, hi] (of whole numbers within MAX_COUNT: the schema) as (lo, hi)."""
    if isinstance(value, int):
        value = [value, value]
    low, high = value
    if low > high:
        _fail(where, path, f"impossible {option} [{low}, {high}] (0 <= lo <= hi <= {MAX_COUNT})")
    return low, high


def _resolve(root: Descriptor, path: str, where: str) -> FieldDescriptor | OneofDescriptor:
    current: Descriptor | None = root
    target: FieldDescriptor | OneofDescriptor | None = None
    for part in path.split("."):
        if current is None:
            name = target.name if target is not None else ""
            _fail(where, path, f"{name} is not a message, so it has no {part!r}")
        field = current.fields_by_name.get(part)
        oneof = next((o for o in real_oneofs(current) if o.name == part), None)
        if field is None and oneof is None:
            names = [f.name for f in current.fields] + [o.name for o in real_oneofs(current)]
            _fail(
                where,
                path,
                f"no field {part!r} in {current.full_name}",
                hint=f"fields there: {', '.join(names)}",
            )
        target = field or oneof
        current = field.message_type if field is not None else None
    if target is None:  # an empty path has no part
        _fail(where, path, "the path names no field")
    return target


def _is_oneof(target: FieldDescriptor | OneofDescriptor) -> TypeIs[OneofDescriptor]:
    # protobuf's class also matches upb's descriptors: its metaclass says so.
    return isinstance(target, PyOneofDescriptor)


def _check_number_range(
    field: FieldDescriptor, value: Any, where: str, path: str
) -> tuple[float, float]:
    low, high = value  # two numbers (the schema)
    integer = field.type in INT_BOUNDS
    kinds = (int,) if integer else (int, float)
    if any(isinstance(v, bool) or not isinstance(v, kinds) for v in value):
        kind = "whole numbers" if integer else "numbers"
        _fail(where, path, f"range must be two {kind}, not {value!r}")
    bounds: tuple[float, float]
    if field.full_name in WELL_KNOWN_BOUNDS:
        bounds = WELL_KNOWN_BOUNDS[field.full_name]
    elif integer:
        bounds = INT_BOUNDS[field.type][0]
    else:
        bounds = (-FLOAT_LIMIT[field.type], FLOAT_LIMIT[field.type])
    if low > high or low < bounds[0] or high > bounds[1]:
        _fail(
            where,
            path,
            f"impossible range [{low}, {high}] for a {_type_name(field)} field",
            hint=f"lo <= hi, within [{bounds[0]}, {bounds[1]}]",
        )
    return low, high


def _type_name(field: FieldDescriptor) -> str:
    names = {v: k[5:].lower() for k, v in vars(F).items() if k.startswith("TYPE_")}
    return names.get(field.type, str(field.type))


def _check_choice(field: FieldDescriptor, value: Any, where: str, path: str) -> Any:
    if field.enum_type is not None:
        by_name = field.enum_type.values_by_name
        if isinstance(value, str) and value in by_name:
            return by_name[value].number
        if isinstance(value, int) and value in field.enum_type.values_by_number:
            return value
        _fail(
            where,
            path,
            f"{value!r} is not a value of {field.enum_type.full_name}",
            hint=f"values: {', '.join(by_name)}",
        )
    if field.type in INT_BOUNDS:
        low, high = WELL_KNOWN_BOUNDS.get(field.full_name, INT_BOUNDS[field.type][0])
        if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high:
            return value
    elif field.type in FLOATS:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif field.type == F.TYPE_BOOL:
        if isinstance(value, bool):
            return value
    elif field.type == F.TYPE_STRING:
        if isinstance(value, str):
            return value
    elif field.type == F.TYPE_BYTES and isinstance(value, str):
        return value.encode("utf-8")
    _fail(where, path, f"choice {value!r} does not fit a {_type_name(field)} field")
    return None


def _field_rule(field: FieldDescriptor, options: dict[str, Any], where: str, path: str) -> Rule:
    """The field's rule: each option it gives, checked against the field's type (in the
    order of _FIELD_OPTIONS: the first that does not apply is the one named)."""
    return Rule(
        **{
            name: check(field, options[name], where, path)
            for name, check in _FIELD_OPTIONS.items()
            if name in options
        }
    )


def _is_number(field: FieldDescriptor) -> bool:
    return field.type in INT_BOUNDS or field.type in FLOATS


def _range_option(field: FieldDescriptor, value: Any, where: str, path: str) -> Any:
    if not _is_number(field) or field.enum_type is not None:
        _fail(where, path, f"range applies to numbers, not a {_type_name(field)} field")
    return _check_number_range(field, value, where, path)


def _step_option(field: FieldDescriptor, value: Any, where: str, path: str) -> Any:
    if not _is_number(field):
        _fail(where, path, f"step applies to numbers, not a {_type_name(field)} field")
    return value  # a number above 0 (the schema)


def _choices_option(field: FieldDescriptor, choices: Any, where: str, path: str) -> Any:
    # a non-empty list (the schema)
    if field.message_type is None:
        return tuple(_check_choice(field, c, where, path) for c in choices)
    if message_type(field).full_name == ANY:
        return tuple(_check_any_type(field, c, where, path) for c in choices)
    _fail(where, path, "choices apply to scalar and enum fields, oneofs and Any (message types)")


def _length_option(field: FieldDescriptor, value: Any, where: str, path: str) -> Any:
    if field.type not in (F.TYPE_STRING, F.TYPE_BYTES):
        _fail(where, path, "length applies to strings and bytes")
    return _pair(value, where, path, "length")


def _count_option(field: FieldDescriptor, value: Any, where: str, path: str) -> Any:
    if not is_repeated(field):
        _fail(where, path, "count applies to repeated fields and maps")
    return _pair(value, where, path, "count")


def _empty_option(field: FieldDescriptor, value: Any, where: str, path: str) -> Any:
    if not is_repeated(field):
        _fail(where, path, "empty applies to repeated fields and maps")
    return float(value)  # 0 to 1 (the schema)


def _presence_option(field: FieldDescriptor, value: Any, where: str, path: str) -> Any:
    if is_required(field):
        _fail(where, path, "a required field is always set: presence does not apply")
    if is_repeated(field) or not field.has_presence:
        _fail(
            where,
            path,
            "presence applies to fields with presence (optional, messages, oneof members)",
        )
    return float(value)


#: A field's options, each with its check against the field (which returns the rule's
#: value), in the order they are checked.
_FIELD_OPTIONS: dict[str, Callable[[FieldDescriptor, Any, str, str], Any]] = {
    "range": _range_option,
    "step": _step_option,
    "choices": _choices_option,
    "length": _length_option,
    "count": _count_option,
    "empty": _empty_option,
    "presence": _presence_option,
}


def _check_any_type(field: FieldDescriptor, name: Any, where: str, path: str) -> str:
    """A choice of an Any field is a message type of the schema, by full name."""
    pool = message_type(field).file.pool
    try:
        found = pool.FindMessageTypeByName(name) if isinstance(name, str) else None
    except KeyError:
        found = None
    if found is None:
        _fail(
            where,
            path,
            f"{name!r} is not a message type of the schema (an Any packs one by full name)",
        )
    return str(name)  # found by it: a str


def _oneof_rule(oneof: OneofDescriptor, options: dict[str, Any], where: str, path: str) -> Rule:
    values: dict[str, Any] = {}
    extra = sorted(set(options) - {"choices", "presence"})
    if extra:
        _fail(where, path, f"a oneof takes choices and presence, not {', '.join(extra)}")
    if "choices" in options:
        members = [f.name for f in oneof.fields]
        choices = options["choices"]
        if not all(isinstance(c, str) for c in choices) or not set(choices) <= set(members):
            _fail(
                where,
                path,
                f"choices of a oneof are its members, not {choices!r}",
                hint=f"members: {', '.join(members)}",
            )
        values["choices"] = tuple(choices)
    if "presence" in options:
        values["presence"] = float(options["presence"])
    return Rule(**values)


def _check_shape(document: Any, where: str) -> None:
    """The file against its schema; a UserError naming the field path and the option."""
    found = json_schema.first_problem(document, SCHEMA)
    if found is None:
        return
    if not found.path:
        raise UserError(
            f"{where}: a generator file is an object with one key, 'fields'",
            hint='e.g. {"fields": {"soc": {"range": [0, 100]}}}',
        )
    if len(found.path) == 1:
        raise UserError(f"{where}: 'fields' maps field paths to options: it {found.message}")
    path = str(found.path[1])
    if found.keyword == "additionalProperties" and len(found.path) == 2:
        unknown = [key for key in found.value if key not in OPTIONS]
        _fail(
            where, path, f"unknown option {', '.join(unknown)}", hint=f"known: {', '.join(OPTIONS)}"
        )
    option = json_schema.where(found.path[2:]) if len(found.path) > 2 else "its options"
    _fail(where, path, f"{option} {found.message}")


def load_rules(document: Any, root: Descriptor, where: str) -> dict[str, Rule]:
    """Check a generator document against the message; path -> Rule."""
    if document is None:
        return {}
    _check_shape(document, where)
    fields = document.get("fields") or {}
    rules = {}
    members: dict[tuple[str, str], float] = {}
    for path, options in fields.items():
        if not path:
            raise UserError(f"{where}: a field path is a dotted string, not {path!r}")
        target = _resolve(root, path, where)
        if _is_oneof(target):
            rules[path] = _oneof_rule(target, options, where, path)
        else:
            rules[path] = _field_rule(target, options, where, path)
            oneof = target.containing_oneof
            presence = rules[path].presence
            if oneof is not None and not _synthetic(oneof) and presence is not None:
                key = (path.rpartition(".")[0], oneof.name)
                members[key] = members.get(key, 0.0) + presence
                if members[key] > 1 + 1e-9:
                    _fail(
                        where,
                        path,
                        f"the presences of oneof {oneof.name!r}'s members add up to over 1",
                        hint="a member's presence is the probability that it is the one set",
                    )
    return rules
