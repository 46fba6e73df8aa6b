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

Unknown keys are refused, naming the key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from evbench_agent.errors import UserError

TOP_KEYS = ("boards", "matrix", "options", "retries", "place_timeout")
BOARD_KEYS = ("board", "name", "options")
MATRIX_KEYS = ("suites", "profiles", "codecs")
MAX_RETRIES = 5
MAX_ENTRIES = 1000
#: evbench lab sets these per entry itself.
RESERVED_OPTIONS = ("--board", "--out", "--suite", "--profile", "--codecs", "--place-timeout")
_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


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


def _unknown(mapping: dict, allowed: tuple[str, ...], where: str) -> None:
    for key in mapping:
        if key not in allowed:
            raise UserError(
                f"LAB.yaml: unknown key {key!r} in {where}",
                hint=f"the keys there are {', '.join(allowed)}",
            )


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str | int | float) for v in value):
        raise UserError(f"LAB.yaml: {where} must be a list of strings")
    items = tuple(str(v) for v in value)
    for item in items:
        if item.split("=", 1)[0] in RESERVED_OPTIONS:
            raise UserError(f"LAB.yaml: {where} may not give {item}: evbench lab sets it")
    return items


def _names(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise UserError(f"LAB.yaml: matrix.{where} must be a non-empty list of names")
    return value


def _label_of(url: str) -> str:
    parts = urlsplit(url)
    base = parts.netloc or parts.path or parts.query or url
    label = re.sub(r"[^A-Za-z0-9_.-]+", "-", base).strip("-.")[:64]
    return label or "board"


def _board(item: Any, index: int) -> Board:
    if isinstance(item, str):
        item = {"board": item}
    if not isinstance(item, dict) or "board" not in item:
        raise UserError(f"LAB.yaml: boards[{index}] must be a URL or a mapping with 'board'")
    _unknown(item, BOARD_KEYS, f"boards[{index}]")
    url = item["board"]
    if not isinstance(url, str) or not url:
        raise UserError(f"LAB.yaml: boards[{index}].board must be a board URL")
    from evbench.boards.urls import transport_of

    transport_of(url)  # an unknown scheme stops here, before anything runs
    label = str(item.get("name") or _label_of(url))
    if not _LABEL.fullmatch(label):
        raise UserError(f"LAB.yaml: boards[{index}].name {label!r}: letters, digits, . _ -")
    options = _strings(item.get("options", []), f"boards[{index}].options")
    return Board(url, label, options)


def parse(document: Any) -> Plan:
    """A plan from LAB.yaml's content; every mistake is a UserError naming where it is."""
    if not isinstance(document, dict):
        raise UserError("LAB.yaml must be a mapping with boards and matrix")
    _unknown(document, TOP_KEYS, "the top level")
    for key in ("boards", "matrix"):
        if key not in document:
            raise UserError(f"LAB.yaml: {key!r} is missing")
    if not isinstance(document["boards"], list) or not document["boards"]:
        raise UserError("LAB.yaml: boards must be a non-empty list")
    boards = [_board(item, index) for index, item in enumerate(document["boards"])]
    labels = [b.label for b in boards]
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise UserError(f"LAB.yaml: two boards are named {twice[0]!r}", hint="give each a name")
    matrix = document["matrix"]
    if not isinstance(matrix, dict):
        raise UserError("LAB.yaml: matrix must be a mapping of suites, profiles, codecs")
    _unknown(matrix, MATRIX_KEYS, "matrix")
    suites = _names(matrix.get("suites", ["codec"]), "suites")
    profiles = _names(matrix.get("profiles", ["seed"]), "profiles")
    codecs = _names(matrix.get("codecs", ["json,protobuf"]), "codecs")
    common = _strings(document.get("options", []), "options")
    retries = document.get("retries", 1)
    if not isinstance(retries, int) or isinstance(retries, bool) or not 0 <= retries <= MAX_RETRIES:
        raise UserError(f"LAB.yaml: retries must be a whole number 0-{MAX_RETRIES}")
    place_timeout = document.get("place_timeout", 600)
    if not isinstance(place_timeout, int | float) or isinstance(place_timeout, bool):
        raise UserError("LAB.yaml: place_timeout must be a number of seconds")
    if place_timeout < 0:
        raise UserError("LAB.yaml: place_timeout must be 0 or more")
    entries = [
        Entry(board, suite, profile, codec_list, common + board.options)
        for board in boards
        for suite in suites
        for profile in profiles
        for codec_list in codecs
    ]
    if len(entries) > MAX_ENTRIES:
        raise UserError(f"LAB.yaml: {len(entries)} entries, more than {MAX_ENTRIES}")
    return Plan(entries, retries, float(place_timeout))


def load(path: Path) -> Plan:
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise UserError(f"cannot read {path}: {error.strerror}") from None
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise UserError(f"{path} is not valid YAML: {error}") from None
    return parse(document)
