"""The link suite's checks before the run writes anything: no native codecs, a C
responder that decodes what the run sends, CPUs the run can have, and over a bus a
port that opens and the rates it can carry."""

from __future__ import annotations

from typing import Any

from evbench_agent import codecs as codec_registry
from evbench_agent.link import messages
from evbench_agent.suites.link.plan import (
    DEFAULT_PROFILES,
    Settings,
    link_codecs,
    placement_of,
)
from evbench_agent.suites.link.responder import check_native_responder, native_responder
from evbench_core.errors import UserError


def preflight(spec: Any) -> list[str]:
    """Before the run writes anything: open the bus once (a missing device or interface
    is a UserError here) and say, one line each, what it cannot carry at the rate."""
    from evbench_agent.native.codec import CODECS as NATIVE_CODECS

    native = [c for c in link_codecs(spec) if codec_registry.original_name(c) in NATIVE_CODECS]
    if native:  # their decoding runs only in a harness: no link client or responder has it
        raise UserError(
            f"the link suite cannot carry native codecs ({', '.join(native)})",
            hint="run the link suite with Python codecs (leave out --link-all-codecs), "
            "and native codecs in the codec suite (docs/native-codecs.md)",
        )
    if spec.link_responder == "c":
        check_native_responder(spec, native_responder())
    placement_of(spec)  # CPUs it cannot have are a UserError before anything is written
    if not spec.link_transport:
        return []
    from evbench_agent.buses import transport as bus_transport
    from evbench_agent.link import bus_responder
    from evbench_agent.telemetry import bus_stats

    transport = bus_transport.parse_transport(spec.link_transport)
    bus_responder.open_port(transport.port_url).close()
    notes = []
    if transport.bit_rate_source == "assumed":
        bus = transport.bus
        notes.append(
            f"link: bus load over {transport.url} is counted against an assumed "
            f"{bus.bit_rate} bit/s"
            + (f" / {bus.data_rate} bit/s" if bus.data_rate else "")
            + " (add bitrate= and dbitrate= to the URL: the interface's own rates)"
        )
    if transport.kind == "isotp":  # the rates the interface itself runs at, where it says
        said = bus_stats.counters_of(transport).snapshot()
        mismatch = bus_stats.rate_mismatch(transport.bus.bit_rate, transport.bus.data_rate, said)
        notes += [f"link: {mismatch}"] if mismatch else []
    settings = Settings.from_spec(spec)
    for profile in spec.link_profiles or DEFAULT_PROFILES:
        for codec in link_codecs(spec):
            link = messages.bind(codec, profile)
            items = link.sample_data(spec.payloads, spec.seed)
            largest = max((link.encode(item) for item in items), key=len)
            problem = bus_transport.sustainable(transport, largest, settings.rate_hz)
            if problem:
                notes.append(f"link: {profile} {codec}: {problem}")
    return notes
