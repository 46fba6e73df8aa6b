"""What a `labgrid://` URL says: a place by name or a filter of tags, and evbench's options.

`labgrid://PLACE[?coordinator=HOST:PORT&via=VIA&recover_after=S]` or
`labgrid://?tags=KEY=VALUE,...[&prio=N]`, plus the login user, python and work
directory a place reached over its serial console needs. Each option is known and
given once, and names and tags are what labgrid itself accepts, so a typo is refused
before any coordinator is asked. The scheme is declared in boards/labgrid.py, on
parse_labgrid_url, beside the board that opens it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import SplitResult

from evbench.boards.urls import (
    DEFAULT_PYTHON,
    DEFAULT_USER,
    DEFAULT_WORK_DIR,
    query_pairs,
    split_url,
)
from evbench_core.errors import UserError

LABGRID_SCHEME = "labgrid"
#: A labgrid place or tag name, and a tag value: what labgrid itself accepts.
_LABGRID_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_LABGRID_TAG_VALUE = re.compile(r"[A-Za-z0-9_.:/+-]{1,128}")
LABGRID_OPTIONS = ("coordinator", "tags", "prio", "via", "user", "python", "dir", "recover_after")
#: A board silent this long mid-run is power-cycled where its place has a power switch.
DEFAULT_RECOVER_AFTER = 60.0
MAX_RECOVER_AFTER = 3600.0
#: Which of a place's resources to use when it has both (default: SSH).
LABGRID_VIAS = ("ssh", "serial")


@dataclass(frozen=True)
class LabgridUrl:
    """A labgrid place by name, or a filter of tags any free place may match."""

    url: str
    place: str | None
    tags: tuple[tuple[str, str], ...]
    coordinator: str | None  # None: LG_COORDINATOR, then labgrid's default
    prio: int
    via: str | None  # "ssh" or "serial"; None: SSH where the place has it
    #: For a place reached over its serial console: the login user.
    user: str
    python: str
    work_dir: str
    #: Seconds without an answer mid-run before a power cycle (0: never recover by power).
    recover_after: float = DEFAULT_RECOVER_AFTER


def read_labgrid_url(url: str) -> LabgridUrl:
    """Split a `labgrid://` URL into the place (or tag filter) and the coordinator."""
    parts = split_url(url)
    if parts.scheme != LABGRID_SCHEME:
        raise UserError(f"not a labgrid URL: {url!r}", hint="write labgrid://PLACE")
    options = _labgrid_options(parts.query, url)
    place = _labgrid_place(parts, url)
    tags = _labgrid_tags(options["tags"], url) if "tags" in options else ()
    if (place is None) == (not tags):
        raise UserError(
            f"labgrid URL {url!r} must name a place or tags, one of the two",
            hint="labgrid://PLACE or labgrid://?tags=board=am62x",
        )
    coordinator = _coordinator(options.get("coordinator"), url)
    prio = _prio(options.get("prio", "0"), url)
    via = _via(options.get("via"), url)
    recover_after = _recover_after(options.get("recover_after"), url)
    return LabgridUrl(
        url=url,
        place=place,
        tags=tags,
        coordinator=coordinator,
        prio=prio,
        via=via,
        user=options.get("user", DEFAULT_USER),
        python=options.get("python", DEFAULT_PYTHON),
        work_dir=options.get("dir", DEFAULT_WORK_DIR),
        recover_after=recover_after,
    )


def _labgrid_options(query: str, url: str) -> dict[str, str]:
    """The URL's options, each known (LABGRID_OPTIONS) and given once."""
    pairs = query_pairs(query, url)
    seen = [key for key, _ in pairs]
    unknown = sorted(set(seen) - set(LABGRID_OPTIONS))
    if unknown:
        raise UserError(
            f"labgrid URL {url!r}: unknown option(s) {', '.join(unknown)}",
            hint=f"the options are {', '.join(LABGRID_OPTIONS)}",
        )
    twice = sorted({key for key in seen if seen.count(key) > 1})
    if twice:
        raise UserError(f"labgrid URL {url!r} gives {', '.join(twice)} twice", hint="give it once")
    return dict(pairs)


def _labgrid_place(parts: SplitResult, url: str) -> str | None:
    """The place the URL names (None: a tag filter instead); no path after it."""
    place = parts.netloc or None
    if place is not None and not _LABGRID_NAME.fullmatch(place):
        raise UserError(
            f"labgrid URL {url!r}: bad place name {place!r}",
            hint="a place name is letters, digits, . _ - (up to 64)",
        )
    if parts.path not in ("", "/"):
        raise UserError(f"labgrid URL {url!r} has a path", hint="write labgrid://PLACE")
    return place


def _labgrid_tags(text: str, url: str) -> tuple[tuple[str, str], ...]:
    """The tags option's KEY=VALUE pairs, each key once: the filter a free place must match."""
    tags = []
    for item in text.split(","):
        key, equals, value = item.partition("=")
        good = _LABGRID_NAME.fullmatch(key) and _LABGRID_TAG_VALUE.fullmatch(value)
        if not equals or not good:
            raise UserError(
                f"labgrid URL {url!r}: bad tag {item!r}",
                hint="write tags=KEY=VALUE,KEY=VALUE (letters, digits, . _ -)",
            )
        tags.append((key, value))
    if len({key for key, _ in tags}) != len(tags):
        raise UserError(f"labgrid URL {url!r} gives a tag twice", hint="give each tag once")
    return tuple(tags)


def _coordinator(coordinator: str | None, url: str) -> str | None:
    """The coordinator option as given, checked to be HOST:PORT (None: not given)."""
    if coordinator is not None:
        host, colon, port = coordinator.rpartition(":")
        if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise UserError(
                f"labgrid URL {url!r}: coordinator must be HOST:PORT, not {coordinator!r}",
                hint="e.g. coordinator=lab-host:20408",
            )
    return coordinator


def _prio(text: str, url: str) -> int:
    """The reservation's priority (labgrid-client reserve --prio), a whole number."""
    try:
        return int(text)
    except ValueError:
        raise UserError(f"labgrid URL {url!r}: prio must be a whole number") from None


def _via(via: str | None, url: str) -> str | None:
    """The via option, one of LABGRID_VIAS (None: not given, SSH where the place has it)."""
    if via is not None and via not in LABGRID_VIAS:
        raise UserError(f"labgrid URL {url!r}: via is ssh or serial, not {via!r}")
    return via


def _recover_after(text: str | None, url: str) -> float:
    """recover_after in seconds, 0 to MAX_RECOVER_AFTER (default DEFAULT_RECOVER_AFTER)."""
    recover_text = str(DEFAULT_RECOVER_AFTER) if text is None else text
    try:
        recover_after = float(recover_text)
    except ValueError:
        recover_after = -1.0
    if not 0 <= recover_after <= MAX_RECOVER_AFTER:
        raise UserError(
            f"labgrid URL {url!r}: recover_after must be 0 to {MAX_RECOVER_AFTER:.0f} seconds, "
            f"not {recover_text[:20]!r}",
            hint="0 never power-cycles a board that stops answering",
        )
    return recover_after
