"""Telemetry in real runs on an AM62x-like tree (tests/telemetry_am62x.py: this machine has
no thermal zones or cpufreq): throttling, energy, cool-downs and the governor, the report;
runs that are stopped. A run with this machine's own sensors: test_report_html.py."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import process_tree
import pytest
from report_helpers import local_run
from telemetry_am62x import Am62xTree, wait_for_samples

from evbench.report import telemetry as report_telemetry
from evbench_agent.telemetry import phase_records, sysfs
from evbench_agent.telemetry.session import SYSFS_ENV

pytestmark = pytest.mark.integration  # real runs of the agent
RUN_ARGS = ["--suite", "codec", "--quick", "--profile", "seed", "--codecs", "json,protobuf"]


@pytest.fixture(scope="module")
def am62x_run(tmp_path_factory) -> Path:
    """A quick codec run on the AM62x-like tree, "throttled" throughout (its cooling device
    engaged), asked to cool to 60 °C (the zones are at 45 and 46 °C) under performance."""
    board = Am62xTree(tmp_path_factory.mktemp("am62x") / "sys")
    board.set_cooling_state(1)
    out = board.root.parent / "run"
    env = dict(os.environ, **{SYSFS_ENV: str(board.root)})
    asked = ("--cool-to", "60", "--governor", "performance", "--telemetry-interval", "0.1")
    local_run(out, "--suite", "codec", *asked, env=env)
    return out


def test_the_run_restores_the_governor_and_records_cool_downs_throttling_and_energy(am62x_run):
    policy = am62x_run.parent / "sys/devices/system/cpu/cpufreq/policy0"
    assert sysfs.read_text(policy / "scaling_governor") == "schedutil"
    document = json.loads((am62x_run / "manifest.json").read_text())
    manifest = document["telemetry"]
    assert document["spec"]["cool_to"] == 60 and document["spec"]["governor"] == "performance"
    assert manifest["governor"] == [
        {"policy": "policy0", "action": "set", "from": "schedutil", "to": "performance"},
        {"policy": "policy0", "action": "restored", "to": "schedutil"},
    ]
    waits = manifest["cool_downs"]
    # before the idle baseline, the suite, and each of the quick plan's 8 worker processes
    assert [w["phase"] for w in waits] == ["idle", "codec"] + ["codec"] * 8
    assert all(w["outcome"] == "cool" and w["start_c"] == 46.0 for w in waits)
    assert manifest["sensors"]["hwmon"][0] == "hwmon0/curr1 ina226 current (A)"
    assert manifest["idle_power_w"] == pytest.approx(1.33)
    assert [e["type"] for e in manifest["throttle_events"]] == ["throttle_start"]
    records = json.loads((am62x_run / "summary.json").read_text())["records"]
    records = [r for r in records if r["suite"] == "telemetry"]
    assert records and all(r["params"]["throttled"] for r in records)
    assert {r["params"]["phase"] for r in records} == {"idle", "codec"}
    by_key = {(r["params"]["phase"], r["codec"], r["metric"]): r for r in records}
    assert by_key[("codec", None, "temp_max")]["median"] == 46.0
    assert by_key[("codec", None, "freq_min")]["median"] == 1_250_000_000
    # power never changed on the fake rails: the work cost nothing above idle
    energy = [r for r in records if r["metric"] == "energy_per_op"]
    operations = ("encode", "decode", "decode_access")
    expected = {(codec, op) for codec in ("json", "protobuf") for op in operations}
    assert {(r["codec"], r["params"]["operation"]) for r in energy} == expected
    assert all(r["unit"] == "J" and r["max"] == pytest.approx(0.0) for r in energy)


def test_its_report_plots_cpu_frequency_temperature_phases_and_throttling(am62x_run):
    series = report_telemetry.load(am62x_run)
    assert series is not None and series.samples
    labels = [label for label, _ in report_telemetry.panels(series)]
    assert labels == ["CPU utilisation (%)", "frequency (MHz)", "temperature (°C)"]
    assert len(series.throttles) == 1  # one cooling-device throttle start
    assert [name for name, _start, _end in series.suites] == ["idle", "codec"]
    html = (am62x_run / "report.html").read_text()
    assert '<figure id="telemetry">' in html
    assert "red lines throttle events (1)" in html
    assert "No sensor for" not in html
    lines = (am62x_run / "report.md").read_text().splitlines()
    sensors = next(line for line in lines if line.startswith("| Sensors | "))
    shortened = re.search(r"…\[(\d+)\] \|$", sensors)  # a cell cut to fit 120 columns
    if shortened:  # is listed whole under its table
        sensors = next(line for line in lines if line.startswith(f"- [{shortened[1]}] "))
    assert "thermal_zone0 (main0_thermal)" in sensors and "ina226 power (W)" in sensors
    assert "absent" not in sensors  # every kind of sensor was found


def _sampler_pid(agent_pid: int, timeout_s: float = 30.0) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for child in process_tree.descendants(agent_pid):
            if b"evbench_agent.telemetry.sampler" in process_tree.read_proc(child, "cmdline"):
                return child
        time.sleep(0.05)
    raise AssertionError("no sampler process started")


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL])
def test_a_stopped_run_leaves_no_sampler_behind(tmp_path, stop):
    board = Am62xTree(tmp_path / "sys")  # with a power monitor: the idle phase takes 3 s
    out = tmp_path / "run"
    env = dict(os.environ, **{SYSFS_ENV: str(board.root)})
    command = [sys.executable, "-m", "evbench_agent", "run", *RUN_ARGS, "--out", str(out)]
    agent = subprocess.Popen(
        [*command, "--telemetry-interval", "0.1"], env=env, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        sampler = _sampler_pid(agent.pid)
        wait_for_samples(out / "telemetry.jsonl", 3)
        agent.send_signal(stop)
        agent.communicate(timeout=60)
    finally:
        agent.kill()
        agent.wait()
    assert process_tree.ended(sampler), f"the sampler (pid {sampler}) outlived the agent"
    assert agent.returncode == (130 if stop == signal.SIGTERM else -signal.SIGKILL)
    assert not (out / "complete").exists()
    assert phase_records.read_telemetry(out / "telemetry.jsonl")[1]  # samples kept
    if stop == signal.SIGTERM:
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["status"] == "interrupted"
        assert manifest["telemetry"]["sampler_exit"] == 0
