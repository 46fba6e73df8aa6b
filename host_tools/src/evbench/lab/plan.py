"""LAB.yaml: the boards and the matrix a lab runs, validated before anything starts.

    boards:                      # each a --board URL, or a mapping
      - labgrid://am62x-a
      - board: labgrid://?tags=board=am62x,site=lab1
        name: am62x-any          # the label in lab.json and the report (default: from the URL)
        options: [--cpu, "1"]    # extra `evbench run` options for this board's entries
    matrix:
      suites: [codec]            # one entry per suite ...
      profiles: [seed]           # ... per profile ...
      codecs: ["json,protobuf"]  # ... per codec list
    options: [--quick]           # extra `evbench run` options for every entry
    retries: 1                   # transient failures (connection lost, place taken) retried
    place_timeout: 600           # seconds a labgrid board waits for its place

Its schema, schemas/lab.schema.json, checks every key and type first (an unknown key
is refused naming it and where, a wrong-typed field naming it); the code below checks
what a schema cannot (board URLs, options evbench sets itself, labels or matrix values
given twice, two entries of one id).
docs/lab.md's table of keys is generated from the schema (docs/generate.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from evbench import yaml_errors
from evbench_core import json_schema, regular_file
from evbench_core.errors import UserError

SCHEMA = json_schema.load("evbench.lab", "lab.schema.json")
MAX_ENTRIES = 1000
#: A LAB.yaml lists boards and a matrix: a few kilobytes; anything this long is not one.
MAX_PLAN_BYTES = 1 << 20
#: evbench lab sets these per entry itself.
RESERVED_OPTIONS = ("--board", "--out", "--suite", "--profile", "--codecs", "--place-timeout")


@dataclass(frozen=True)
class Board:
    url: str
    label: str
    options: tuple[str, ...]


@dataclass(frozen=True)
class Entry:
    board: Board
    suite: str
    profile: str
    codecs: str
    options: tuple[str, ...]

    @property
    def id(self) -> str:
        codecs = self.codecs.replace(",", "+")
        return f"{self.board.label}/{self.suite}-{self.profile}-{codecs}"

    def run_argv(self, out: Path, place_timeout: float) -> list[str]:
        return [
            "run",
            "--board",
            self.board.url,
            "--suite",
            self.suite,
            "--profile",
            self.profile,
            "--codecs",
            self.codecs,
            "--place-timeout",
            str(place_timeout),
            "--out",
            str(out),
            *self.options,
        ]


@dataclass(frozen=True)
class Plan:
    entries: list[Entry]
    retries: int
    place_timeout: float


def _reserved_meant(item: str) -> list[str]:
    """The reserved options argparse could take `item` for: itself, or any option it is
    a prefix of (argparse accepts `--ou` for `--out`, and `--ou=x` as `--out x`).

    A prefix shared with an option that is not reserved (`--pro`: --profile or
    --processes; `--boa`: --board or --board-name) is refused too: argparse would call
    it ambiguous and every entry would fail with exit 2, so it is refused here, before
    anything runs. No option of `evbench run` is itself a prefix of a reserved one (the
    LAB.yaml tests check against the real parser), so no exact option is refused."""
    name = item.split("=", 1)[0]
    if not name.startswith("--") or name == "--":  # "--" ends the options: nothing to mean
        return []
    return [option for option in RESERVED_OPTIONS if option.startswith(name)]


def _strings(value: list[str | int | float], where: str) -> tuple[str, ...]:
    items = tuple(str(v) for v in value)
    for item in items:
        meant = _reserved_meant(item)
        if item.split("=", 1)[0] in meant:
            raise UserError(f"LAB.yaml: {where} may not give {item}: evbench lab sets it")
        if meant:
            raise UserError(
                f"LAB.yaml: {where} may not give {item}: it abbreviates {' or '.join(meant)},"
                " which evbench lab sets",
                hint=f"evbench lab sets {', '.join(RESERVED_OPTIONS)} per entry;"
                " write other options in full",
            )
    return items


def _label_of(url: str) -> str:
    parts = urlsplit(url)
    base = parts.netloc or parts.path or parts.query or url
    label = re.sub(r"[^A-Za-z0-9_.-]+", "-", base).strip("-.")[:64]
    return label or "board"


def _board(item: str | dict[str, Any], index: int) -> Board:
    if isinstance(item, str):
        item = {"board": item}
    url = item["board"]
    from evbench.boards.urls import scheme_of

    scheme_of(url).parse(url)  # an unknown scheme or a bad URL stops here, before anything runs
    label = item.get("name") or _label_of(url)
    options = _strings(item.get("options", []), f"boards[{index}].options")
    return Board(url, label, options)


def _default(*path: str) -> Any:
    schema = SCHEMA
    for key in path:
        schema = schema["properties"][key]
    return schema["default"]


def _check_ids_unique(entries: list[Entry]) -> None:
    """Different values can still make one id (`json,protobuf` and `json+protobuf`; suite
    `a-b` with profile `c` and suite `a` with profile `b-c`): lab.json, the entry's run
    directory and its log are all keyed by the id, so one entry would overwrite the other."""
    seen: dict[str, Entry] = {}
    for entry in entries:
        other = seen.setdefault(entry.id, entry)
        if other is entry:
            continue
        fields = [
            (key, getattr(other, key), getattr(entry, key))
            for key in ("suite", "profile", "codecs")
            if getattr(other, key) != getattr(entry, key)
        ]
        first = " ".join(f"{key} {a!r}" for key, a, _b in fields)
        second = " ".join(f"{key} {b!r}" for key, _a, b in fields)
        raise UserError(
            f"LAB.yaml: matrix {first} and {second} make the same entry id {entry.id!r}",
            hint="list it once, in one spelling",
        )


def parse(document: Any) -> Plan:
    """A plan from LAB.yaml's content; every mistake is a UserError naming where it is."""
    json_schema.validate(document, SCHEMA, "LAB.yaml")
    boards = [_board(item, index) for index, item in enumerate(document["boards"])]
    labels = [b.label for b in boards]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise UserError(f"LAB.yaml: two boards are named {twice[0]!r}", hint="give each a name")
    matrix = document["matrix"]
    suites, profiles, codecs = (
        matrix.get(key, _default("matrix", key)) for key in ("suites", "profiles", "codecs")
    )
    # A value given twice makes entries with the same id: lab.json and the page key
    # results by id, so one would be recorded under the other's.
    for key, values in (("suites", suites), ("profiles", profiles), ("codecs", codecs)):
        repeated = [value for index, value in enumerate(values) if value in values[:index]]
        if repeated:
            raise UserError(
                f"LAB.yaml: matrix.{key} lists {repeated[0]!r} twice", hint="list it once"
            )
    common = _strings(document.get("options", []), "options")
    retries = document.get("retries", _default("retries"))
    place_timeout = document.get("place_timeout", _default("place_timeout"))
    entries = [
        Entry(board, suite, profile, codec_list, common + board.options)
        for board in boards
        for suite in suites
        for profile in profiles
        for codec_list in codecs
    ]
    if len(entries) > MAX_ENTRIES:
        raise UserError(f"LAB.yaml: {len(entries)} entries, more than {MAX_ENTRIES}")
    _check_ids_unique(entries)
    return Plan(entries, retries, float(place_timeout))


def load(path: Path) -> Plan:
    import yaml

    try:  # a regular file only: a device or FIFO would be read without end
        text = regular_file.read_regular(path, MAX_PLAN_BYTES, "lab plan").decode("utf-8")
    except UnicodeDecodeError as error:
        raise UserError(f"{path} is not UTF-8 text (byte {error.start})") from None
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise UserError(f"{path} is not valid YAML: {yaml_errors.one_line(error, text)}") from None
    except RecursionError:
        raise UserError(f"{path} nests too deeply to be a LAB.yaml") from None
    return parse(document)
