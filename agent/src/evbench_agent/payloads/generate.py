"""Payloads generated from a message's descriptor, deterministic per seed and index.

A generator file (JSON, or YAML on the host) tunes fields by dotted path from
the measured message, e.g. `cells.voltage_v` or `tags.value` (a map's values):

    {"fields": {
        "cell_voltages_v": {"count": 96, "range": [3.60, 3.95], "step": 0.001},
        "faults":          {"empty": 0.9},
        "state":           {"choices": ["BMS_STATE_DRIVE", "BMS_STATE_CHARGE"]},
        "vin":             {"length": 17},
        "fault":           {"presence": 0.1},
        "details":         {"choices": ["pkg.ErrorInfo"]},    # an Any: the types it packs
        "reading":         {"choices": ["voltage", "current"]}}}   # a oneof: its members

The rules are checked in rules.py. The defaults (docs/own-messages.md) are in
the constants below. Two bounds keep generation finite and small whatever the
schema: sub-messages stop at MAX_DEPTH (only required ones go deeper, up to
HARD_DEPTH, which a required field of a recursive type reaches), and work is
counted against a budget per payload and per run (every message made, field visited, element and
map entry counts one); going over either is a UserError naming the
payload and the field path where it happened.
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from google.protobuf.descriptor import FieldDescriptor as F
from google.protobuf.message import Message

from evbench_agent.payloads.convert import (
    all_extensions,
    extensions,
    is_map,
    is_repeated,
    is_required,
    map_entry,
)
from evbench_agent.payloads.rules import (
    FLOATS,
    INT_BOUNDS,
    MAX_COUNT,
    OPTIONS,
    Rule,
    load_rules,
    real_oneofs,
)
from evbench_core.errors import UserError

if TYPE_CHECKING:
    from google.protobuf import any_pb2, duration_pb2

    from evbench_agent.payloads.protobuf_types import Descriptor, FieldDescriptor

__all__ = ["MAX_COUNT", "OPTIONS", "Generator", "load_rules", "real_oneofs", "rules_are_valid"]

DEFAULT_FLOAT_RANGE = (-1000.0, 1000.0)
DEFAULT_STEP = 0.001
DEFAULT_LENGTH = (4, 16)
DEFAULT_COUNT = (0, 4)
#: Optional scalars (proto3 `optional`, proto2 `optional`) and oneofs: set half the time.
DEFAULT_PRESENCE = 0.5
#: A message field whose type is one of its ancestors' is set with this probability,
#: shared among the message's fields that recurse, so that a recursive type branches
#: about half a time per level whatever its fan-out.
RECURSIVE_PRESENCE = 0.5
MAX_DEPTH = 4
#: Required sub-messages go below MAX_DEPTH; never below this (protobuf parses 100).
HARD_DEPTH = 64
#: Work per payload and per run: every message made, field visited (set or not),
#: element and map entry counts one.
PAYLOAD_BUDGET = 100_000
RUN_BUDGET = 1_000_000
_LETTERS = string.ascii_letters + string.digits
#: 2025-11-24T16:00:00Z, and a frame every 50 ms (20 Hz).
EPOCH_S = 1_764_000_000
PERIOD_NS = 50_000_000
ANY = "google.protobuf.Any"
VALUE = "google.protobuf.Value"
TYPE_URL_PREFIX = "type.googleapis.com/"
MASK_PATHS = "google.protobuf.FieldMask.paths"
#: A FieldMask path survives protobuf's JSON mapping (lowerCamelCase) only in this form.
MASK_PATH = re.compile(r"[a-z][a-z0-9]*(_[a-z][a-z0-9]*)*")


_NO_RULE = Rule()


@dataclass(frozen=True)
class _Field:
    """What the generator asks of a field, worked out once."""

    field: FieldDescriptor
    name: str  # in a rule's path: the field's name, or [full.name] for an extension
    repeated: bool
    map: bool
    required: bool
    presence: bool
    message: str | None  # the message type's full name
    extension: bool


def _field(field: FieldDescriptor) -> _Field:
    extension = field.is_extension
    return _Field(
        field=field,
        name=f"[{field.full_name}]" if extension else field.name,
        repeated=is_repeated(field),
        map=is_map(field),
        required=is_required(field),
        presence=field.has_presence,
        message=field.message_type.full_name if field.message_type is not None else None,
        extension=extension,
    )


class _Budget:
    """The values a run has set, and the current payload's."""

    def __init__(self, where: str, payload: int, run: int) -> None:
        self.where = where
        self.payload_limit, self.run_limit = payload, run
        self.payload_used = self.run_used = 0
        self.index = 0

    def start(self, index: int) -> None:
        self.index, self.payload_used = index, 0

    def spend(self, count: int, path: str) -> None:
        self.payload_used += count
        self.run_used += count
        if self.payload_used > self.payload_limit:
            raise UserError(
                f"{self.where}: payload {self.index}: field {path or '(root)'!r} takes the "
                f"payload past {self.payload_limit} values and fields, the generator's budget "
                "per payload",
                hint="give that field (or the one that repeats or recurses above it) a smaller "
                "count or presence in a generator file",
            )
        if self.run_used > self.run_limit:
            raise UserError(
                f"{self.where}: payload {self.index}: field {path or '(root)'!r} takes the run "
                f"past {self.run_limit} values and fields, the generator's budget per run",
                hint="measure fewer --payloads, or give the large fields smaller counts",
            )


def _message_presence(
    info: _Field,
    rule: Rule,
    forced: bool,
    deep: bool,
    ancestors: tuple[str, ...],
    recursive: int,
) -> float:
    """How likely a singular message field is set: always when required or forced (a
    oneof's chosen member), else its rule's presence, never past the depth bound, the
    default for an extension, less and less down a recursive type, else always."""
    if info.required or forced:
        return 1.0
    if rule.presence is not None:
        return rule.presence
    if deep:
        return 0.0
    if info.extension:
        return DEFAULT_PRESENCE
    if info.message in ancestors:
        return RECURSIVE_PRESENCE / max(recursive, 1)
    return 1.0


class Generator:
    """Makes message number i of a profile from (seed, profile name, i), like every profile."""

    def __init__(
        self,
        message_type: type[Message],
        document: Any,
        profile_name: str,
        source_name: str | None = None,
        any_types: Sequence[str] = (),
    ) -> None:
        self.message_type = message_type
        self.profile_name = profile_name
        self.where = source_name or "generator file"
        self.rules = load_rules(document, message_type.DESCRIPTOR, self.where)
        descriptor = message_type.DESCRIPTOR
        self.pool = descriptor.file.pool
        #: What an Any packs unless a rule says: the schema's own message types.
        self.any_types = tuple(any_types)
        #: What a FieldMask names unless a rule says: the measured message's fields.
        self.mask_paths = tuple(f.name for f in descriptor.fields if MASK_PATH.fullmatch(f.name))
        self._classes: dict[str, type[Message]] = {}
        self._plans: dict[str, tuple[list[Any], list[_Field], list[str]]] = {}

    def messages(self, count: int, seed: int) -> list[Message]:
        budget = _Budget(self.where, PAYLOAD_BUDGET, RUN_BUDGET)
        made = []
        for index in range(count):
            rng = random.Random(f"{seed}:{self.profile_name}:{index}")
            message = self.message_type()
            budget.start(index)
            self._fill(message, "", rng, index, (), budget)
            made.append(message)
        return made

    # -- messages ---------------------------------------------------------

    def _fill(
        self,
        message: Message,
        prefix: str,
        rng: random.Random,
        index: int,
        ancestors: tuple[str, ...],
        budget: _Budget,
    ) -> None:
        descriptor = message.DESCRIPTOR
        name = descriptor.full_name
        budget.spend(1, prefix[:-1])
        ancestors = (*ancestors, name)
        if len(ancestors) > HARD_DEPTH:
            raise UserError(
                f"{self.where}: field {prefix[:-1]!r} nests {HARD_DEPTH} messages deep",
                hint="a required field of a recursive type never ends: make it optional",
            )
        if name == ANY:
            # a google.protobuf.Any, by its full name, from any pool (the schema's own too)
            packed = cast("any_pb2.Any", message)
            self._fill_any(packed, prefix, rng, index, ancestors, budget)
            return
        oneofs, fields, singular_messages = self._plan(descriptor)
        for oneof in oneofs:
            chosen = self._oneof_member(descriptor, oneof, prefix, rng, len(ancestors) - 1)
            if chosen is not None:
                self._set(message, _field(chosen), prefix, rng, index, ancestors, budget, True)
        recursive = sum(1 for type_name in singular_messages if type_name in ancestors)
        for field in fields:
            self._set(message, field, prefix, rng, index, ancestors, budget, False, recursive)
        if name == "google.protobuf.Duration":
            duration = cast("duration_pb2.Duration", message)  # by its full name
            if duration.seconds * duration.nanos < 0:
                duration.nanos = -duration.nanos  # the JSON mapping wants one sign for both

    def _plan(self, descriptor: Descriptor) -> tuple[list[Any], list[_Field], list[str]]:
        """A message type's oneofs, its other fields (extensions too) and the types of its
        singular message fields outside oneofs; worked out once per type."""
        found = self._plans.get(descriptor.full_name)
        if found is None:
            oneofs = real_oneofs(descriptor)
            in_oneof = {f.name for o in oneofs for f in o.fields}
            members = [f for f in descriptor.fields if f.name not in in_oneof]
            if descriptor.extension_ranges:
                members += sorted(all_extensions(descriptor), key=lambda f: f.number)
            fields = [_field(f) for f in members]
            singular = [f.message for f in fields if f.message and not f.repeated]
            found = (oneofs, fields, singular)
            self._plans[descriptor.full_name] = found
        return found

    def _oneof_member(
        self, descriptor: Descriptor, oneof: Any, prefix: str, rng: random.Random, depth: int
    ) -> FieldDescriptor | None:
        rule = self.rules.get(prefix + oneof.name, _NO_RULE)
        presence = rule.presence
        if presence is None:
            presence = 1.0 if descriptor.full_name == VALUE else DEFAULT_PRESENCE
        names = rule.choices or tuple(f.name for f in oneof.fields)
        fields = [descriptor.fields_by_name[n] for n in names]
        if depth >= MAX_DEPTH:  # no deeper messages: a scalar member, or none
            fields = [f for f in fields if f.message_type is None] or []
        if not fields:
            rng.random()
            return None
        explicit = {
            f.name: chosen
            for f in fields
            if (chosen := self.rules.get(prefix + f.name, _NO_RULE).presence) is not None
        }
        draw = rng.random()
        if not explicit:
            return fields[int(draw / presence * len(fields))] if draw < presence else None
        rest = [f for f in fields if f.name not in explicit]
        share = max(presence - sum(explicit.values()), 0.0) / len(rest) if rest else 0.0
        total = 0.0
        for field in fields:
            total += explicit.get(field.name, share)
            if draw < total:
                return field
        return None

    def _fill_any(
        self,
        message: any_pb2.Any,
        prefix: str,
        rng: random.Random,
        index: int,
        ancestors: tuple[str, ...],
        budget: _Budget,
    ) -> None:
        rule = self.rules.get(prefix[:-1], _NO_RULE)
        types = rule.choices or self.any_types
        if not types:
            return  # nothing of the schema's own to pack: an empty Any
        chosen = rng.choice(types)
        inner = self._class(chosen)()
        self._fill(inner, f"{prefix}[{chosen}].", rng, index, ancestors, budget)
        message.type_url = TYPE_URL_PREFIX + chosen
        message.value = inner.SerializeToString(deterministic=True)

    def _class(self, full_name: str) -> type[Message]:
        from evbench_agent.payloads.convert import message_class

        found = self._classes.get(full_name)
        if found is None:
            found = message_class(self.pool.FindMessageTypeByName(full_name))
            self._classes[full_name] = found
        return found

    # -- fields -----------------------------------------------------------

    def _set(
        self,
        message: Message,
        info: _Field,
        prefix: str,
        rng: random.Random,
        index: int,
        ancestors: tuple[str, ...],
        budget: _Budget,
        forced: bool,
        recursive: int = 0,
    ) -> None:
        path = prefix + info.name
        budget.spend(1, path)  # a field visited is work, set or not
        rule = self.rules.get(path, _NO_RULE)
        deep = len(ancestors) - 1 >= MAX_DEPTH
        if info.repeated:
            self._set_repeated(message, info, path, rule, rng, index, ancestors, budget, deep)
        elif info.message:
            presence = _message_presence(info, rule, forced, deep, ancestors, recursive)
            if rng.random() < presence:
                target = self._target(message, info)
                target.SetInParent()
                self._fill(target, path + ".", rng, index, ancestors, budget)
        elif forced or info.required or not info.presence or self._present(rule, rng):
            value = self._scalar(info.field, rule, rng, index)
            if info.extension:
                extensions(message)[info.field] = value
            else:
                setattr(message, info.field.name, value)

    @staticmethod
    def _target(message: Message, info: _Field) -> Any:
        """The field's container (a repeated field, a map, a sub-message) in `message`."""
        if info.extension:
            return extensions(message)[info.field]
        return getattr(message, info.field.name)

    @staticmethod
    def _present(rule: Rule, rng: random.Random) -> bool:
        """Whether an optional scalar is set: its rule's presence, else the default."""
        presence = DEFAULT_PRESENCE if rule.presence is None else rule.presence
        return rng.random() < presence

    def _set_repeated(
        self,
        message: Message,
        info: _Field,
        path: str,
        rule: Rule,
        rng: random.Random,
        index: int,
        ancestors: tuple[str, ...],
        budget: _Budget,
        deep: bool,
    ) -> None:
        """A repeated field or map: its count of elements, each filled."""
        field = info.field
        # Elements that are messages stop at the depth bound; scalars do not recurse.
        value_type = field.message_type
        if info.map:
            value_type = map_entry(field)[1].message_type
        count = self._count(rule, rng, deep and value_type is not None)
        if count == 0 and info.extension:
            return  # touching a repeated extension lists it, empty, on some runtimes
        budget.spend(count, path)
        target = self._target(message, info)
        if info.map:
            self._fill_map(target, field, path + ".", rng, index, ancestors, budget, count)
        elif field.full_name == MASK_PATHS and path not in self.rules:
            if self.mask_paths:
                k = rng.randint(1, min(3, len(self.mask_paths)))
                target.extend(rng.sample(self.mask_paths, k))
        elif info.message:
            for _ in range(count):
                self._fill(target.add(), path + ".", rng, index, ancestors, budget)
        else:
            target.extend(self._scalar(field, rule, rng, index) for _ in range(count))

    @staticmethod
    def _count(rule: Rule, rng: random.Random, deep: bool) -> int:
        low, high = rule.count or (DEFAULT_COUNT if not deep else (0, 0))
        if rule.empty is not None:
            if rng.random() < rule.empty:
                return 0
            low = max(low, min(1, high))  # not empty: at least one element when it can
        return rng.randint(low, high)

    def _fill_map(
        self,
        target: Any,
        field: FieldDescriptor,
        prefix: str,
        rng: random.Random,
        index: int,
        ancestors: tuple[str, ...],
        budget: _Budget,
        count: int,
    ) -> None:
        key_field, value_field = map_entry(field)
        key_rule = self.rules.get(prefix + "key", _NO_RULE)
        value_rule = self.rules.get(prefix + "value", _NO_RULE)
        for _ in range(count * 4):  # keys may repeat; a few more tries, then fewer entries
            if len(target) >= count:
                break
            key = self._scalar(key_field, key_rule, rng, index)
            if key in target:
                continue
            if value_field.message_type is not None:
                entry = target[key]
                self._fill(entry, prefix + "value.", rng, index, ancestors, budget)
            else:
                target[key] = self._scalar(value_field, value_rule, rng, index)

    @staticmethod
    def _scalar(field: FieldDescriptor, rule: Rule, rng: random.Random, index: int) -> Any:
        if rule.choices:
            return rng.choice(rule.choices)
        kind = field.type
        if field.enum_type is not None:
            return rng.choice([v.number for v in field.enum_type.values])
        if kind in INT_BOUNDS:
            if rule.range is None and field.full_name in _WELL_KNOWN_DEFAULTS:
                return _WELL_KNOWN_DEFAULTS[field.full_name](rng, index)
            low, high = rule.range or INT_BOUNDS[kind][1]
            step = int(rule.step) if rule.step and rule.step >= 1 else 1
            return low + rng.randrange(0, int((high - low) // step) + 1) * step
        if kind in FLOATS:
            low, high = rule.range or DEFAULT_FLOAT_RANGE
            return _stepped(_uniform(rng, low, high), rule.step or DEFAULT_STEP, low, high)
        if kind == F.TYPE_BOOL:
            return rng.random() < 0.5
        low, high = rule.length or DEFAULT_LENGTH
        length = rng.randint(low, high)
        if kind == F.TYPE_STRING:
            return "".join(rng.choices(_LETTERS, k=length))
        return bytes(rng.getrandbits(8) for _ in range(length))


def _uniform(rng: random.Random, low: float, high: float) -> float:
    """Uniform in [low, high]; finite even when high - low is not ([-1.7e308, 1.7e308])."""
    share = rng.random()
    return low * (1.0 - share) + high * share


def _stepped(value: float, step: float, low: float, high: float) -> float:
    """`value` on a multiple of `step`, when that is representable; within [low, high]."""
    multiple = value / step
    if abs(multiple) < 2.0**52:  # beyond, every double is already such a multiple
        digits = max(0, -int(f"{step:e}".split("e")[1]))
        value = round(round(multiple) * step, digits)
    return min(max(value, low), high)


#: Timestamps at 20 Hz from EPOCH_S (payload i at i x 50 ms), durations of 0 to 60 s.
_WELL_KNOWN_DEFAULTS = {
    "google.protobuf.Timestamp.seconds": lambda rng, i: EPOCH_S + i * PERIOD_NS // 1_000_000_000,
    "google.protobuf.Timestamp.nanos": lambda rng, i: (
        i * PERIOD_NS % 1_000_000_000 + rng.randrange(100_000)
    ),
    "google.protobuf.Duration.seconds": lambda rng, i: rng.randrange(0, 60),
    "google.protobuf.Duration.nanos": lambda rng, i: rng.randrange(0, 1_000_000_000),
}


def rules_are_valid(document: Mapping[str, Any] | None, message_type: type[Message]) -> None:
    """Raise the UserError a bad generator document deserves (host-side check)."""
    load_rules(document, message_type.DESCRIPTOR, "generator file")
