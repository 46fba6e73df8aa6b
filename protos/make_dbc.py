"""Write ev_data.dbc: the seed packet, EvFrame and the link's ack as CAN FD signals.

The signal table below is the design (resolution, range, which proto field a
signal carries); this script only lays it out. Signals are little-endian
(Intel), placed first fit in table order, never across an 8-byte boundary, so each
64-byte CAN FD message is also a run of 8-byte classic CAN frames carrying the
same signals. Each message's comment names the protobuf message it carries and
each signal's comment the field path inside it (`len(path)` for a list's count);
the agent's dbc codec and tests/test_dbc.py read those comments.

    python protos/make_dbc.py            # rewrites protos/ev_data.dbc and the agent's copy
"""

from __future__ import annotations

import argparse
from pathlib import Path

PROTO_DIR = Path(__file__).resolve().parent
OUTPUTS = (
    PROTO_DIR / "ev_data.dbc",
    PROTO_DIR.parent / "agent" / "src" / "evbench_agent" / "schema" / "ev_data.dbc",
)
#: CAN FD data lengths (ISO 11898-1:2015): a message takes the smallest that holds it.
FD_LENGTHS = (0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 20, 24, 32, 48, 64)

CONTACTOR = {0: "UNSPECIFIED", 1: "OPEN", 2: "PRECHARGE", 3: "CLOSED", 4: "WELDED"}
CHARGER_MODE = {0: "UNSPECIFIED", 1: "AC", 2: "DC"}
SEVERITY = {0: "UNSPECIFIED", 1: "INFO", 2: "WARNING", 3: "CRITICAL"}


def sig(
    name: str,
    path: str,
    bits: int,
    factor: float = 1,
    offset: float = 0,
    unit: str = "",
    signed: bool = False,
    choices: dict[int, str] | None = None,
    prefix: str = "",
) -> tuple:
    """One signal: name, carried field path, width, scaling, unit, value table."""
    if choices is not None:
        choices = {number: f"{prefix}{label}" for number, label in choices.items()}
    return (name, path, bits, factor, offset, unit, signed, choices)


def _seed() -> list[tuple]:
    flags = [
        ("dpad", 3),
        ("killSwitch", 1),
        ("lightBeam", 1),
        ("indicators", 2),
        ("sideStand", 1),
        ("absIndication", 1),
        ("modeStatus", 2),
        ("motorStatus", 1),
        ("pduState", 1),
        ("chargingState", 2),
        ("eslState", 1),
        ("brakeStatus", 1),
        ("regenLevel", 2),
        ("chargingModeAC", 1),
    ]
    signals = [
        sig("SoC", "battery", 8, 0.5, 0, "%"),
        sig("Throttle", "throttle", 10, 0.1, 0, "%"),
        sig("Speed", "speed", 16, 0.01, 0, "km/h"),
        *(sig(name[0].upper() + name[1:], name, bits) for name, bits in flags),
        sig("BatteryTemp", "batteryTemp", 8, 1, -40, "degC"),
        sig("MotorTemp", "motorTemp", 8, 1, -40, "degC"),
        sig("ChargingCurrent", "chargingCurrent", 16, 0.1, 0, "A", signed=True),
        sig("ChargingVoltage", "chargingVoltage", 16, 0.1, 0, "V"),
        sig("BatteryVoltage", "batteryVoltage", 16, 0.1, 0, "V"),
        sig("MotorTorque", "motorTorque", 16, 1, 0, "Nm", signed=True),
        sig("Consumption", "whpkm", 16, 0.1, 0, "Wh/km"),
        sig("TripA", "tripA", 16, 0.1, 0, "km"),
        sig("Odometer", "odometer", 24, 0.1, 0, "km"),
        sig("GpsLat", "gpsLat", 32, 1e-7, 0, "deg", signed=True),
        sig("GpsLng", "gpsLng", 32, 1e-7, 0, "deg", signed=True),
        *(
            sig(f"{name}{axis.upper()}", f"{field}.{axis}", 16, 0.01, 0, unit, signed=True)
            for name, field, unit in (("Acc", "acc", "m/s2"), ("Gyro", "gyro", "deg/s"))
            for axis in "xyz"
        ),
        sig("PressureFW", "pressureFW", 12, 0.1, 0, "psi"),
        sig("PressureRW", "pressureRW", 12, 0.1, 0, "psi"),
        sig("TempFW", "tempFW", 8, 1, -40, "degC"),
        sig("TempRW", "tempRW", 8, 1, -40, "degC"),
        sig("SensorBatteryFW", "batteryFW", 16, 0.001, 0, "V"),
        sig("SensorBatteryRW", "batteryRW", 16, 0.001, 0, "V"),
        sig("ErrorCount", "len(errors)", 2),
        sig("AlertCount", "len(alerts)", 2),
        *(sig(f"Error{i}", f"errors[{i}]", 8) for i in range(3)),
        *(sig(f"Alert{i}", f"alerts[{i}]", 8) for i in range(3)),
    ]
    return [("SeedPacket", 0x100, "evbench.seed.BackendDataPacket", signals)]


def _ev_frame() -> list[tuple]:
    name = "evbench.frame.EvFrame"
    cells = [
        (
            f"BmsCells{block + 1}",
            0x200 + block,
            name,
            [
                sig(f"CellVoltage{i + 1:02d}", f"bms.cell_voltages[{i}]", 16, 0.001, 0, "V")
                for i in range(block * 32, block * 32 + 32)
            ],
        )
        for block in range(3)
    ]
    status = [
        sig("Soc", "bms.soc", 10, 0.1, 0, "%"),
        sig("Soh", "bms.soh", 10, 0.1, 0, "%"),
        sig("Contactor", "bms.contactor", 3, choices=CONTACTOR, prefix="CONTACTOR_STATE_"),
        sig("PackVoltage", "bms.pack_voltage", 16, 0.1, 0, "V"),
        sig("PackCurrent", "bms.pack_current", 16, 0.1, 0, "A", signed=True),
        *(
            sig(f"CellTemp{i + 1:02d}", f"bms.cell_temperatures[{i}]", 8, 0.5, -40, "degC")
            for i in range(24)
        ),
        sig("MotorRpm", "inverter.motor_rpm", 16, 1, 0, "rpm", signed=True),
        sig("Torque", "inverter.torque_nm", 16, 0.1, 0, "Nm", signed=True),
        sig("PhaseCurrent", "inverter.phase_current_a", 16, 0.1, 0, "A", signed=True),
        sig("DcBusVoltage", "inverter.dc_bus_voltage", 16, 0.1, 0, "V"),
        sig("InverterTemp", "inverter.inverter_temp_c", 8, 1, -40, "degC"),
        sig("MotorTemp", "inverter.motor_temp_c", 8, 1, -40, "degC"),
        sig("TimestampNs", "header.timestamp_ns", 64, 1, 0, "ns"),
        sig("Sequence", "header.sequence", 32),
        sig("EcuId", "header.ecu_id", 8),
    ]
    motion = [
        sig("Speed", "dynamics.speed_kph", 16, 0.01, 0, "km/h"),
        sig("AccelX", "dynamics.accel_x", 16, 0.01, 0, "m/s2", signed=True),
        sig("AccelY", "dynamics.accel_y", 16, 0.01, 0, "m/s2", signed=True),
        sig("AccelZ", "dynamics.accel_z", 16, 0.01, 0, "m/s2", signed=True),
        sig("YawRate", "dynamics.yaw_rate", 16, 0.01, 0, "deg/s", signed=True),
        sig("SteeringAngle", "dynamics.steering_angle", 16, 0.1, 0, "deg", signed=True),
        sig("Latitude", "dynamics.latitude", 32, 1e-7, 0, "deg", signed=True),
        sig("Longitude", "dynamics.longitude", 32, 1e-7, 0, "deg", signed=True),
        sig("PluggedIn", "charger.plugged_in", 1),
        sig("ChargerMode", "charger.mode", 2, choices=CHARGER_MODE, prefix="CHARGER_MODE_"),
        sig("ChargerVoltage", "charger.voltage", 16, 0.1, 0, "V"),
        sig("ChargerCurrent", "charger.current", 16, 0.1, 0, "A", signed=True),
        sig("ChargerPower", "charger.power_kw", 16, 0.01, 0, "kW"),
        sig("FaultCount", "len(faults)", 3),
        *(
            part
            for i in range(4)
            for part in (
                sig(f"Fault{i}Dtc", f"faults[{i}].dtc", 24),
                sig(f"Fault{i}Ecu", f"faults[{i}].ecu_id", 8),
                sig(
                    f"Fault{i}Severity",
                    f"faults[{i}].severity",
                    2,
                    choices=SEVERITY,
                    prefix="FAULT_SEVERITY_",
                ),
            )
        ),
    ]
    return [*cells, ("BmsInverter", 0x203, name, status), ("DynamicsCharger", 0x204, name, motion)]


def _ack() -> list[tuple]:
    signals = [sig("Sequence", "sequence", 64), sig("ReceiveNs", "receive_ns", 64, unit="ns")]
    return [("LinkAck", 0x7F0, "evbench.link.Ack", signals)]


MESSAGES = [*_seed(), *_ev_frame(), *_ack()]


def _layout(signals: list[tuple]) -> tuple[list[tuple[int, tuple]], int]:
    """Start bits, little-endian, first fit into 8-byte slots (no signal crosses one);
    and the bits the message needs (up to the last used bit)."""
    placed, filled = [], []  # bits used in each 8-byte slot
    for signal in signals:
        bits = signal[2]
        slot = next((i for i, used in enumerate(filled) if used + bits <= 64), len(filled))
        if slot == len(filled):
            filled.append(0)
        placed.append((slot * 64 + filled[slot], signal))
        filled[slot] += bits
    return placed, max(start + signal[2] for start, signal in placed)


def _number(value: float) -> str:
    if isinstance(value, int):
        return str(value)  # exact: 64-bit counters keep every digit
    return f"{value:.10g}"


def _range(bits: int, factor: float, offset: float, signed: bool) -> tuple[str, str]:
    low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    return _number(low * factor + offset), _number(high * factor + offset)


def render() -> str:
    lines = [
        'VERSION "evbench 1"',
        "",
        "NS_ :",
        "",
        "BS_:",
        "",
        "BU_: EVBENCH",
        "",
    ]
    comments, tables = [], []
    for name, frame_id, proto, signals in MESSAGES:
        placed, used = _layout(signals)
        length = next(n for n in FD_LENGTHS if n * 8 >= used)
        if length > 64:
            raise SystemExit(f"{name}: {used} bits do not fit 64 bytes")
        lines.append(f"BO_ {frame_id} {name}: {length} EVBENCH")
        comments.append(f'CM_ BO_ {frame_id} "{proto}";')
        for start, (sname, path, bits, factor, offset, unit, signed, choices) in placed:
            low, high = _range(bits, factor, offset, signed)
            sign = "-" if signed else "+"
            lines.append(
                f" SG_ {sname} : {start}|{bits}@1{sign} ({_number(factor)},{_number(offset)})"
                f' [{low}|{high}] "{unit}" Vector__XXX'
            )
            comments.append(f'CM_ SG_ {frame_id} {sname} "{path}";')
            if choices:
                values = " ".join(f'{number} "{label}"' for number, label in choices.items())
                tables.append(f"VAL_ {frame_id} {sname} {values} ;")
        lines.append("")
    lines += [
        'BA_DEF_  "BusType" STRING ;',
        'BA_DEF_ BO_  "VFrameFormat" ENUM  "StandardCAN","ExtendedCAN","StandardCAN_FD",'
        '"ExtendedCAN_FD";',
        'BA_DEF_DEF_  "BusType" "CAN FD";',
        'BA_DEF_DEF_  "VFrameFormat" "StandardCAN_FD";',
        'BA_ "BusType" "CAN FD";',
        *(f'BA_ "VFrameFormat" BO_ {frame_id} 2;' for _, frame_id, _, _ in MESSAGES),
        "",
        *comments,
        "",
        *tables,
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
    text = render()
    for path in OUTPUTS:
        path.write_text(text, encoding="ascii")
        print(path)


if __name__ == "__main__":
    main()
