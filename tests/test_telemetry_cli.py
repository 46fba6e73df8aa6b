"""The agent's telemetry on its command line: `run`'s flags refused when they cannot work
(a run that records them: test_telemetry_run.py); `info`'s warnings about noisy setups."""

import json
import os
import subprocess
import sys

import pytest
from telemetry_am62x import Am62xTree, write

from evbench_agent import spec as spec_module
from evbench_agent.telemetry import noise
from evbench_agent.telemetry.session import SYSFS_ENV
from evbench_core.errors import UserError

RUN = [sys.executable, "-m", "evbench_agent", "run", "--suite", "codec", "--quick"]
RUN += ["--profile", "seed", "--codecs", "json,protobuf", "--progress", "none"]
SPIN = "import time\nend = time.monotonic() + 30\nwhile time.monotonic() < end: pass\n"


def _agent(sysfs_root, *arguments: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, **{SYSFS_ENV: str(sysfs_root)})
    return subprocess.run([*RUN, *arguments], env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"telemetry_interval_s": 0.05}, "'telemetry_interval_s' must be a number of seconds"),
        ({"telemetry_interval_s": True}, "'telemetry_interval_s' must be a number of seconds"),
        ({"cool_timeout_s": -1}, "'cool_timeout_s' must be a number"),
        ({"telemetry_cpu": 1.5}, "'telemetry_cpu' must be a whole number"),
        ({"governor": "performance; reboot"}, "'governor' must be a cpufreq governor name"),
    ],
)
def test_bad_telemetry_settings_are_refused_by_the_spec(document, message):
    with pytest.raises(UserError, match=message):
        spec_module.from_dict(document)


def test_cool_to_without_zones_or_a_telemetry_cpu_not_ours_is_refused_before_running(tmp_path):
    out = tmp_path / "run"
    result = _agent(tmp_path / "no-sensors", "--cool-to", "50", "--out", str(out))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    no_zone = "--cool-to needs a thermal zone, and this machine has none"
    assert lines[-2] == f"evbench-agent: error: {no_zone}"
    assert lines[-1].startswith("evbench-agent: hint: run without --cool-to")
    assert not (out / "manifest.json").exists()
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps({"telemetry_cpu": os.cpu_count() + 7}))
    result = _agent(tmp_path, "--spec", str(spec_file), "--out", str(tmp_path / "run2"))
    assert result.returncode == 2
    assert "is not one this agent may run on" in result.stderr


def test_info_warns_of_the_governor_boost_hot_zones_and_busy_processes_in_json_too(tmp_path):
    board = Am62xTree(tmp_path / "sys")
    # `info` prints the warnings, and has them in its JSON (the tree as it was made).
    env = {"PATH": "/usr/bin:/bin", SYSFS_ENV: str(board.root)}
    command = [sys.executable, "-m", "evbench_agent", "info"]
    text = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert text.returncode == 0, text.stderr
    assert "evbench-agent: warning: cpufreq governor of policy0 is 'schedutil'" in text.stderr
    document = subprocess.run(
        [*command, "--json"], env=env, capture_output=True, text=True, timeout=120
    )
    warnings = json.loads(document.stdout)["warnings"]
    assert any("schedutil" in w for w in warnings)
    assert "no cpufreq" not in " ".join(warnings)
    write(board.root / "devices/system/cpu/cpufreq/boost", 1)
    board.set_zone_c(0, 98.0)  # within 10 °C of the 105 °C passive trip point
    spinner = subprocess.Popen([sys.executable, "-c", SPIN])
    try:
        # A loaded machine (the suite's workers, a CPU hog beside CI) may give the spinner
        # less than BUSY_PERCENT of a core in one 0.5 s window: look again, at most 5 times.
        for _ in range(5):
            found = noise.warnings(board.root, window_s=0.5)
            if any(f"pid {spinner.pid}," in w for w in found if "busy process" in w):
                break
    finally:
        spinner.kill()
        spinner.wait()
    assert any("governor of policy0 is 'schedutil'" in w for w in found)
    assert any("frequency boost is on" in w for w in found)
    assert any("thermal_zone0 (main0_thermal) is at 98 °C" in w for w in found)
    assert not any("thermal_zone1" in w for w in found)  # 46 °C: no warning
    busy = [w for w in found if "busy process" in w]
    assert busy and f"pid {spinner.pid}," in busy[0]
