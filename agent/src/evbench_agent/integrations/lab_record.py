"""The lab a run ran in: the run spec's `lab` key, written into manifest.json as `lab`.

evbench's labgrid boards (the host's boards/labgrid.py) know the place, its exporters,
resources and tags; the agent writes and checksums the manifest on the board, so the
host hands them over in the spec and the agent checks them like any spec key: known
keys only, plain values of bounded size, a place name the history accepts.
"""

from __future__ import annotations

import json
from typing import Any

from evbench_core.errors import UserError

#: The record's keys: what the host's labgrid board knows about the place.
KEYS = frozenset(
    {
        "coordinator",
        "place",
        "tags",
        "exporters",
        "resources",
        "owner",
        "held_by_user",
        "transport",
        "jump",
    }
)
#: A place with more is not a board's place; the record stays small in every manifest.
MAX_BYTES = 16 * 1024
MAX_ITEMS = 64
MAX_TEXT = 512
RESOURCE_KEYS = frozenset({"name", "path", "class", "params"})


def _text(value: Any, where: str, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str) or not value or len(value) > MAX_TEXT:
        raise UserError(f"spec key 'lab': {where} must be text of 1 to {MAX_TEXT} characters")


def _plain(value: Any, where: str, depth: int = 0) -> None:
    """A resource's parameters: JSON scalars, lists and objects, shallow."""
    if depth > 4:
        raise UserError(f"spec key 'lab': {where} is nested too deep")
    if value is None or isinstance(value, (bool, int, str)):
        if isinstance(value, str) and len(value) > MAX_TEXT:
            raise UserError(f"spec key 'lab': {where} is longer than {MAX_TEXT} characters")
        return
    if isinstance(value, float) and value == value and abs(value) != float("inf"):
        return
    if isinstance(value, list) and len(value) <= MAX_ITEMS:
        for index, item in enumerate(value):
            _plain(item, f"{where}[{index}]", depth + 1)
        return
    if isinstance(value, dict) and len(value) <= MAX_ITEMS:
        for key, item in value.items():
            _text(key, f"a key of {where}")
            _plain(item, f"{where}.{key}", depth + 1)
        return
    raise UserError(f"spec key 'lab': {where} is not a plain value ({type(value).__name__})")


def _check_resource(resource: Any, index: int) -> None:
    where = f"resources[{index}]"
    if not isinstance(resource, dict) or set(resource) - RESOURCE_KEYS:
        raise UserError(
            f"spec key 'lab': {where} must be an object with {', '.join(sorted(RESOURCE_KEYS))}"
        )
    for key in ("name", "path", "class"):
        _text(resource.get(key), f"{where}.{key}")
    params = resource.get("params", {})
    if not isinstance(params, dict):
        raise UserError(f"spec key 'lab': {where}.params must be an object")
    _plain(params, f"{where}.params")


def check(record: Any) -> dict[str, Any] | None:
    """The lab record, checked; a UserError naming what is wrong otherwise."""
    if record is None:
        return None
    if not isinstance(record, dict):
        raise UserError("spec key 'lab' must be an object (the labgrid place's record)")
    unknown = sorted(set(record) - KEYS)
    if unknown:
        raise UserError(
            f"spec key 'lab': unknown key {', '.join(map(repr, unknown))}",
            hint=f"known keys: {', '.join(sorted(KEYS))}",
        )
    try:
        size = len(json.dumps(record, allow_nan=False).encode())
    except (TypeError, ValueError, RecursionError) as error:
        raise UserError(f"spec key 'lab' is not plain JSON ({error})") from None
    if size > MAX_BYTES:
        raise UserError(f"spec key 'lab' is {size} bytes, more than {MAX_BYTES}")
    from evbench_agent.platform import board_identity

    place = record.get("place")
    if not isinstance(place, str):
        raise UserError(f"spec key 'lab': place: a board name, not {place!r}")
    try:
        board_identity.check_name(place)
    except ValueError as error:
        raise UserError(f"spec key 'lab': place: {error}") from None
    for key in ("coordinator", "owner", "transport"):
        _text(record.get(key), key, optional=True)
    _text(record.get("jump"), "jump", optional=True)
    tags = record.get("tags", {})
    if not isinstance(tags, dict) or len(tags) > MAX_ITEMS:
        raise UserError(f"spec key 'lab': tags must be an object of at most {MAX_ITEMS} tags")
    for key, value in tags.items():
        _text(key, "a tag's name")
        _text(value, f"the tag {key!r}")
    exporters = record.get("exporters", [])
    if not isinstance(exporters, list) or len(exporters) > MAX_ITEMS:
        raise UserError(f"spec key 'lab': exporters must be a list of at most {MAX_ITEMS}")
    for name in exporters:
        _text(name, "an exporter's name")
    resources = record.get("resources", [])
    if not isinstance(resources, list) or len(resources) > MAX_ITEMS:
        raise UserError(f"spec key 'lab': resources must be a list of at most {MAX_ITEMS}")
    for index, resource in enumerate(resources):
        _check_resource(resource, index)
    if not isinstance(record.get("held_by_user", False), bool):
        raise UserError("spec key 'lab': held_by_user must be true or false")
    return record
