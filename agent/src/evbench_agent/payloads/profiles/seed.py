"""The seed app's packet: its value ranges and its hand-built JSON map.

Ranges follow `_generateEvData` in the seed's lib/main.dart; the plain form is
its `_evDataToJson` map, with the same snake_case keys in the same order.
"""

from __future__ import annotations

import random
from typing import Any

from evbench_agent.payloads.profile import Profile
from evbench_agent.schema import ev_data_pb2

#: The seed's JSON key -> protobuf field name, in the seed's key order.
JSON_KEYS = {
    "battery_soc": "battery",
    "throttle": "throttle",
    "speed": "speed",
    "dpad": "dpad",
    "killsw": "killSwitch",
    "highbeam": "lightBeam",
    "indicators": "indicators",
    "sidestand": "sideStand",
    "abs_warning": "absIndication",
    "drivemode": "modeStatus",
    "motor_status": "motorStatus",
    "pdu_state": "pduState",
    "charging_state": "chargingState",
    "esl_state": "eslState",
    "brake_status": "brakeStatus",
    "battery_temp": "batteryTemp",
    "charging_current": "chargingCurrent",
    "charging_voltage": "chargingVoltage",
    "gps_latitude": "gpsLat",
    "gps_longitude": "gpsLng",
    "acc": "acc",
    "gyro": "gyro",
    "odometer": "odometer",
    "trip_a": "tripA",
    "regen_level": "regenLevel",
    "whp_km": "whpkm",
    "motor_temp": "motorTemp",
    "charging_mode_ac": "chargingModeAC",
    "battery_voltage": "batteryVoltage",
    "motor_torque": "motorTorque",
    "alerts": "alerts",
    "errors": "errors",
    "fw_pressure": "pressureFW",
    "rw_pressure": "pressureRW",
    "fw_temp": "tempFW",
    "rw_temp": "tempRW",
    "fw_battery": "batteryFW",
    "rw_battery": "batteryRW",
}


def generate(rng: random.Random, index: int) -> dict[str, Any]:
    """One packet, with the seed's distributions (Dart's nextDouble and nextInt)."""
    d = rng.random

    def n(bound: int) -> int:
        return rng.randrange(bound)

    return {
        "battery_soc": 85.5 + d() * 2 - 1,
        "throttle": d() * 100,
        "speed": d() * 120,
        "dpad": n(5),
        "killsw": n(2),
        "highbeam": n(2),
        "indicators": n(3),
        "sidestand": n(2),
        "abs_warning": n(2),
        "drivemode": n(4),
        "motor_status": n(2),
        "pdu_state": n(2),
        "charging_state": n(3),
        "esl_state": n(2),
        "brake_status": n(2),
        "battery_temp": 25.0 + d() * 10 - 5,
        "charging_current": d() * 15,
        "charging_voltage": d() * 5,
        "gps_latitude": 13.0827 + d() * 0.1,
        "gps_longitude": 80.2707 + d() * 0.1,
        "acc": {"x": d(), "y": d(), "z": 9.8 + d() * 0.5},
        "gyro": {"x": d(), "y": d(), "z": d()},
        "odometer": 12345.6 + d() * 100,
        "trip_a": 123.4 + d() * 10,
        "regen_level": n(4),
        "whp_km": 150 + d() * 20,
        "motor_temp": 45 + n(20),
        "charging_mode_ac": n(2),
        "battery_voltage": 400.0 + d() * 20 - 10,
        "motor_torque": n(100),
        "alerts": [n(10)] if d() < 0.5 else [],
        "errors": [n(20)] if d() < 0.5 else [],
        "fw_pressure": 32.0 + d() * 2,
        "rw_pressure": 32.0 + d() * 2,
        "fw_temp": 30.0 + d() * 5,
        "rw_temp": 30.0 + d() * 5,
        "fw_battery": 3.0 + d() * 0.2,
        "rw_battery": 3.0 + d() * 0.2,
    }


PROFILE = Profile(
    name="seed",
    description="the seed app's BackendDataPacket and its snake_case JSON map",
    message_type=ev_data_pb2.BackendDataPacket,
    generate=generate,
    rename=JSON_KEYS,
)
