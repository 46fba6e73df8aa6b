"""Setting the cpufreq governor for a run, and putting it back afterwards.

`--governor performance` keeps the clock at its maximum, so the governor's
own ramping does not add to the spread. Writing scaling_governor needs root;
where that is refused the run goes on and the manifest says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evbench_agent.telemetry.sysfs import Sensors, read_text
from evbench_core.errors import UserError


class GovernorSetting:
    """set() before the run, restore() after it; `actions` records what happened."""

    def __init__(self, sensors: Sensors, governor: str) -> None:
        self.sensors = sensors
        self.governor = governor
        self.actions: list[dict[str, Any]] = []
        self._changed: list[tuple[Path, str]] = []

    def check(self) -> None:
        """Refuse a governor no policy offers, before anything runs."""
        for policy in self.sensors.cpufreq:
            path = Path(policy.path) / "scaling_available_governors"
            try:
                available = read_text(path).split()
            except OSError:
                continue
            if self.governor not in available:
                raise UserError(
                    f"cpufreq governor {self.governor!r} is not available on "
                    f"{Path(policy.path).name}",
                    hint=f"available: {', '.join(available)}",
                )

    def set(self) -> None:
        if not self.sensors.cpufreq:
            self.actions.append({"action": "none", "reason": "no cpufreq on this machine"})
            return
        for policy in self.sensors.cpufreq:
            path = Path(policy.path) / "scaling_governor"
            name = path.parent.name
            try:
                before = read_text(path)
                if before != self.governor:
                    path.write_text(self.governor + "\n", encoding="ascii")
                    self._changed.append((path, before))
                self.actions.append(
                    {"policy": name, "action": "set", "from": before, "to": self.governor}
                )
            except OSError as error:
                self.actions.append(
                    {"policy": name, "action": "not permitted", "error": error.strerror}
                )

    def restore(self) -> None:
        while self._changed:
            path, before = self._changed.pop()
            try:
                path.write_text(before + "\n", encoding="ascii")
                self.actions.append(
                    {"policy": path.parent.name, "action": "restored", "to": before}
                )
            except OSError as error:
                self.actions.append(
                    {
                        "policy": path.parent.name,
                        "action": "restore failed",
                        "error": error.strerror,
                    }
                )
