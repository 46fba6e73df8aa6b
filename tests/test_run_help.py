"""`evbench run --help` (and the agent's) list the suites, profiles and codecs with what each
is, read from the registries: a codec added to a registry shows up without a hand edit."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from evbench_agent import catalogue, codecs, payloads, registry


def _help(*program: str) -> str:
    environment = {**os.environ, "COLUMNS": "200"}  # wide: the listing caps itself
    argv = [sys.executable, "-m", *program, "run", "--help"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=environment)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _entry(listing: str, name: str) -> str:
    """The line that starts the entry `name` in the listing."""
    (line,) = [line for line in listing.splitlines() if line.strip().startswith(f"{name} ")]
    return line


@pytest.mark.parametrize("program", [("evbench",), ("evbench_agent",)])
def test_run_help_says_what_each_suite_profile_and_codec_is(program):
    listing = _help(*program).split("suites (--suite):", 1)[1]
    # Hand-checked against the suites' and payloads' own documentation.
    assert "50 ms periodic messages over TCP" in _entry(listing, "link")
    assert "encode, decode" in _entry(listing, "codec")
    assert "BMS with 96 cells" in _entry(listing, "ev-full")
    assert "Protocol Buffers binary" in _entry(listing, "protobuf")
    assert "JSON, the standard library" in _entry(listing, "json")
    assert "CBOR" in _entry(listing, "cbor2")
    # And nothing registered is left out.
    for name in [*registry.REGISTRY, *payloads.PROFILES, *codecs.CODECS]:
        assert _entry(listing, name)
    widest = max(len(line) for line in listing.splitlines())
    assert widest <= catalogue.MAX_WIDTH


def test_a_codec_added_to_the_registry_is_listed_without_a_hand_edit(monkeypatch):
    added = codecs.Codec(
        "scratch", "evbench_scratch", "scratch", codecs.PLAIN, "Scratch text", None, yocto=None
    )
    monkeypatch.setitem(codecs.CODECS, "scratch", added)
    listing = catalogue.text(width=80)
    assert "Scratch text" in _entry(listing, "scratch")
    assert all(len(line) <= 80 for line in listing.splitlines())
