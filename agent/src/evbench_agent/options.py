"""The run options: ONE table, read by both command lines and by the host's agent call.

`evbench-agent run` and `evbench run` add every option of `RUN_OPTIONS` to
their parsers (`add_run_options`); the agent turns the given ones into spec
keys (`spec_overrides`); the host passes the given ones on to the agent's
command line (`agent_argv`). An option therefore exists once, with one flag,
type, default, help text and spec key.

To add a run option, append a `RunOption` to `RUN_OPTIONS`:

- ``flag``: the long flag, e.g. ``"--json-style"``; its argparse dest is the
  flag without dashes, ``-`` turned into ``_`` (``json_style``);
- ``spec_key``: the `evbench_agent.spec.Spec` field it sets (add the field
  there with its default, and the key to `schemas/spec.schema.json` with its
  type, bounds and the same default; then run `docs/generate.py` for the docs'
  table; a check no schema can make goes into `spec.from_dict`);
- ``type``: ``str``, ``int`` or ``float``, or ``None`` for a switch (no value);
  a switch sets its spec key to ``switch_value`` when given;
- ``help``, and optionally ``metavar`` and ``choices``;
- ``repeat``: the flag may be given several times; its spec key gets the list.

The default of every option here is "not given" (None): the spec's own default
applies, so a spec file's value is overridden only by a flag actually given.
This module is imported at start-up by both programs: standard library only,
nothing heavy.
"""

from __future__ import annotations

import argparse
from collections import namedtuple

TYPE_CHECKING = False  # typing itself is what start-up avoids; the guarded code is for checkers
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, NamedTuple

    class _RunOptionFields(NamedTuple):
        """What type checkers see of the namedtuple below: the same fields and defaults."""

        flag: str
        spec_key: str
        help: str
        type: Callable[[str], Any] | None = str
        metavar: str | None = None
        choices: tuple[str, ...] | None = None
        switch_value: Any = True
        repeat: bool = False

else:
    # A plain namedtuple: a dataclass (dataclasses) or typing.NamedTuple (typing) would add
    # 5 to 10 ms to every `evbench-agent --help`, which loads this table.
    _FIELDS = ("flag", "spec_key", "help", "type", "metavar", "choices", "switch_value", "repeat")
    _RunOptionFields = namedtuple("RunOption", _FIELDS, defaults=(str, None, None, True, False))


class RunOption(_RunOptionFields):
    """One option of a run: how it is spelled, parsed, explained and stored in the spec.

    flag (str), spec_key (str), help (str); type, the parser of its value
    (Callable[[str], Any], default str; None: a switch); metavar (str | None);
    choices (tuple[str, ...] | None); switch_value, what a switch puts under its
    spec key when given (default True); repeat (bool), given several times, a list.
    """

    __slots__ = ()

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")

    @property
    def is_switch(self) -> bool:
        return self.type is None


def duration(text: str) -> float:
    """'10m', '90s', '1h' or plain seconds, as seconds (argparse reports a ValueError)."""
    units = {"s": 1.0, "m": 60.0, "h": 3600.0}
    number, unit = (text[:-1], text[-1]) if text[-1:] in units else (text, "s")
    seconds = float(number) * units[unit]
    if not 0 < seconds < float("inf"):
        raise ValueError(text)
    return seconds


RUN_OPTIONS: tuple[RunOption, ...] = (
    # what to measure
    RunOption("--suite", "suites", "comma list of suites, or 'all' (default: all)"),
    RunOption(
        "--profile", "profiles", "comma list of payload profiles, or 'all' (default: seed,ev-full)"
    ),
    RunOption("--codecs", "codecs", "comma list of codecs, or 'all' (the installed ones)"),
    RunOption(
        "--payloads",
        "payloads",
        "payloads per profile (default 200); with --samples, the file's first N",
        int,
        "N",
    ),
    # the sample plan
    RunOption("--quick", "quick", "the quick sample plan (a fixed small plan)", None),
    RunOption("--processes", "processes", "worker processes (sample plan)", int),
    RunOption("--values", "values", "samples per worker process (sample plan)", int),
    RunOption(
        "--min-time",
        "min_time",
        "seconds each timed codec sample spans at least (sample plan)",
        float,
        "S",
    ),
    RunOption("--no-gc", "gc", "disable the GC while timing", None, switch_value=False),
    # how the answer decides (docs/method.md: margins, run until decided)
    RunOption(
        "--margin",
        "margins",
        "equivalence margin of a metric or group (codec, jitter, cpu, capacity): N%%, Nus, "
        "Nms, N%%period or N%%core, e.g. jitter=50us or encode=2%% (default: docs/method.md)",
        str,
        "NAME=VALUE",
        repeat=True,
    ),
    RunOption(
        "--streams",
        "streams",
        "streams of the message the product sends at the rate (system view, CPU margins; "
        "default 1)",
        int,
        "N",
    ),
    RunOption(
        "--until-decided",
        "until_decided",
        "measure the plan again in stages until every tested row is decided or the budget is spent",
        None,
    ),
    RunOption(
        "--budget",
        "budget_s",
        "with --until-decided: the most time the stages may take, e.g. 10m, 90s (default 10m)",
        duration,
        "TIME",
    ),
    RunOption("--cpu", "cpu", "pin the measuring processes to this CPU", int),
    # two builds in one run (docs/running.md): the same codecs under other environments
    RunOption(
        "--arm",
        "arms",
        "measure the codecs under this Python environment too (a venv, an interpreter or a "
        "command on the board), interleaved with the other arms; give 2 or more "
        "(codec suite only; default codecs: protobuf)",
        str,
        "NAME=VENV",
        repeat=True,
    ),
    # the results history (issue 17): which board this is, whatever its image says
    RunOption(
        "--board-name",
        "board_name",
        "the board's name in the results history (default: its device-tree serial number, "
        "first Ethernet MAC or machine-id)",
        str,
        "NAME",
    ),
    RunOption(
        "--board-place",
        "board_place",
        "the lab place the board sits in (set by evbench for labgrid:// boards): "
        "its identity when no --board-name is given",
        str,
        "PLACE",
    ),
    # A/A control: the error rate of the method on this machine
    RunOption(
        "--aa",
        "aa",
        "A/A control: measure CODEC against an identical copy of itself (named CODEC-aa) "
        "in every suite, instead of the codec list",
        str,
        "CODEC",
    ),
    RunOption(
        "--aa-slowdown",
        "aa_slowdown",
        "testing only, with --aa: make each operation of the copy this fraction slower "
        "(0.1: 10 %% slower), to check that the method detects a known difference",
        float,
        "FRACTION",
    ),
    # telemetry
    RunOption(
        "--telemetry-interval",
        "telemetry_interval_s",
        "telemetry sampling (default 1 s)",
        float,
        "S",
    ),
    RunOption("--cool-to", "cool_to", "before each phase, wait until cooler", float, "CELSIUS"),
    RunOption("--governor", "governor", "set this cpufreq governor for the run, then restore it"),
    # the link suite
    RunOption(
        "--peer", "link_peer", "link: loopback (default), HOST:PORT, or host/board (evbench)"
    ),
    RunOption(
        "--link-transport",
        "link_transport",
        "link: a bus instead of TCP, uart:///dev/ttyS1?baud=115200 or "
        "isotp://can0?tx=0x7E0&rx=0x7E8&fd=1&dlen=64 (docs/buses.md)",
        str,
        "URL",
    ),
    RunOption("--mode", "link_mode", "link: responder mode (default ack)", choices=("ack", "echo")),
    RunOption(
        "--responder",
        "link_responder",
        "link: the loopback responder, python (default) or c (evbench-link-responder)",
        choices=("python", "c"),
    ),
    RunOption("--rate", "link_rate_hz", "link: messages per second (20)", float, "HZ"),
    RunOption("--duration", "link_duration_s", "link: seconds per phase", float, "S"),
    RunOption("--count", "link_count", "link: messages per phase, instead of --duration", int),
    RunOption("--window", "link_window", "link: messages in flight, saturation (8)", int),
    RunOption("--link-profile", "link_profiles", "link: comma list of profiles (default: seed)"),
    RunOption("--realtime", "link_realtime", "link: ask for SCHED_FIFO and 1 ns timer slack", None),
    RunOption(
        "--link-cpus",
        "link_cpus",
        "link: CPUs of the sender and the loopback responder: auto (default: two of the "
        "agent's), none, CLIENT or CLIENT,RESPONDER",
        str,
        "CPUS",
    ),
    RunOption(
        "--link-all-codecs",
        "link_all_codecs",
        "link: every codec of the run (default: the table's json and protobuf)",
        None,
    ),
    RunOption(
        "--aa-reply-delay",
        "aa_reply_delay_s",
        "testing only, with --aa: the link responder holds each reply to the copy this long",
        float,
        "S",
    ),
)


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """Add every run option to `parser` (each defaults to None: not given); its help
    ends with the suites, profiles and codecs a run can take (evbench_agent.catalogue)."""
    from evbench_agent import catalogue

    catalogue.add_to_help(parser)
    for option in RUN_OPTIONS:
        if option.type is None:  # a switch
            parser.add_argument(
                option.flag, dest=option.dest, action="store_true", help=option.help
            )
            continue
        parser.add_argument(
            option.flag,
            dest=option.dest,
            action="append" if option.repeat else "store",
            type=option.type,
            metavar=option.metavar,
            choices=option.choices,
            help=option.help,
        )


def _given(args: argparse.Namespace, option: RunOption) -> Any:
    value = getattr(args, option.dest, None)
    if option.is_switch:
        return option.switch_value if value else None
    return value


def spec_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The spec keys the given options set, for `evbench_agent.spec.from_dict`."""
    overrides: dict[str, Any] = {}
    for option in RUN_OPTIONS:
        value = _given(args, option)
        if value is not None:
            overrides[option.spec_key] = value
    return overrides


def agent_argv(args: argparse.Namespace) -> list[str]:
    """The given options as `evbench-agent run` arguments (the host's call of the agent)."""
    argv: list[str] = []
    for option in RUN_OPTIONS:
        value = getattr(args, option.dest, None)
        if option.is_switch:
            if value:
                argv.append(option.flag)
        elif option.repeat:
            for item in value or ():
                argv += [option.flag, str(item)]
        elif value is not None:
            argv += [option.flag, str(value)]
    return argv


__all__ = ["add_run_options", "agent_argv", "duration"]
