"""Payload profiles and codecs: the seed's shape and sizes, realistic EV frames, every
profile deterministic, and every installed codec round-tripping every profile."""

import json
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from test_decode_access import _leaves

from evbench_agent import codecs, payloads
from evbench_agent.payloads.profiles import seed
from evbench_core.errors import UserError

#: float32 keeps 24 significant bits: a value read back differs by at most this ratio.
FLOAT32_RELATIVE = 2.0**-23

ALL_CODECS = list(codecs.CODECS)
#: dbc packs values at each signal's resolution, only for the profiles its DBC describes,
#: and leaves the VIN out: tests/test_dbc.py checks it within resolution.
EXACT_CODECS = [name for name in ALL_CODECS if name != "dbc"]
PROFILES = list(payloads.PROFILES)
GOLDEN_KEYS = Path(__file__).parent / "data" / "seed_json_keys.txt"
#: The seed app's averages on the AM62x and Windows (README of the seed).
SEED_PROTOBUF_BYTES, SEED_JSON_BYTES = 276.8, 995.2


def _same(expected, actual, rel: float) -> bool:
    if isinstance(expected, float) or isinstance(actual, float):
        return math.isclose(expected, actual, rel_tol=rel, abs_tol=0.0)
    if isinstance(expected, dict):
        return expected.keys() == actual.keys() and all(
            _same(expected[k], actual[k], rel) for k in expected
        )
    if isinstance(expected, list):
        return len(expected) == len(actual) and all(
            _same(e, a, rel) for e, a in zip(expected, actual, strict=True)
        )
    return expected == actual and type(expected) is type(actual)


def test_the_seed_matches_the_seed_app_in_sizes_ranges_json_key_order_and_zeros():
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
    # seed JSON keys match the seed app's, in order; zeros are written as Dart writes them
    lines = GOLDEN_KEYS.read_text().splitlines()
    golden = [line for line in lines if line and not line.startswith("#")]
    profile = payloads.get("seed")
    assert list(profile.payloads(1)[0].plain) == golden
    assert list(seed.JSON_KEYS) == golden
    # Explicit presence: a set zero is on the wire, as the seed's Dart code sends it.
    plain = dict(profile.payloads(1)[0].plain, dpad=0, killsw=0)
    message = profile.to_message(plain)
    assert message.HasField("dpad") and message.HasField("killSwitch")
    decoded = type(message).FromString(message.SerializeToString())
    assert decoded.HasField("dpad") and decoded.dpad == 0


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
    # protobuf-json prints fields without presence
    profile = payloads.get("ev-full")
    item = next(p for p in profile.payloads(50) if not p.plain["charger"]["plugged_in"])
    text = codecs.get("protobuf-json").bind(profile).encode(item.message).decode()
    assert '"pluggedIn":false' in text  # a default value, printed as the JSON codecs do


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


@pytest.mark.parametrize("profile_name", PROFILES)
@pytest.mark.parametrize("codec_name", EXACT_CODECS)
def test_round_trip_keeps_every_value_and_decode_access_reads_every_leaf(codec_name, profile_name):
    profile = payloads.get(profile_name)
    bound = codecs.get(codec_name).bind(profile)
    for item in profile.payloads(25):
        blob = bound.encode(bound.data(item))
        assert isinstance(blob, bytes) and blob
        decoded = bound.decode(blob)
        if bound.carries == codecs.MESSAGE:
            assert decoded == item.message  # exact: the message's own field types
        else:
            assert _same(item.plain, decoded, rel=0.0)  # doubles survive exactly
        # every leaf of the plain data, or the one value the skipping profiles' reader
        # needs (their last field), whatever the codec decoded to
        skipping = profile_name in ("skip-flat", "skip-nested")
        assert bound.access(decoded) == (1 if skipping else _leaves(item.plain))


@pytest.mark.parametrize("profile_name", PROFILES)
def test_a_profile_is_deterministic_and_its_forms_agree(profile_name):
    profile = payloads.get(profile_name)
    first = [p.message.SerializeToString(deterministic=True) for p in profile.payloads(5, 3)]
    again = [p.message.SerializeToString(deterministic=True) for p in profile.payloads(5, 3)]
    other_seed = [p.message.SerializeToString(deterministic=True) for p in profile.payloads(5, 4)]
    assert first == again
    assert first != other_seed
    # The protobuf message may store readings as float32 (ev-full): equal within it.
    for item in profile.payloads(25):
        assert _same(item.plain, profile.to_plain(item.message), rel=FLOAT32_RELATIVE)


def test_every_codec_is_here_an_aa_copy_is_itself_and_bad_ones_are_refused_naming_it(monkeypatch):
    # The always present ones, and agent[fast]'s: the test environment installs them all.
    assert {"protobuf", "json", "protobuf-json"} <= set(codecs.available()) == set(ALL_CODECS)
    assert codecs.protobuf_backend() in ("upb", "cpp", "python")
    with pytest.raises(UserError, match="unknown codec 'nope'"):
        codecs.get("nope")
    missing = codecs.Codec("ghost", "evbench_ghost", "ghost", codecs.PLAIN, "", None, yocto=None)
    monkeypatch.setitem(codecs.CODECS, "ghost", missing)
    with pytest.raises(UserError, match="not installed") as caught:
        codecs.get("ghost")
    assert "json" in caught.value.hint
    with pytest.raises(UserError) as caught:
        payloads.get("nope")
    assert "seed" in caught.value.hint and "ev-full" in caught.value.hint
    # A stray module of the library's name (no real broken library can be installed here):
    # json has no packb, as the leftover below had none.
    bind = lambda module, _profile: (module.packb, module.unpackb)  # noqa: E731
    stray = codecs.Codec("stray", "json", "stray-dist", codecs.PLAIN, "", bind, yocto=None)
    monkeypatch.setitem(codecs.CODECS, "stray", stray)
    with pytest.raises(UserError, match=r"^codec 'stray' cannot be used here: AttributeError"):
        codecs.get("stray").bind(payloads.get("seed"))
    # an A/A copy is the same codec under its own name
    profile = payloads.get("seed")
    (item,) = profile.payloads(1, 7)
    original, copy = codecs.get("json"), codecs.get("json-aa")
    assert copy.name == "json-aa" and original.name == "json"
    bound, bound_copy = original.bind(profile), copy.bind(profile)
    assert bound_copy.encode(item.plain) == bound.encode(item.plain)
    # The same code, no wrapper (json's encode is a closure per binding, decode is
    # json.loads itself): nothing but the order can favour either name.
    assert bound_copy.encode.__code__ is bound.encode.__code__
    assert bound_copy.decode is bound.decode and bound_copy.access is bound.access
    assert codecs.original_name("protobuf-aa") == "protobuf"
    # a real codec whose name merely ends alike is left alone; so is an unknown original
    assert codecs.original_name("msgspec-json") == "msgspec-json"
    assert codecs.original_name("scratch-aa") == "scratch-aa"
    with pytest.raises(UserError, match="unknown codec 'scratch-aa'"):
        codecs.get("scratch-aa")


#: `pip uninstall msgpack` leaves site-packages/msgpack/__pycache__ behind. msgpack is
#: installed here (agent[fast]), so this finder stands for the uninstall: the import
#: system's own PathFinder finds msgpack only in a folder holding such a leftover.
LEFTOVER_MSGPACK = """
import importlib.machinery, sys
class Uninstalled:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "msgpack":
            return importlib.machinery.PathFinder.find_spec(name, [LEFTOVER])
sys.meta_path.insert(0, Uninstalled)
"""


def test_a_library_s_leftover_folder_is_no_codec_and_the_default_run_goes_on(tmp_path):
    # The folder imports (a namespace package) and had no packb: the default run, which
    # takes every codec that imports, ended "internal error: AttributeError", exit 1.
    (tmp_path / "site" / "msgpack" / "__pycache__").mkdir(parents=True)
    hook = f"LEFTOVER = {str(tmp_path / 'site')!r}\n{LEFTOVER_MSGPACK}"
    (tmp_path / "sitecustomize.py").write_text(hook)
    path = os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))
    out = tmp_path / "run"
    small = "--processes 1 --values 2 --min-time 0.001 --payloads 5"
    argv = [sys.executable, "-m", "evbench_agent", "run", "--suite", "codec", "--profile", "seed"]
    done = subprocess.run(
        [*argv, *small.split(), "--out", str(out)],
        capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": path},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert "msgpack" not in manifest["spec"]["codecs"] and "json" in manifest["spec"]["codecs"]
    assert "msgpack" in manifest["platform"]["codecs_missing"]
    assert "msgpack" not in manifest["platform"]["codecs"]
