"""EvFrame: a modern EV gateway frame with values at real sensor resolution.

Readings are rounded to the resolution an ECU puts on the bus (1 mV for cell
voltages, 0.5 degC for cell temperatures, 0.1 A for currents, ...), because
that is what the JSON-family codecs print: "3.712", not "3.7119998931884766".
"""

from __future__ import annotations

import random
from typing import Any

from evbench_agent.payloads.profile import Profile
from evbench_agent.schema import ev_frame_pb2

CELLS = 96
CELL_SENSORS = 24
VIN = "WDD2050041F000042"
GATEWAY_ECU = 0x18
#: 2025-11-24T16:00:00Z, so that timestamps look like real ones.
EPOCH_NS = 1_764_000_000_000_000_000
PERIOD_NS = 50_000_000


def _step(value: float, resolution: float) -> float:
    """`value` rounded to a multiple of `resolution`, printed as an ECU would."""
    digits = max(0, -int(f"{resolution:e}".split("e")[1]))
    return round(round(value / resolution) * resolution, digits)


def generate(rng: random.Random, index: int) -> dict[str, Any]:
    u = rng.uniform
    cells = [_step(u(3.60, 3.95), 0.001) for _ in range(CELLS)]
    charging = rng.random() < 0.2
    current = _step(u(-120.0, -5.0) if charging else u(-20.0, 280.0), 0.1)
    faults = [
        {
            "dtc": rng.randrange(1 << 24),
            "ecu_id": rng.choice((0x10, 0x18, 0x20, 0x28)),
            "severity": rng.choice(
                ("FAULT_SEVERITY_INFO", "FAULT_SEVERITY_WARNING", "FAULT_SEVERITY_CRITICAL")
            ),
        }
        for _ in range(rng.choice((0, 0, 0, 1, 1, 2, 3)))
    ]
    return {
        "header": {
            "timestamp_ns": EPOCH_NS + index * PERIOD_NS + rng.randrange(100_000),
            "sequence": index,
            "vin": VIN,
            "ecu_id": GATEWAY_ECU,
        },
        "bms": {
            "cell_voltages": cells,
            "cell_temperatures": [_step(u(24.0, 38.0), 0.5) for _ in range(CELL_SENSORS)],
            "soc": _step(u(20.0, 95.0), 0.1),
            "soh": _step(u(88.0, 99.5), 0.1),
            "pack_voltage": _step(sum(cells), 0.1),
            "pack_current": current,
            "contactor": "CONTACTOR_STATE_CLOSED",
        },
        "inverter": {
            "motor_rpm": 0 if charging else rng.randrange(-500, 12000),
            "torque_nm": 0.0 if charging else _step(u(-80.0, 320.0), 0.1),
            "phase_current_a": 0.0 if charging else _step(u(0.0, 450.0), 0.1),
            "dc_bus_voltage": _step(u(340.0, 380.0), 0.1),
            "inverter_temp_c": float(rng.randrange(30, 75)),
            "motor_temp_c": float(rng.randrange(35, 110)),
        },
        "dynamics": {
            "speed_kph": 0.0 if charging else _step(u(0.0, 130.0), 0.01),
            "accel_x": _step(u(-3.0, 3.0), 0.01),
            "accel_y": _step(u(-2.0, 2.0), 0.01),
            "accel_z": _step(u(9.6, 10.0), 0.01),
            "yaw_rate": _step(u(-30.0, 30.0), 0.01),
            "steering_angle": _step(u(-45.0, 45.0), 0.1),
            "latitude": _step(48.7758 + u(-0.05, 0.05), 1e-7),
            "longitude": _step(9.1829 + u(-0.05, 0.05), 1e-7),
        },
        "charger": {
            "plugged_in": charging,
            "mode": "CHARGER_MODE_DC" if charging else "CHARGER_MODE_UNSPECIFIED",
            "voltage": _step(u(350.0, 400.0), 0.1) if charging else 0.0,
            "current": -current if charging else 0.0,
            "power_kw": _step(-current * 0.37, 0.01) if charging else 0.0,
        },
        "faults": faults,
    }


PROFILE = Profile(
    name="ev-full",
    description="EvFrame: BMS with 96 cells, inverter, dynamics, charger, faults",
    message_type=ev_frame_pb2.EvFrame,
    generate=generate,
)
