"""A sysfs tree like a TI AM62x starter kit's, read by the telemetry code exactly as /sys: two
K3 thermal zones (105 °C passive, 125 °C critical trip points), the cpufreq cooling device,
one cpufreq policy for four Cortex-A53 cores (200 MHz to 1.4 GHz), an INA226-style power
monitor (µW, mA, mV) and an INA219-style one (current and voltage only). `sampling` runs
the real sampler process on such a tree."""

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

from evbench_agent.progress import Progress
from evbench_agent.telemetry import phase_records, sysfs
from evbench_agent.telemetry.sampler import SamplerProcess
from evbench_agent.telemetry.timeline import Timeline

INTERVAL_S = 0.1


def write(path: Path, value: object) -> None:
    """Replace the file whole: the kernel's attributes are never seen half-written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.new")
    temporary.write_text(f"{value}\n", encoding="ascii")
    temporary.replace(path)


class Am62xTree:
    def __init__(self, root: Path) -> None:
        self.root = root
        thermal = root / "class/thermal"
        for index, name in enumerate(("main0_thermal", "main1_thermal")):
            zone = thermal / f"thermal_zone{index}"
            write(zone / "type", name)
            write(zone / "temp", 45000 + 1000 * index)
            write(zone / "mode", "enabled")
            write(zone / "trip_point_0_type", "passive")
            write(zone / "trip_point_0_temp", 105000)
            write(zone / "trip_point_1_type", "critical")
            write(zone / "trip_point_1_temp", 125000)
        cooling = thermal / "cooling_device0"
        write(cooling / "type", "cpufreq-cpu0")
        write(cooling / "max_state", 3)
        write(cooling / "cur_state", 0)
        cpu = root / "devices/system/cpu"
        policy = cpu / "cpufreq/policy0"
        for name, value in (
            ("cpuinfo_min_freq", 200000), ("cpuinfo_max_freq", 1400000),
            ("scaling_min_freq", 200000), ("scaling_max_freq", 1400000),
            ("scaling_cur_freq", 1250000), ("scaling_governor", "schedutil"),
            ("scaling_available_governors", "ondemand userspace performance schedutil"),
            ("related_cpus", "0 1 2 3"),
        ):  # fmt: skip
            write(policy / name, value)
        for core in range(4):
            (cpu / f"cpu{core}").mkdir(parents=True)
            (cpu / f"cpu{core}/cpufreq").symlink_to("../cpufreq/policy0")
        hwmon = root / "class/hwmon"
        ina226 = hwmon / "hwmon0"
        write(ina226 / "name", "ina226")
        write(ina226 / "in0_input", 2)  # shunt voltage, mV
        write(ina226 / "in1_input", 5000)  # bus voltage, mV
        write(ina226 / "curr1_input", 200)  # mA
        write(ina226 / "power1_input", 1000000)  # µW
        ina219 = hwmon / "hwmon1"
        write(ina219 / "name", "ina219")
        write(ina219 / "in1_input", 3300)
        write(ina219 / "curr1_input", 100)

    # setters for what the board would do during a run
    def set_zone_c(self, index: int, celsius: float) -> None:
        write(self.root / f"class/thermal/thermal_zone{index}/temp", int(celsius * 1000))

    def set_scaling_max_khz(self, khz: int) -> None:
        write(self.root / "devices/system/cpu/cpufreq/policy0/scaling_max_freq", khz)

    def set_cooling_state(self, state: int) -> None:
        write(self.root / "class/thermal/cooling_device0/cur_state", state)

    def set_power_w(self, watts: float) -> None:
        """The INA226's power; the INA219 rail is left as it is (0.33 W)."""
        write(self.root / "class/hwmon/hwmon0/power1_input", int(watts * 1e6))

    @property
    def governor_file(self) -> Path:
        return self.root / "devices/system/cpu/cpufreq/policy0/scaling_governor"


class RecordingProgress(Progress):
    """The progress interface, keeping the messages a person would see."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def message(self, text: str) -> None:
        self.messages.append(text)


def wait_for_samples(
    path: Path, count: int, timeout_s: float = 20.0, since_ns: int = 0
) -> list[dict]:
    """The samples written, once `count` of them were taken at `since_ns` or later."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists():
            samples = phase_records.read_telemetry(path)[1]
            if sum(sample["t_ns"] >= since_ns for sample in samples) >= count:
                return samples
        time.sleep(INTERVAL_S / 2)
    raise AssertionError(f"the sampler wrote fewer than {count} samples in {timeout_s} s")


@contextlib.contextmanager
def sampling(root: Path, tmp_path: Path) -> Iterator[tuple[Path, Timeline]]:
    """The real sampler process on the sensors under `root`, and a timeline to mark phases
    on: (its telemetry.jsonl, the timeline). On the way out the sampler must stop cleanly."""
    telemetry = tmp_path / "telemetry.jsonl"
    sampler = SamplerProcess(sysfs.discover(root), telemetry, INTERVAL_S, cpu=None)
    timeline = Timeline(tmp_path)
    sampler.start()
    try:
        yield telemetry, timeline
    finally:
        assert sampler.stop() == 0
        timeline.close()
