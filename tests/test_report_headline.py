"""A partial run's first line: the manifest's reason, made safe to print (it may come
from a board), or what the reader found instead. Real kills are in test_run_local.py."""

from __future__ import annotations

from evbench.report.headline import partial_headline
from evbench_core import results


def test_the_reason_is_one_printable_line():
    reason = "the sampler died\n\x1b[2J\x1b]0;owned\x07 (signal 9)\r"
    # Escapes and line breaks become spaces, runs of spaces one: nothing reaches a terminal.
    assert results.partial_reason({"reason": reason}) == "the sampler died [2J ]0;owned (signal 9)"


def test_a_reason_that_is_not_a_string_is_no_reason():
    for odd in (None, 9, ["died"], {"why": "x"}, "", " \n "):
        assert results.partial_reason({"reason": odd}) is None
    assert results.partial_reason({}) is None


def test_a_long_reason_is_cut_to_500_characters():
    cut = results.partial_reason({"reason": "x" * 10_000})
    assert cut == "x" * 497 + "..." and len(cut) == 500


def test_without_a_reason_the_line_says_what_the_reader_found():
    assert partial_headline({"status": "interrupted"}) == "PARTIAL: the run was interrupted"
    running = partial_headline({"status": "running"})
    assert running == "PARTIAL: the manifest's status is 'running' and it gives no reason"
    assert partial_headline({"status": "complete"}, ["complete"]) == "PARTIAL: missing complete"
    assert partial_headline({}, [], ["checksum: samples.jsonl: checksum mismatch"]) == (
        "PARTIAL: checksum: samples.jsonl: checksum mismatch"
    )
    assert partial_headline({}) == "PARTIAL: the run did not finish"
    died = {"status": "partial", "reason": "a codec worker was killed (signal 9, SIGKILL)"}
    assert partial_headline(died) == "PARTIAL: a codec worker was killed (signal 9, SIGKILL)"
