"""Payload profiles: the seed's shape and sizes, determinism, realistic EV frames."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from evbench_agent import payloads
from evbench_agent.payloads.profiles import seed
from evbench_core.errors import UserError

GOLDEN_KEYS = Path(__file__).parent / "data" / "seed_json_keys.txt"
#: The seed app's averages on the AM62x and Windows (README of the seed).
SEED_PROTOBUF_BYTES = 276.8
SEED_JSON_BYTES = 995.2


def _golden_keys() -> list[str]:
    lines = GOLDEN_KEYS.read_text().splitlines()
    return [line for line in lines if line and not line.startswith("#")]


def test_seed_json_keys_match_the_seed_app_in_order():
    plain = payloads.get("seed").payloads(1)[0].plain
    assert list(plain) == _golden_keys()
    assert list(seed.JSON_KEYS) == _golden_keys()


def test_seed_sizes_land_within_3_percent_of_the_seed_app_and_values_in_its_ranges():
    items = payloads.get("seed").payloads()
    protobuf = statistics.fmean(len(item.message.SerializeToString()) for item in items)
    as_json = statistics.fmean(
        len(json.dumps(item.plain, separators=(",", ":")).encode()) for item in items
    )
    assert protobuf == pytest.approx(SEED_PROTOBUF_BYTES, rel=0.03)
    assert as_json == pytest.approx(SEED_JSON_BYTES, rel=0.03)
    for plain in (item.plain for item in items):
        assert 84.5 <= plain["battery_soc"] <= 86.5
        assert 13.0827 <= plain["gps_latitude"] <= 13.1827
        assert 80.2707 <= plain["gps_longitude"] <= 80.3707
        assert len(plain["alerts"]) in (0, 1) and len(plain["errors"]) in (0, 1)
        assert 45 <= plain["motor_temp"] < 65


def test_seed_zeros_are_written_like_the_dart_library():
    # Explicit presence: a set zero is on the wire, as the seed's Dart code sends it.
    profile = payloads.get("seed")
    plain = dict(profile.payloads(1)[0].plain, dpad=0, killsw=0)
    message = profile.to_message(plain)
    assert message.HasField("dpad") and message.HasField("killSwitch")
    decoded = type(message).FromString(message.SerializeToString())
    assert decoded.HasField("dpad") and decoded.dpad == 0


@pytest.mark.parametrize("name", list(payloads.PROFILES))
def test_profiles_are_deterministic(name):
    profile = payloads.get(name)
    first = [p.message.SerializeToString(deterministic=True) for p in profile.payloads(5, 3)]
    again = [p.message.SerializeToString(deterministic=True) for p in profile.payloads(5, 3)]
    other_seed = [p.message.SerializeToString(deterministic=True) for p in profile.payloads(5, 4)]
    assert first == again
    assert first != other_seed


def test_ev_full_frame_has_the_promised_content_at_sensor_resolution():
    frame = payloads.get("ev-full").payloads(20)
    for index, item in enumerate(frame):
        bms = item.plain["bms"]
        assert len(bms["cell_voltages"]) == 96 and len(bms["cell_temperatures"]) == 24
        assert all(round(v, 3) == v for v in bms["cell_voltages"])
        assert all(round(t * 2) / 2 == t for t in bms["cell_temperatures"])
        assert len(item.plain["header"]["vin"]) == 17
        assert item.message.header.sequence == index
        assert item.message.bms.contactor == 3  # CONTACTOR_STATE_CLOSED
    # The JSON form prints readings at their resolution, not float32 noise.
    text = json.dumps(frame[0].plain)
    assert "99999" not in text and "00000001" not in text


@pytest.mark.parametrize(
    ("name", "check"),
    [
        ("long-string", lambda p: len(p["text"]) == 160),
        ("int-list", lambda p: len(p["values"]) == 16),
        ("double-array", lambda p: len(p["values"]) == 10),
        ("object-list", lambda p: len(p["items"]) == 16 and set(p["items"][0]) == {"name"}),
        ("ten-ints", lambda p: len(p) == 10),
        ("skip-flat", lambda p: len(p) == 15 and "last" in p),
        ("skip-nested", lambda p: len(p) == 15 and isinstance(p["s1"], dict)),
    ],
)
def test_java_study_shapes(name, check):
    assert check(payloads.get(name).payloads(1)[0].plain)


def test_unknown_profile_names_the_available_ones():
    with pytest.raises(UserError) as caught:
        payloads.get("nope")
    assert "seed" in caught.value.hint and "ev-full" in caught.value.hint
