"""The 2-minute soak (benchmarks/soak.py): the responder under its documented mix of
well-behaved, saturating and attacking clients keeps its memory, threads and open
descriptors flat at the same point of every cycle and serves every real client."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

SOAK = Path(__file__).resolve().parent.parent / "benchmarks" / "soak.py"


@pytest.mark.integration
def test_a_two_minute_soak_stays_flat_and_serves_every_real_client(tmp_path):
    out = tmp_path / "soak.json"
    done = subprocess.run(
        [sys.executable, str(SOAK), "--minutes", "2", "--max-connections", "16", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=400,
    )
    summary = json.loads(out.read_text())
    assert summary["cycles"] == 10 and summary["responder_alive"]
    # at the cycle's sampling point every connection of the mix has closed
    first, last = summary["minute_one"], summary["last"]
    assert first["cycle"] == 4 and last["cycle"] == 9
    assert last["threads"] == first["threads"] and last["fds"] == first["fds"]
    assert abs(last["rss_bytes"] / first["rss_bytes"] - 1) <= 0.05
    served = summary["well_behaved"]
    assert served["clients"] == 40 and served["failed"] == 0, served["failures"]
    assert served["handshake_max_s"] < 5.0  # the responder's handshake deadline
    # the attackers attacked: 16 slow clients a cycle, dropped at the 5 s deadline, mostly
    # reconnected once before 6 s; garbage clients looped; 8 stallers a cycle
    attacks = summary["attacks"]
    assert attacks["slow"] > 10 * 16 * 1.5 and attacks["stall"] == 10 * 8
    assert attacks["garbage"] > 10 * 8
    assert summary["saturating"]["failed"] == 0 and summary["saturating"]["messages"] > 0
    assert done.returncode == 0, done.stdout[-2000:]
