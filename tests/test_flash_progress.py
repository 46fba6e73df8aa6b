"""Flashing progress as plain lines (a log, not a terminal): rate, time left, interrupts."""

import io
import logging

import pytest

from evbench.flash import progress
from evbench.flash.progress import FlashProgress


@pytest.fixture(autouse=True)
def every_step_shown(monkeypatch):
    monkeypatch.setattr(progress, "PLAIN_INTERVAL", 0.0)


def test_plain_lines_carry_rate_and_time_left():
    stream = io.StringIO()
    with FlashProgress(4 * progress.MiB, "flash", stream) as view:
        view.advance(progress.MiB)
        view.advance(progress.MiB)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    assert lines[-1].startswith("flash: 2.0 of 4.0 MiB (50 %), ")
    assert lines[-1].endswith(" s left") and " MiB/s, " in lines[-1]


def test_unknown_total_shows_rate_only():
    stream = io.StringIO()
    with FlashProgress(None, "flash", stream) as view:
        view.advance(3 * progress.MiB)
    line = stream.getvalue().strip()
    assert line.startswith("flash: 3.0 MiB, ") and line.endswith(" MiB/s")


@pytest.mark.parametrize("quiet", [False, True], ids=["", "--quiet"])
def test_an_interrupt_says_how_far_it_got_even_when_quiet(quiet):
    # --quiet sets the root logger to ERROR (evbench_agent.command_line.setup_logging):
    # no progress then, but the interrupt still.
    root = logging.getLogger()
    before = root.level
    root.setLevel(logging.ERROR if quiet else before)  # setLevel: it clears the level cache
    stream = io.StringIO()
    try:
        with pytest.raises(KeyboardInterrupt), FlashProgress(10, "flash", stream) as view:
            view.advance(7)
            raise KeyboardInterrupt
    finally:
        root.setLevel(before)
    said = "flash: interrupted after 7 bytes: the target is incomplete\n"
    assert stream.getvalue().endswith(said)
    assert (stream.getvalue() == said) == quiet  # not quiet: the progress line before it
