"""The run spec: what to measure and how, validated before anything runs.

Every key, its type, bounds and default are in schemas/spec.schema.json, which
`from_dict` checks first (an unknown key, a value of the wrong type or out of its
bounds: a one-line UserError naming the key and the option that sets it); the code
here checks what a schema cannot (installed codecs, known profiles, this process's
CPUs, peer addresses). docs/running.md's table of keys is made from the schema.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evbench_agent import codecs
from evbench_agent.link.address import parse_peer
from evbench_agent.payloads import DEFAULT_COUNT, DEFAULT_SEED, PROFILES
from evbench_agent.registry import REGISTRY
from evbench_core import json_schema, regular_file
from evbench_core.errors import UserError

#: Suites this agent can run, in the order a run takes them.
SUITES = tuple(REGISTRY)
DEFAULT_PROFILES = ("seed", "ev-full")


@dataclass(frozen=True)
class SamplePlan:
    """How many samples, pyperf style: worker processes x values, after warm-ups."""

    processes: int
    values: int
    warmups: int
    min_time: float  # seconds each timed sample spans at least


#: The full plan gives n = 100 per figure, enough for p90/p99.
FULL_PLAN = SamplePlan(processes=10, values=10, warmups=1, min_time=0.001)
#: A fixed small plan (not a time limit), recorded as quick: true. The verdict's unit
#: is the process (an exact signed-rank test over per-process ratios, Holm over the 3
#: timed operations of a profile): its best p is 2 / 2**processes, so 8 processes
#: (p >= 0.0078, x 3 = 0.023) can name a winner where a large effect is consistent;
#: 2 never could. Few values each, shorter samples: about 5 s for 9 codecs here.
QUICK_PLAN = SamplePlan(processes=8, values=3, warmups=1, min_time=0.0005)


@dataclass(frozen=True)
class Spec:
    suites: tuple[str, ...] = SUITES
    profiles: tuple[str, ...] = DEFAULT_PROFILES
    codecs: tuple[str, ...] = ("all",)
    quick: bool = False
    gc: bool = True
    cpu: int | None = None
    processes: int | None = None
    values: int | None = None
    warmups: int | None = None
    min_time: float | None = None
    payloads: int = DEFAULT_COUNT
    seed: int = DEFAULT_SEED
    #: A/A control: this codec against its identical copy (codecs.copy_name) instead of
    #: `codecs`; `aa_slowdown` (testing only) makes each operation of the copy slower by
    #: that fraction, so a lab can check that the method finds a known difference.
    aa: str | None = None
    aa_slowdown: float = 0.0
    #: Two builds in one run (evbench_agent.arms): arm name -> its interpreter or venv;
    #: the codec suite measures every codec under each, interleaved.
    arms: dict[str, str] | None = None
    # telemetry (evbench_agent.telemetry): sampling interval and CPU, cool-down, governor
    telemetry_interval_s: float = 1.0
    telemetry_cpu: int | None = None
    cool_to: float | None = None
    cool_timeout_s: float = 300.0
    governor: str | None = None
    # link (evbench_agent.suites.link); None: the suite's full or quick plan
    link_peer: str = "loopback"
    #: A bus instead of TCP (evbench_agent.link.bus_connection): uart://... or isotp://...
    link_transport: str | None = None
    link_mode: str = "ack"
    #: The loopback responder: "python" (`evbench-agent serve`) or "c" (evbench-link-responder).
    link_responder: str = "python"
    link_rate_hz: float = 20.0
    link_duration_s: float | None = None
    link_count: int | None = None
    link_warmup_s: float | None = None
    link_phases: int | None = None
    link_deadline_s: float | None = None
    link_window: int = 8
    link_capacity_s: float | None = None
    link_realtime: bool = False
    #: Where the link's sender and loopback responder run (link.placement): auto, none,
    #: CLIENT or CLIENT,RESPONDER.
    link_cpus: str = "auto"
    #: Every codec of the run in the link suite, not only the table's json and protobuf.
    link_all_codecs: bool = False
    #: Testing only, with `aa`: the responder holds each reply to the copy this long (s).
    aa_reply_delay_s: float = 0.0
    #: Profiles the link suite measures (None: seed). Not `profiles`: each costs seconds.
    link_profiles: tuple[str, ...] | None = None
    #: A user's own message (evbench_agent.payloads.user_schema): descriptors and payloads.
    schema: dict[str, Any] | None = None
    #: The board's name in the results history (evbench_agent.platform.board_identity); None: found.
    board_name: str | None = None
    #: The lab place the board sits in (evbench's labgrid boards pass it): the identity
    #: after `board_name`.
    board_place: str | None = None
    #: The labgrid place the run ran in (evbench_agent.integrations.lab_record): the
    #: manifest's `lab`.
    lab: dict[str, Any] | None = None
    #: Equivalence margins that override analysis/margins.py's defaults: metric -> margin.
    margins: dict[str, str] | None = None
    #: Streams of the message the product sends at the rate (CPU margins, system view).
    streams: int = 1
    #: Stages of the plan until every tested row is decided, within `budget_s` seconds.
    until_decided: bool = False
    budget_s: float = 600.0

    @property
    def plan(self) -> SamplePlan:
        base = QUICK_PLAN if self.quick else FULL_PLAN
        return SamplePlan(
            processes=self.processes or base.processes,
            values=self.values or base.values,
            warmups=base.warmups if self.warmups is None else self.warmups,
            min_time=self.min_time or base.min_time,
        )

    def slowdown(self, codec: str) -> float:
        """The testing slowdown of `codec`'s operations: only an A/A copy has one."""
        if self.aa is not None and codec == codecs.copy_name(self.aa):
            return self.aa_slowdown
        return 0.0

    def as_dict(self) -> dict[str, Any]:
        document = dataclasses.asdict(self)
        for key in ("suites", "profiles", "codecs"):
            document[key] = list(document[key])
        document.pop("lab")  # the manifest's own `lab` section, not a measuring choice
        if document["arms"] is None:  # a run of one environment reads as before arms existed
            document.pop("arms")
        return document


_FIELDS = {f.name for f in dataclasses.fields(Spec)}
_SCHEMA: dict[str, Any] = {}


def schema() -> dict[str, Any]:
    """The spec's JSON Schema (read once, when a spec is first checked)."""
    if not _SCHEMA:
        _SCHEMA.update(json_schema.load("evbench_agent", "spec.schema.json"))
    return _SCHEMA


def _flag(key: str) -> str | None:
    from evbench_agent import options  # stdlib only; spec keys to the flags that set them

    return next((option.flag for option in options.RUN_OPTIONS if option.spec_key == key), None)


def _check_schema(document: dict[str, Any]) -> None:
    """The document against the schema: the first problem as a one-line UserError."""
    found = json_schema.first_problem(document, schema())
    if found is None:
        return
    if not found.path:  # unknown keys: the only problem the top level can have here
        unknown = ", ".join(map(repr, (key for key in document if key not in _FIELDS)))
        raise UserError(
            f"unknown spec key {unknown}", hint=f"known keys: {', '.join(sorted(_FIELDS))}"
        )
    key = str(found.path[0])
    flag = _flag(key)
    named = f"{flag}: spec key {key!r}" if flag else f"spec key {key!r}"
    inner = f" ({json_schema.where(found.path[1:])})" if len(found.path) > 1 else ""
    hint = None
    if found.keyword in ("minimum", "maximum"):
        low, high = found.schema.get("minimum"), found.schema.get("maximum")
        if high is None:
            span = f"{low:g} or more"
        elif low is None:
            span = f"{high:g} or less"
        else:
            span = f"{low:g} to {high:g}"
        hint = f"give {flag or key} {span}, or leave it out for the default (see --help)"
    raise UserError(f"{named}{inner} {found.message}", hint=hint)


def _names(value: str | list[str], key: str) -> tuple[str, ...]:
    """A list of names (the schema checked the type) or a comma list, split."""
    if isinstance(value, str):
        value = [part.strip() for part in value.split(",") if part.strip()]
    if not value:
        raise UserError(f"spec key {key!r} must be a non-empty list of names or a comma list")
    return tuple(value)


def _expand(requested: tuple[str, ...], known: list[str], what: str) -> tuple[str, ...]:
    if requested == ("all",):
        return tuple(known)
    unknown = [name for name in requested if name not in known]
    if unknown:
        raise UserError(
            f"unknown {what} {', '.join(map(repr, unknown))}",
            hint=f"available {what}s: {', '.join(known)}",
        )
    return tuple(dict.fromkeys(requested))


def _check_link(values: dict[str, Any]) -> None:
    """What the schema cannot say of the link's keys (their types and bounds it checked)."""
    delay = values.get("aa_reply_delay_s", 0.0)
    if delay and values.get("aa") is None:
        raise UserError("--aa-reply-delay delays the copy of an A/A run: it needs --aa CODEC")
    peer = values.get("link_peer", "loopback")
    if values.get("link_transport") is not None:
        from evbench_agent.buses import transport

        transport.parse_transport(values["link_transport"])  # a UserError if malformed
        if peer != "loopback":
            raise UserError(
                "--peer names a TCP responder; a --link-transport bus has its responder "
                "at the bus's other end",
                hint="give one of them",
            )
    if peer == "host":
        raise UserError(
            "the agent cannot resolve --peer host by itself",
            hint="evbench run resolves it for remote boards; here give --peer HOST:PORT",
        )
    if peer != "loopback":
        parse_peer(peer)  # raises a UserError naming the expected form
    if values.get("link_responder", "python") != "python" and (
        peer != "loopback" or values.get("link_transport") is not None
    ):
        raise UserError(
            "--responder chooses the responder the link suite starts here; with --peer "
            "or --link-transport the responder is the one at the other end",
            hint="give one of them",
        )


def _check_aa(values: dict[str, Any]) -> None:
    aa = values.get("aa")
    if aa is not None:
        if codecs.original_name(aa) != aa:
            raise UserError(f"spec key 'aa' must name one installed codec, not {aa!r}")
        codecs.get(aa)  # raises, naming what is available, when missing
    slowdown = values.get("aa_slowdown")
    if slowdown is None:
        return
    if slowdown and aa is None:
        raise UserError(
            "--aa-slowdown slows the copy of an A/A run: it needs --aa CODEC",
            hint="e.g. --aa json --aa-slowdown 0.1",
        )
    values["aa_slowdown"] = float(slowdown)


def _check_arms(values: dict[str, Any]) -> None:
    """--arm: two or more environments, the codec suite alone, protobuf unless told."""
    if values.get("arms") is None:
        return
    from evbench_agent import arms

    values["arms"] = arms.parse(values["arms"])
    if values.get("aa") is not None:
        raise UserError("--arm and --aa are two different controls: give one of them")
    if "suites" not in values:  # checked and expanded before this
        values["suites"] = ("codec",)
    elif values["suites"] != ("codec",):
        raise UserError(
            "--arm measures the codec suite under each environment; the link suite and "
            "its responder run in one",
            hint="give --suite codec, or leave --suite out",
        )
    values.setdefault("codecs", ["protobuf"])  # the usual question: did protobuf change?


def _check_cpu(cpu: int | None) -> None:
    """A CPU to pin to must be one this process may run on."""
    if cpu is None or not hasattr(os, "sched_getaffinity"):
        return
    allowed = sorted(os.sched_getaffinity(0))
    if cpu not in allowed:
        raise UserError(
            f"cannot pin to CPU {cpu}: not among this process's CPUs",
            hint=f"choose one of {', '.join(map(str, allowed))}",
        )


def _check_board_name(name: object, key: str = "board_name") -> None:
    if name is None:
        return
    if not isinstance(name, str):  # the schema refuses it first; said the same way here
        raise UserError(f"spec key {key!r}: a board name, not {name!r}")
    from evbench_agent.platform import board_identity

    try:
        board_identity.check_name(name)
    except ValueError as error:
        raise UserError(f"spec key {key!r}: {error}") from None


def _check_margins(values: dict[str, Any]) -> None:
    """--margin items parsed (a UserError names a bad one); --until-decided needs a pair
    of codecs to decide, and measures one environment."""
    if values.get("margins") is not None:
        from evbench_core.analysis import margins

        values["margins"] = margins.parse(values["margins"]) or None
    if values.get("budget_s") is not None:
        values["budget_s"] = float(values["budget_s"])
    if not values.get("until_decided"):
        return
    if values.get("arms") is not None:
        raise UserError("--until-decided grows one environment's plan: give it without --arm")
    from evbench_core import comparison

    if comparison.answer_pair(values.get("codecs", ()), values.get("aa")) is None:
        raise UserError("--until-decided decides a pair of codecs: give at least two")


def from_dict(document: dict[str, Any]) -> Spec:
    """Validate a spec: unknown keys, suites, profiles and codecs are refused."""
    if not isinstance(document, dict):
        raise UserError("a spec is a JSON object")
    _check_schema(document)
    values = {key: document[key] for key in _FIELDS if key in document}
    if values.get("schema") is not None:
        from evbench_agent.payloads import user_schema

        user_profile = user_schema.activate(values["schema"]).name
        values.setdefault("profiles", [user_profile])
        values.setdefault("link_profiles", [user_profile])  # the link carries it too
    if "suites" in values:
        values["suites"] = _expand(_names(values["suites"], "suites"), list(SUITES), "suite")
    if "profiles" in values:
        values["profiles"] = _expand(
            _names(values["profiles"], "profiles"), list(PROFILES), "profile"
        )
    _check_arms(values)
    requested_codecs = _names(values.get("codecs", ["all"]), "codecs")
    _check_aa(values)
    if values.get("aa") is not None:
        values["codecs"] = (values["aa"], codecs.copy_name(values["aa"]))
    elif requested_codecs == ("all",):
        # every codec that carries every profile (dbc: those its DBC describes)
        values["codecs"] = tuple(codecs.available(values.get("profiles", DEFAULT_PROFILES)))
    else:
        for name in requested_codecs:
            codecs.get(name)  # raises, naming what is available, when missing
        values["codecs"] = tuple(dict.fromkeys(requested_codecs))
    _check_cpu(values.get("cpu"))
    _check_board_name(values.get("board_name"))
    _check_board_name(values.get("board_place"), "board_place")
    if values.get("lab") is not None:
        from evbench_agent.integrations import lab_record

        values["lab"] = lab_record.check(values["lab"])
    _check_link(values)
    _check_margins(values)
    if values.get("link_profiles") is not None:
        values["link_profiles"] = _expand(
            _names(values["link_profiles"], "link_profiles"), list(PROFILES), "profile"
        )
    spec = Spec(**values)
    if values.get("schema") is not None:
        _preflight_schema(spec)
    return spec


def _preflight_schema(spec: Spec) -> None:
    """Make the run's payloads of the user's message once and bind every codec to it, so
    that whatever refuses them (the generator's budget, a value a JSON style cannot carry,
    a codec that cannot carry the message on this runtime) does it now, naming the field,
    before a run directory exists."""
    from evbench_agent.payloads import user_schema

    for name in spec.profiles:
        profile = PROFILES.get(name)
        if not isinstance(profile, user_schema.SchemaProfile):
            continue
        profile.payloads(spec.payloads, spec.seed)  # the JSON style converts each one
        for codec_name in spec.codecs:
            codec = codecs.get(codec_name)
            if codec.can_carry(profile):
                codec.bind(profile)


#: A spec holds the run's options and, for a user schema, its samples (at most 32 MiB
#: read from a file, base64 in the JSON): anything longer is not a spec.
MAX_SPEC = 64 << 20


def load(path: Path | str) -> dict[str, Any]:
    """Read a spec file ('-' for standard input) as a JSON object."""
    try:
        if str(path) == "-":
            text = sys.stdin.read(MAX_SPEC + 1)
            if len(text) > MAX_SPEC:
                raise UserError(f"the spec on standard input is over {MAX_SPEC} characters")
        else:  # a regular file only: a device or FIFO would be read without end
            text = regular_file.read_regular(Path(path), MAX_SPEC, "spec").decode("utf-8")
        document = json.loads(text)
    except OSError as error:
        raise UserError(f"cannot read the spec {path}: {error.strerror}") from error
    except ValueError as error:
        raise UserError(f"the spec {path} is not valid JSON: {error}") from error
    if not isinstance(document, dict):  # the run options are merged into it as keys
        raise UserError(f"the spec {path} is not a JSON object")
    return document


__all__ = ["from_dict", "load"]
