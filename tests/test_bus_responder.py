"""The bus responder's serve loop goes on after a transfer that is not a link frame.

A port that hands the loop prepared results stands in for the kernel's ISO-TP
socket, which cannot run on this host (no AF_CAN): IsotpPort raises FrameError
for a PDU that is not a link frame, and this checks what the loop does with it.
The real ISO-TP path runs on the virtual board (tests/board/test_e2e_isotp.py).
"""

from __future__ import annotations

import logging

import pytest

from evbench_agent.link import bus_responder, framing


class PreparedPort:
    """Returns, call by call, a list of frames or raises the exception it was given."""

    def __init__(self, results: list) -> None:
        self.results = list(results)
        self.sent: list[tuple[int, int, bytes]] = []
        self.closed = False

    def send_frame(self, kind: int, sequence: int, body: bytes = b"") -> None:
        self.sent.append((kind, sequence, body))

    def receive_frames(self, timeout_s: float) -> list[framing.Frame]:
        if not self.results:
            raise KeyboardInterrupt  # how an operator's Ctrl-C ends `serve`
        result = self.results.pop(0)
        if isinstance(result, BaseException):
            raise result
        return result

    def close(self) -> None:
        self.closed = True


def test_a_pdu_that_is_not_a_link_frame_is_dropped_and_serving_goes_on(caplog) -> None:
    before_hello = framing.Frame(framing.MESSAGE, 7, b"x")
    port = PreparedPort(
        [framing.FrameError("unknown frame kind 99"), [before_hello], framing.FrameError("short")]
    )
    with caplog.at_level(logging.INFO, logger="evbench_agent.link.bus_responder"):
        bus_responder.serve_transport("isotp://can0", opener=lambda url, max_frame: port)
    assert port.closed
    assert port.results == []  # every prepared result was read: the loop did not stop early
    assert port.sent == []  # nothing is answered before a HELLO
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert sum("not a link frame" in w for w in warnings) == 2
    # Two bad transfers and one MESSAGE before any HELLO: three dropped, none answered.
    assert "answered 0, dropped 3" in caplog.text


def test_an_error_that_is_not_about_framing_still_ends_serving() -> None:
    port = PreparedPort([OSError("the interface went down")])
    with pytest.raises(OSError):
        bus_responder.serve_transport("isotp://can0", opener=lambda url, max_frame: port)
    assert port.closed  # the port is closed on the way out
