"""The telemetry sampler's death leaves its traceback with the run (issue 44, item 12).

The sampler is a process of its own whose standard error nobody may be reading
(the host runs the agent with its output captured): when it died, the run said only
"the telemetry sampler died (exit 1)". Now the error and its traceback are the last
line of the run's telemetry file (`sampler_died`), and the per-phase facts the
manifest keeps carry them. A real sampler process, told to pin itself to a CPU this
machine does not have (a CPU taken offline after the agent checked it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from evbench_agent.telemetry import phase_records, sysfs
from evbench_agent.telemetry.sampler import SamplerProcess

#: A CPU number no machine this runs on has: sched_setaffinity refuses it (EINVAL).
MISSING_CPU = 4095


def test_a_sampler_that_dies_leaves_its_traceback_in_the_telemetry_file(tmp_path: Path) -> None:
    assert MISSING_CPU not in os.sched_getaffinity(0)
    output = tmp_path / "telemetry.jsonl"
    sampler = SamplerProcess(sysfs.discover("/sys"), output, 0.1, MISSING_CPU)
    sampler.start()
    assert sampler.stop() == 1  # an uncaught exception: Python's exit status 1
    lines = [json.loads(line) for line in output.read_text().splitlines()]
    assert [line["type"] for line in lines] == ["sampler_died"]
    died = lines[0]
    assert died["error"] == "OSError: [Errno 22] Invalid argument"
    assert died["traceback"].startswith("Traceback (most recent call last):")
    assert 'os.sched_setaffinity(0, {config["cpu"]})' in died["traceback"]
    assert died["traceback"].rstrip().endswith("OSError: [Errno 22] Invalid argument")
    # what the run's manifest keeps (its telemetry facts)
    _sets, facts = phase_records.build(output, [], [])
    assert facts["sampler_died"] == [died]


def test_a_line_torn_by_the_death_stays_apart_from_the_traceback(tmp_path: Path) -> None:
    """A sample line cut short when the sampler died: the death is a line of its own."""
    output = tmp_path / "telemetry.jsonl"
    output.write_text('{"type":"header"}\n{"type":"sample","t_ns":12')
    config = {"sensors": sysfs.discover("/sys").as_dict(), "output": str(output),
              "interval_s": 0.1, "cpu": MISSING_CPU, "agent_pid": os.getpid()}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "evbench_agent.telemetry.sampler"],
        input=json.dumps(config) + "\n", capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1
    assert "Traceback (most recent call last):" in done.stderr  # and on standard error
    lines = output.read_text().splitlines()
    assert lines[:2] == ['{"type":"header"}', '{"type":"sample","t_ns":12']
    assert json.loads(lines[2])["type"] == "sampler_died" and len(lines) == 3


def test_a_sampler_that_is_stopped_records_no_death(tmp_path: Path) -> None:
    output = tmp_path / "telemetry.jsonl"
    sampler = SamplerProcess(sysfs.discover("/sys"), output, 0.1, None)
    sampler.start()
    assert sampler.stop() == 0
    header, samples, events = phase_records.read_telemetry(output)
    assert header["type"] == "header" and samples
    assert not [e for e in events if e["type"] == "sampler_died"]
