"""The dbc codec: protos/ev_data.dbc against the .proto files, a frame packed by hand,
round trips within each signal's resolution, and bad input."""

import importlib.util
import math
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import require

from evbench_agent import codecs, payloads
from evbench_agent.link import messages
from evbench_core.errors import UserError

ROOT = Path(__file__).resolve().parents[1]
DBC = ROOT / "protos" / "ev_data.dbc"
AGENT_COPY = ROOT / "agent" / "src" / "evbench_agent" / "schema" / "ev_data.dbc"

#: Proto fields the DBC deliberately does not carry, and why.
NOT_CARRIED = {
    "evbench.frame.EvFrame": {
        "header.vin": "a 17-character string is identity, not a signal: an ECU answers it once"
        " over UDS (ReadDataByIdentifier 0xF190), it is not broadcast at 20 Hz",
    },
}


@pytest.fixture(scope="module")
def database():
    require(importlib.util.find_spec("cantools") is not None, "cantools (requirements-dev.txt)")
    import cantools

    return cantools.database.load_file(DBC, strict=True)


def _leaf_paths(descriptor, prefix=""):
    """Every scalar field path of a message type ("bms.cell_voltages", "faults.dtc")."""
    for field in descriptor.fields:
        path = f"{prefix}{field.name}"
        if field.message_type is not None:
            yield from _leaf_paths(field.message_type, f"{path}.")
        else:
            yield path


def _signals(database, full_name):
    return [s for m in database.messages if m.comment == full_name for s in m.signals]


@pytest.mark.parametrize("profile_name", ["seed", "ev-full"])
def test_every_proto_field_is_a_signal_or_listed_as_not_carried(database, profile_name):
    descriptor = payloads.get(profile_name).message_type.DESCRIPTOR
    proto = set(_leaf_paths(descriptor))
    # the field paths (indices and len() dropped) the DBC's signals carry
    signals = _signals(database, descriptor.full_name)
    paths = [s.comment for s in signals if not s.comment.startswith("len(")]
    carried = {".".join(part.split("[")[0] for part in path.split(".")) for path in paths}
    skipped = set(NOT_CARRIED.get(descriptor.full_name, {}))
    assert carried | skipped == proto, (proto - carried - skipped, carried - proto)
    assert not carried & skipped


def test_the_dbc_is_what_make_dbc_writes_the_agent_ships_it_and_imports_without_cantools(tmp_path):
    spec = importlib.util.spec_from_file_location("make_dbc", ROOT / "protos" / "make_dbc.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.render() == DBC.read_text(encoding="ascii")
    assert AGENT_COPY.read_bytes() == DBC.read_bytes()
    # the agent imports without cantools and lists dbc only where it is
    code = (
        "import sys; sys.modules['cantools'] = None\n"
        "from evbench_agent import codecs\n"
        "print('dbc' in codecs.available(), 'json' in codecs.available())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_can_fd_frames_of_the_protos_enums_and_a_seed_frame_by_hand_equal_cantools_and_codec(
    database,
):
    for message in database.messages:
        assert message.is_fd and not message.is_extended_frame and message.length <= 64
        for signal in message.signals:
            assert signal.byte_order == "little_endian"
            first, last = signal.start, signal.start + signal.length - 1
            assert first // 64 == last // 64, (message.name, signal.name)
    descriptor = payloads.get("ev-full").message_type.DESCRIPTOR
    fields = {"Contactor": "bms.contactor", "ChargerMode": "charger.mode",
              "Fault0Severity": "faults.severity"}  # fmt: skip
    for name, path in fields.items():
        part, leaf = path.split(".")
        field = descriptor.fields_by_name[part].message_type.fields_by_name[leaf]
        signal = next(s for m in database.messages for s in m.signals if s.name == name)
        expected = {value.number: value.name for value in field.enum_type.values}
        assert {int(k): str(v) for k, v in signal.choices.items()} == expected
    # SeedPacket's 64 bytes, packed here by hand (Intel: bit k of the frame is bit k % 8 of
    # byte k // 8). The DBC places signals first fit in 8-byte slots, in its table order:
    # slot 0: SoC 0..7, Throttle 8..17, Speed 18..33, Dpad 34..36, KillSwitch 37, then the
    # single flags up to 53, BatteryTemp 54..61, and ErrorCount 62..63 (the first later signal
    # small enough for slot 0's last 2 bits). Slot 1: MotorTemp 64..71, ChargingCurrent
    # 72..87. Slot 3 (bits 192..255): Odometer 192..215, GpsLat 216..247. Error0 sits in
    # slot 6 at 428..435 (after the tyre sensors' 12- and 16-bit signals).
    fields = [
        (0, 8, round(85.5 / 0.5)),  # SoC 0.5 %: 171
        (8, 10, round(29.5 / 0.1)),  # Throttle 0.1 %: 295
        (18, 16, round(23.4 / 0.01)),  # Speed 0.01 km/h: 2340
        (34, 3, 3),  # Dpad
        (37, 1, 1),  # KillSwitch
        (54, 8, 29 + 40),  # BatteryTemp, 1 degC, offset -40: 69
        (62, 2, 1),  # ErrorCount
        (72, 16, (-123) & 0xFFFF),  # ChargingCurrent 0.1 A signed: two's complement 0xFF85
        (216, 32, 130_827_000),  # GpsLat 1e-7 deg
        (428, 8, 7),  # Error0
    ]
    value = 0
    for start, bits, raw in fields:
        assert 0 <= raw < 1 << bits
        value |= raw << start
    expected = value.to_bytes(64, "little")
    assert expected[:5] == bytes([0xAB, 0x27, 0x91, 0x24, 0x2C])  # worked above, by eye
    # a seed packet whose signals are 0 raw except the ones the hand-packed frame sets
    plain = {key: 0 for key in payloads.get("seed").rename}
    plain.update(acc={"x": 0.0, "y": 0.0, "z": 0.0}, gyro={"x": 0.0, "y": 0.0, "z": 0.0})
    for key in ("battery_temp", "motor_temp", "fw_temp", "rw_temp"):
        plain[key] = -40  # offset -40: raw 0
    plain.update(battery_soc=85.5, throttle=29.5, speed=23.4, dpad=3, killsw=1, battery_temp=29.0,
                 charging_current=-12.3, gps_latitude=13.0827, errors=[7], alerts=[])  # fmt: skip
    bound = codecs.get("dbc").bind(payloads.get("seed"))
    blob = bound.encode(plain)
    # the codec's layout: CAN id 0x100 (4 bytes, big-endian), length 64, the data
    assert blob == bytes([0, 0, 1, 0, 64]) + expected
    signals = database.get_message_by_frame_id(0x100).decode(expected)
    assert database.encode_message(0x100, signals) == expected
    decoded = bound.decode(blob)
    assert decoded["charging_current"] == pytest.approx(-12.3)
    assert decoded["errors"] == [7] and decoded["alerts"] == []
    assert decoded["motor_temp"] == -40 and type(decoded["motor_temp"]) is int


def _check(expected, actual, path, resolution):
    if isinstance(expected, dict):
        for key, value in expected.items():
            if path == "" and key == "header":
                assert "vin" not in actual[key]
            if key == "vin":
                continue
            _check(value, actual[key], f"{path}{key}.", resolution)
    elif isinstance(expected, list):
        assert len(actual) == len(expected), path
        for index, value in enumerate(expected):
            _check(value, actual[index], f"{path[:-1]}[{index}].", resolution)
    elif isinstance(expected, float):
        step = resolution(path[:-1])
        assert math.isclose(actual, expected, abs_tol=step / 2 * (1 + 1e-9)), path
    else:
        assert actual == expected and type(actual) is type(expected), path


@pytest.mark.parametrize(
    ("profile_name", "rename"), [("seed", payloads.get("seed").rename), ("ev-full", {})]
)
def test_round_trip_is_within_each_signals_resolution(database, profile_name, rename):
    profile = payloads.get(profile_name)
    full_name = profile.message_type.DESCRIPTOR.full_name
    steps = {signal.comment: signal.scale for signal in _signals(database, full_name)}

    def resolution(plain_path: str) -> float:
        """The scale of the signal carrying a plain path ("gps_latitude" -> gpsLat's 1e-7)."""
        proto = []
        for part in plain_path.split("."):
            name, bracket, index = part.partition("[")
            proto.append(rename.get(name, name) + bracket + index)
        return steps[".".join(proto)]

    bound = codecs.get("dbc").bind(profile)
    json_codec = codecs.get("json").bind(profile)
    for item in profile.payloads(60):
        decoded = bound.decode(bound.encode(item.plain))
        _check(item.plain, decoded, "", resolution)
        leaves = json_codec.access(json_codec.decode(json_codec.encode(item.plain)))
        # decode_access reads every leaf as json's does, less the fields the DBC does not carry
        assert bound.access(decoded) == leaves - len(NOT_CARRIED.get(full_name, {}))


def test_the_link_carries_dbc_messages_and_acks_and_bad_input_is_a_one_line_error():
    link = messages.bind("dbc", "seed")
    data = link.sample_data(3, 1)
    blobs = [link.encode(value) for value in data]
    assert all(link.decode(blob) > 30 for blob in blobs)
    ack = link.encode_ack(2**40 + 3, 3_600 * 10**9)
    assert len(ack) == 5 + 16  # one 16-byte LinkAck frame
    assert link.decode_ack(ack) == (2**40 + 3, 3_600 * 10**9)
    # a profile the DBC does not describe is refused, and left out of "all"
    with pytest.raises(UserError, match="cannot carry profile 'int'"):
        codecs.get("dbc").bind(payloads.get("int"))
    assert "dbc" in codecs.available(["seed", "ev-full"])
    assert "dbc" not in codecs.available(["seed", "int"])
    bound = codecs.get("dbc").bind(payloads.get("ev-full"))
    item = payloads.get("ev-full").payloads(1)[0].plain
    too_many = dict(item, faults=[{"dtc": 1, "ecu_id": 2, "severity": "FAULT_SEVERITY_INFO"}] * 5)
    with pytest.raises(UserError, match="faults has 5 items, the DBC carries 4"):
        bound.encode(too_many)
    fast = dict(item, dynamics=dict(item["dynamics"], speed_kph=700.0))
    with pytest.raises(UserError, match="DynamicsCharger refuses"):
        bound.encode(fast)
    blob = bound.encode(item)
    with pytest.raises(UserError, match="claims 48 bytes"):
        bound.decode(blob[:-1])
    with pytest.raises(UserError, match="1 of 5 messages arrived"):
        bound.decode(blob[: 5 + 64])
    with pytest.raises(UserError, match="not one of this profile's messages"):
        codecs.get("dbc").bind(payloads.get("seed")).decode(blob)
