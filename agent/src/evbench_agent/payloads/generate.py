"""Payloads generated from a message's descriptor, deterministic per seed and index.

A generator file (JSON, or YAML on the host) tunes fields by dotted path from
the measured message, e.g. `cells.voltage_v` or `tags.value` (a map's values):

    {"fields": {
        "cell_voltages_v": {"count": 96, "range": [3.60, 3.95], "step": 0.001},
        "state":           {"choices": ["BMS_STATE_DRIVE", "BMS_STATE_CHARGE"]},
        "vin":             {"length": 17},
        "fault":           {"presence": 0.1},
        "reading":         {"choices": ["voltage", "current"]}}}   # a oneof: its members

Options: `range` [lo, hi] (numbers), `step` (numbers are rounded to a multiple),
`choices` (values; enum names or numbers), `length` n or [lo, hi] (strings,
bytes), `count` n or [lo, hi] (repeated fields, maps), `presence` 0..1 (fields
with presence, oneofs). An unknown path or option, a range outside the field's
type or with lo > hi is an error before anything runs.

Defaults (see docs/own-messages.md): signed 32-bit [-1000, 1000], unsigned
32-bit [0, 100000], signed 64-bit [-10^12, 10^12], unsigned 64-bit [0, 10^15],
float and double [-1000, 1000] in steps of 0.001, strings of 4 to 16 letters
and digits, bytes 4 to 16, enums uniform over their values, repeated fields
and maps 0 to 4 elements, sub-messages always set (none below depth 4),
optional scalars present with probability 0.8, one oneof member always set,
Timestamp 20 Hz from 2025-11-24T16:00:00Z, Duration 0 to 60 s; Any and
FieldMask stay unset (they need type URLs and paths: use samples).
"""

from __future__ import annotations

import random
import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor, OneofDescriptor
from google.protobuf.message import Message

from evbench_agent.errors import UserError
from evbench_agent.payloads.convert import is_map, is_repeated

F = FieldDescriptor
_SIGNED32 = (F.TYPE_INT32, F.TYPE_SINT32, F.TYPE_SFIXED32)
_UNSIGNED32 = (F.TYPE_UINT32, F.TYPE_FIXED32)
_SIGNED64 = (F.TYPE_INT64, F.TYPE_SINT64, F.TYPE_SFIXED64)
_UNSIGNED64 = (F.TYPE_UINT64, F.TYPE_FIXED64)
_FLOATS = (F.TYPE_FLOAT, F.TYPE_DOUBLE)
#: Type -> (the type's own bounds, the default range).
_INT_BOUNDS = {
    **{t: ((-(2**31), 2**31 - 1), (-1000, 1000)) for t in _SIGNED32},
    **{t: ((0, 2**32 - 1), (0, 100_000)) for t in _UNSIGNED32},
    **{t: ((-(2**63), 2**63 - 1), (-(10**12), 10**12)) for t in _SIGNED64},
    **{t: ((0, 2**64 - 1), (0, 10**15)) for t in _UNSIGNED64},
}
_FLOAT_LIMIT = {F.TYPE_FLOAT: 3.4028234663852886e38, F.TYPE_DOUBLE: 1.7976931348623157e308}
DEFAULT_FLOAT_RANGE = (-1000.0, 1000.0)
DEFAULT_STEP = 0.001
DEFAULT_LENGTH = (4, 16)
DEFAULT_COUNT = (0, 4)
DEFAULT_PRESENCE = 0.8
MAX_DEPTH = 4
MAX_COUNT = 100_000
_LETTERS = string.ascii_letters + string.digits
OPTIONS = ("range", "step", "choices", "length", "count", "presence")
#: 2025-11-24T16:00:00Z, and a frame every 50 ms (20 Hz).
EPOCH_S = 1_764_000_000
PERIOD_NS = 50_000_000
_UNSET_BY_DEFAULT = ("google.protobuf.Any", "google.protobuf.FieldMask")


@dataclass(frozen=True)
class Rule:
    range: tuple[float, float] | None = None
    step: float | None = None
    choices: tuple[Any, ...] | None = None
    length: tuple[int, int] | None = None
    count: tuple[int, int] | None = None
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


def _fail(where: str, path: str, problem: str, hint: str | None = None) -> None:
    raise _RuleError(f"{where}: field {path!r}: {problem}", hint=hint)


def _pair(value: Any, where: str, path: str, option: str) -> tuple[int, int]:
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value, value]
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        _fail(where, path, f"{option} must be a count or [lo, hi] of whole numbers")
    low, high = value
    if low < 0 or low > high or high > MAX_COUNT:
        _fail(where, path, f"impossible {option} [{low}, {high}] (0 <= lo <= hi <= {MAX_COUNT})")
    return low, high


def _resolve(root: Descriptor, path: str, where: str) -> FieldDescriptor | OneofDescriptor:
    current: Descriptor | None = root
    target: FieldDescriptor | OneofDescriptor | None = None
    for part in path.split("."):
        if current is None:
            _fail(where, path, f"{target.name} is not a message, so it has no {part!r}")
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
    return target


def _check_number_range(
    field: FieldDescriptor, value: Any, where: str, path: str
) -> tuple[float, float]:
    if not isinstance(value, list) or len(value) != 2:
        _fail(where, path, "range must be [lo, hi]")
    low, high = value
    integer = field.type in _INT_BOUNDS
    kinds = (int,) if integer else (int, float)
    if any(isinstance(v, bool) or not isinstance(v, kinds) for v in value):
        kind = "whole numbers" if integer else "numbers"
        _fail(where, path, f"range must be two {kind}, not {value!r}")
    if integer:
        bounds = _INT_BOUNDS[field.type][0]
    else:
        bounds = (-_FLOAT_LIMIT[field.type], _FLOAT_LIMIT[field.type])
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
    if field.type in _INT_BOUNDS:
        low, high = _INT_BOUNDS[field.type][0]
        if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high:
            return value
    elif field.type in _FLOATS:
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
    is_number = field.type in _INT_BOUNDS or field.type in _FLOATS
    scalar = field.message_type is None
    values: dict[str, Any] = {}
    if "range" in options:
        if not is_number or field.enum_type is not None:
            _fail(where, path, f"range applies to numbers, not a {_type_name(field)} field")
        values["range"] = _check_number_range(field, options["range"], where, path)
    if "step" in options:
        step = options["step"]
        if not is_number or isinstance(step, bool) or not isinstance(step, (int, float)):
            _fail(where, path, "step applies to numbers and must be a number")
        if step <= 0:
            _fail(where, path, f"impossible step {step} (must be > 0)")
        values["step"] = step
    if "choices" in options:
        choices = options["choices"]
        if not scalar:
            _fail(where, path, "choices apply to scalar and enum fields")
        if not isinstance(choices, list) or not choices:
            _fail(where, path, "choices must be a non-empty list")
        values["choices"] = tuple(_check_choice(field, c, where, path) for c in choices)
    if "length" in options:
        if field.type not in (F.TYPE_STRING, F.TYPE_BYTES):
            _fail(where, path, "length applies to strings and bytes")
        values["length"] = _pair(options["length"], where, path, "length")
    if "count" in options:
        if not is_repeated(field):
            _fail(where, path, "count applies to repeated fields and maps")
        values["count"] = _pair(options["count"], where, path, "count")
    if "presence" in options:
        if is_repeated(field) or not field.has_presence:
            _fail(
                where,
                path,
                "presence applies to fields with presence (optional, messages, oneof members)",
            )
        values["presence"] = _probability(options["presence"], where, path)
    return Rule(**values)


def _probability(value: Any, where: str, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        _fail(where, path, f"impossible presence {value!r} (a probability, 0 to 1)")
    return float(value)


def _oneof_rule(oneof: OneofDescriptor, options: dict[str, Any], where: str, path: str) -> Rule:
    values: dict[str, Any] = {}
    extra = sorted(set(options) - {"choices", "presence"})
    if extra:
        _fail(where, path, f"a oneof takes choices and presence, not {', '.join(extra)}")
    if "choices" in options:
        members = [f.name for f in oneof.fields]
        choices = options["choices"]
        if not isinstance(choices, list) or not choices or not set(choices) <= set(members):
            _fail(
                where,
                path,
                f"choices of a oneof are its members, not {choices!r}",
                hint=f"members: {', '.join(members)}",
            )
        values["choices"] = tuple(choices)
    if "presence" in options:
        values["presence"] = _probability(options["presence"], where, path)
    return Rule(**values)


def load_rules(document: Any, root: Descriptor, where: str) -> dict[str, Rule]:
    """Check a generator document against the message; path -> Rule."""
    if document is None:
        return {}
    if not isinstance(document, dict) or set(document) - {"fields"}:
        raise UserError(
            f"{where}: a generator file is an object with one key, 'fields'",
            hint='e.g. {"fields": {"soc": {"range": [0, 100]}}}',
        )
    fields = document.get("fields") or {}
    if not isinstance(fields, dict):
        raise UserError(f"{where}: 'fields' maps field paths to options")
    rules = {}
    for path, options in fields.items():
        if not isinstance(options, dict):
            _fail(where, path, "options must be an object")
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            _fail(where, path, f"unknown option {', '.join(unknown)}", hint=f"known: {OPTIONS}")
        target = _resolve(root, path, where)
        if isinstance(target, OneofDescriptor):
            rules[path] = _oneof_rule(target, options, where, path)
        else:
            rules[path] = _field_rule(target, options, where, path)
    return rules


class Generator:
    """Makes message number i of a profile from (seed, profile name, i), like every profile."""

    def __init__(
        self,
        message_type: type[Message],
        document: Any,
        profile_name: str,
        source_name: str | None = None,
    ) -> None:
        self.message_type = message_type
        self.profile_name = profile_name
        where = source_name or "generator file"
        self.rules = load_rules(document, message_type.DESCRIPTOR, where)

    def messages(self, count: int, seed: int) -> list[Message]:
        made = []
        for index in range(count):
            rng = random.Random(f"{seed}:{self.profile_name}:{index}")
            message = self.message_type()
            self._fill(message, "", rng, index, 0)
            made.append(message)
        return made

    def _fill(
        self, message: Message, prefix: str, rng: random.Random, index: int, depth: int
    ) -> None:
        descriptor = message.DESCRIPTOR
        if descriptor.full_name == "google.protobuf.Timestamp" and not self._tuned(prefix):
            message.seconds = EPOCH_S + index * PERIOD_NS // 1_000_000_000
            message.nanos = index * PERIOD_NS % 1_000_000_000 + rng.randrange(100_000)
            return
        if descriptor.full_name == "google.protobuf.Duration" and not self._tuned(prefix):
            message.seconds = rng.randrange(0, 60)
            message.nanos = rng.randrange(0, 1_000_000_000)
            return
        in_oneof = set()
        for oneof in real_oneofs(descriptor):
            in_oneof.update(f.name for f in oneof.fields)
            rule = self.rules.get(prefix + oneof.name, Rule())
            presence = 1.0 if rule.presence is None else rule.presence
            if rng.random() < presence:
                names = rule.choices or tuple(f.name for f in oneof.fields)
                chosen = descriptor.fields_by_name[rng.choice(names)]
                self._set(message, chosen, prefix, rng, index, depth, forced=True)
        for field in descriptor.fields:
            if field.name not in in_oneof:
                self._set(message, field, prefix, rng, index, depth, forced=False)

    def _tuned(self, prefix: str) -> bool:
        return any(path.startswith(prefix) for path in self.rules) if prefix else bool(self.rules)

    def _set(
        self,
        message: Message,
        field: FieldDescriptor,
        prefix: str,
        rng: random.Random,
        index: int,
        depth: int,
        forced: bool,
    ) -> None:
        path = prefix + field.name
        rule = self.rules.get(path, Rule())
        target = getattr(message, field.name)
        if is_map(field) or is_repeated(field):
            low, high = rule.count or (DEFAULT_COUNT if depth < MAX_DEPTH else (0, 0))
            count = rng.randint(low, high)
            if is_map(field):
                self._fill_map(target, field, path + ".", rng, index, depth, count)
            elif field.message_type is not None:
                for _ in range(count):
                    self._fill(target.add(), path + ".", rng, index, depth + 1)
            else:
                target.extend(self._scalar(field, rule, rng) for _ in range(count))
            return
        if field.message_type is not None:
            if field.message_type.full_name in _UNSET_BY_DEFAULT and path not in self.rules:
                return
            presence = rule.presence
            if presence is None:
                presence = 1.0 if depth < MAX_DEPTH or forced else 0.0
            if rng.random() < presence:
                target.SetInParent()
                self._fill(target, path + ".", rng, index, depth + 1)
            return
        if not forced and field.has_presence:
            presence = DEFAULT_PRESENCE if rule.presence is None else rule.presence
            if rng.random() >= presence:
                return
        setattr(message, field.name, self._scalar(field, rule, rng))

    def _fill_map(
        self,
        target: Any,
        field: FieldDescriptor,
        prefix: str,
        rng: random.Random,
        index: int,
        depth: int,
        count: int,
    ) -> None:
        key_field = field.message_type.fields_by_name["key"]
        value_field = field.message_type.fields_by_name["value"]
        key_rule = self.rules.get(prefix + "key", Rule())
        value_rule = self.rules.get(prefix + "value", Rule())
        for _ in range(count * 4):  # keys may repeat; a few more tries, then fewer entries
            if len(target) >= count:
                break
            key = self._scalar(key_field, key_rule, rng)
            if key in target:
                continue
            if value_field.message_type is not None:
                entry = target[key]
                self._fill(entry, prefix + "value.", rng, index, depth + 1)
            else:
                target[key] = self._scalar(value_field, value_rule, rng)

    @staticmethod
    def _scalar(field: FieldDescriptor, rule: Rule, rng: random.Random) -> Any:
        if rule.choices:
            return rng.choice(rule.choices)
        kind = field.type
        if field.enum_type is not None:
            return rng.choice([v.number for v in field.enum_type.values])
        if kind in _INT_BOUNDS:
            low, high = rule.range or _INT_BOUNDS[kind][1]
            step = int(rule.step) if rule.step and rule.step >= 1 else 1
            return low + rng.randrange(0, (high - low) // step + 1) * step
        if kind in _FLOATS:
            low, high = rule.range or DEFAULT_FLOAT_RANGE
            step = rule.step or DEFAULT_STEP
            value = rng.uniform(low, high)
            digits = max(0, -int(f"{step:e}".split("e")[1]))
            stepped = round(round(value / step) * step, digits)
            return min(max(stepped, low), high)
        if kind == F.TYPE_BOOL:
            return rng.random() < 0.5
        low, high = rule.length or DEFAULT_LENGTH
        length = rng.randint(low, high)
        if kind == F.TYPE_STRING:
            return "".join(rng.choices(_LETTERS, k=length))
        return bytes(rng.getrandbits(8) for _ in range(length))


def rules_are_valid(document: Mapping[str, Any] | None, message_type: type[Message]) -> None:
    """Raise the UserError a bad generator document deserves (host-side check)."""
    load_rules(document, message_type.DESCRIPTOR, "generator file")
