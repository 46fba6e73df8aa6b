"""The Java study's payload shapes, one kind of value each."""

from __future__ import annotations

import random
import string
from collections.abc import Callable
from typing import Any

from evbench_agent.payloads.profile import Profile
from evbench_agent.schema import shapes_pb2

_LETTERS = string.ascii_letters + string.digits


def _int(rng: random.Random) -> int:
    # Magnitudes spread over 1 to 7 decimal digits, as counters and IDs are.
    return rng.randrange(1, 10 ** rng.randint(1, 7))


def _double(rng: random.Random) -> float:
    return rng.uniform(-1000.0, 1000.0)


def _text(rng: random.Random, length: int = 12) -> str:
    return "".join(rng.choices(_LETTERS, k=length))


def _fields(count: int, make: Callable[[random.Random], Any], rng: random.Random) -> dict[str, Any]:
    return {f"f{i}": make(rng) for i in range(1, count + 1)}


def _skip_nested(rng: random.Random, _: int) -> dict[str, Any]:
    plain: dict[str, Any] = {
        f"s{i}": {"a": _text(rng), "b": _text(rng), "c": _text(rng)} for i in range(1, 15)
    }
    plain["last"] = _text(rng)
    return plain


def _skip_flat(rng: random.Random, _: int) -> dict[str, Any]:
    plain = _fields(14, _text, rng)
    plain["last"] = _text(rng)
    return plain


PROFILES = [
    Profile("int", "one int32", shapes_pb2.OneInt, lambda r, _: {"value": _int(r)}),
    Profile("double", "one double", shapes_pb2.OneDouble, lambda r, _: {"value": _double(r)}),
    Profile("ten-ints", "ten int32 fields", shapes_pb2.TenInts, lambda r, _: _fields(10, _int, r)),
    Profile(
        "ten-doubles",
        "ten double fields",
        shapes_pb2.TenDoubles,
        lambda r, _: _fields(10, _double, r),
    ),
    Profile(
        "one-string",
        "one 12-character string",
        shapes_pb2.OneString,
        lambda r, _: _fields(1, _text, r),
    ),
    Profile(
        "five-strings",
        "five 12-character strings",
        shapes_pb2.FiveStrings,
        lambda r, _: _fields(5, _text, r),
    ),
    Profile(
        "ten-strings",
        "ten 12-character strings",
        shapes_pb2.TenStrings,
        lambda r, _: _fields(10, _text, r),
    ),
    Profile(
        "long-string",
        "one 160-character string",
        shapes_pb2.LongString,
        lambda r, _: {"text": _text(r, 160)},
    ),
    Profile(
        "int-list",
        "a list of 16 int32",
        shapes_pb2.IntList,
        lambda r, _: {"values": [_int(r) for _ in range(16)]},
    ),
    Profile(
        "double-array",
        "an array of 10 doubles",
        shapes_pb2.DoubleArray,
        lambda r, _: {"values": [_double(r) for _ in range(10)]},
    ),
    Profile(
        "object-list",
        "a list of 16 objects with one string",
        shapes_pb2.ObjectList,
        lambda r, _: {"items": [{"name": _text(r)} for _ in range(16)]},
    ),
    Profile(
        "string-map",
        "a map of 8 string keys to strings",
        shapes_pb2.StringMap,
        lambda r, _: {"entries": {_text(r, 8): _text(r) for _ in range(8)}},
    ),
    Profile(
        "skip-flat",
        "15 string fields; the reader needs only the last",
        shapes_pb2.SkipFlat,
        _skip_flat,
        access=("last",),
    ),
    Profile(
        "skip-nested",
        "14 nested objects and a string; the reader needs only the string",
        shapes_pb2.SkipNested,
        _skip_nested,
        access=("last",),
    ),
]
