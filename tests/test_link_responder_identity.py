"""The link suite records which responder answered as its HELLO answer names itself
(issue 44, item 2): a C responder started by hand and reached with --peer was recorded
as the Python one (spec.link_responder "python", no row with responder "c").

Real parts: the C responder built from native/ with the documented command
(native_cross), `evbench-agent serve` started as a separate process, the agent's link
suite run as a command against each over loopback TCP, and the host's report context.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from native_cross import build_responder, link_responder

from evbench.report import context
from evbench_agent.link import handshake


@pytest.fixture(scope="module")
def responder_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_responder(tmp_path_factory)


def _link_run(address: tuple[str, int], out: Path) -> list[dict]:
    """A short link run against the responder at `address` (the quick plan, 6 messages
    a phase at 100 Hz); its sample sets that measured the link (they carry `peer`)."""
    host, port = address
    done = subprocess.run(
        [sys.executable, "-m", "evbench_agent", "run", "--suite", "link", "--quick",
         "--rate", "100", "--count", "6", "--codecs", "json,protobuf",
         "--peer", f"{host}:{port}", "--out", str(out)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    sets = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    return [s for s in sets if s.get("suite") == "link" and "peer" in s["params"]]


def _report_says(out: Path) -> str:
    """What the report's environment box says answered the link suite."""
    rows = dict(context.environment_rows(context.load_context(out)))
    return rows["Link responder"]


@pytest.mark.integration
@pytest.mark.parametrize(
    ("kind", "recorded", "said"),
    [("c", "c", "C (evbench-link-responder), "), ("python", "(no param)", "")],
)
def test_a_responder_started_by_hand_is_recorded_as_the_one_it_is(
    request, tmp_path, kind, recorded, said
):
    """Every periodic and capacity row names the C responder, whatever the spec said. The
    control: `evbench-agent serve` names itself evbench-agent; its rows carry no
    `responder` param, as every run's rows against it always have."""
    out = tmp_path / "run"
    build = lambda: request.getfixturevalue("responder_path")  # noqa: E731
    with link_responder(kind, build) as started:
        measured = _link_run(started.address, out)
    phases = {s["params"]["phase"] for s in measured}
    assert phases == {"periodic", "capacity"}, phases
    assert {s["codec"] for s in measured} == {"json", "protobuf"}
    assert {s["params"].get("responder", "(no param)") for s in measured} == {recorded}
    host, port = started.address
    assert _report_says(out) == f"{said}at {host}:{port}, not started by the run"


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ({"ok": True, "responder": "evbench-link-responder 2 (C, protobuf-c, cJSON)"}, "c"),
        ({"ok": True, "responder": "evbench-agent 0.9.1"}, "python"),
        # another program: its name, without the version
        ({"ok": True, "responder": "my-gateway 1.4"}, "my-gateway"),
        # a foreign program cannot pass for one of evbench's own
        ({"ok": True, "responder": "c 1.0"}, "other"),
        # nothing but a plain program name reaches a row
        ({"ok": True, "responder": "bad\u202ename 1"}, "other"),
        ({"ok": True, "responder": "x" * 41}, "other"),
        # an answer that names no responder says nothing
        ({"ok": True}, None), ({"ok": True, "responder": 7}, None), ({"responder": " "}, None),
    ],
)  # fmt: skip
def test_the_implementation_is_what_the_answer_names(answer, expected):
    assert handshake.implementation(answer) == expected
