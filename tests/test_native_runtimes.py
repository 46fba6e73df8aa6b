"""The real native harnesses (Debian's packages) against the Python codecs, protoc --decode,
a model of cJSON 1.7's number printing, nlohmann's size rule (native_sizes.py) and
hand-counted leaves; and what a run and its report say of each runtime."""

import contextlib
import json
import math
import os
import platform
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT, require_command
from native_cross import build_documented, build_responder
from native_sizes import nlohmann_sizes

from evbench.report import context, table, unrepresentative
from evbench.report import runtimes as answers
from evbench_agent import payloads
from evbench_agent.native import codec as native_codec
from evbench_agent.native import runtimes
from evbench_agent.native.protocol import Harness
from evbench_core import results

pytestmark = pytest.mark.integration

PROTOBUF_RUNTIMES = ("c:protobuf-c", "c:nanopb", "cpp:protobuf")
JSON_RUNTIMES = ("c:cjson", "cpp:nlohmann")
#: The built-in profiles whose protos the harnesses are built with (a profile on a new
#: .proto is measured by the Python codecs only until native/ carries it too).
BUILT_IN = [
    name
    for name, profile in payloads.PROFILES.items()
    if native_codec.CODECS["cpp:protobuf"].can_carry(profile)
]
#: The Debian package each runtime is built from (its version is the harness's), and the
#: library its harness names (native/runtimes/).
PACKAGES = {
    "c:protobuf-c": ("libprotobuf-c-dev", "protobuf-c"),
    "c:cjson": ("libcjson-dev", "cJSON"),
    "c:nanopb": ("libnanopb-dev", "nanopb"),
    "cpp:protobuf": ("libprotobuf-dev", "libprotobuf"),
    "cpp:nlohmann": ("nlohmann-json3-dev", "nlohmann::json"),
}
COUNT = 12


@pytest.fixture(scope="module")
def harness_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """native/ by the documented command; the responder first, alone, so that the responder
    tests on another worker wait for no more than that."""
    build_responder(tmp_path_factory)
    return build_documented(tmp_path_factory)


@contextlib.contextmanager
def started(harness_dir: Path, name: str) -> Iterator[Harness]:
    harness = Harness(name, str(harness_dir / runtimes.RUNTIMES[name].executable_name))
    try:
        yield harness
    finally:
        harness.close()


def each_payload(names, count: int) -> Iterator[tuple]:
    """(profile name, profile, its message type's full name, payload), `count` a profile."""
    for profile_name in names:
        profile = payloads.get(profile_name)
        for item in profile.payloads(count):
            yield profile_name, profile, profile.message_type.DESCRIPTOR.full_name, item


def python_json(plain: object) -> bytes:
    return json.dumps(plain, separators=(",", ":"), ensure_ascii=False).encode()


def cjson_number(value: float) -> str:
    """cJSON 1.7's print_number, written from its source's documented steps."""
    if math.isnan(value) or math.isinf(value):
        return "null"
    int_max, int_min = 2**31 - 1, -(2**31)
    valueint = int_max if value >= int_max else int_min if value <= int_min else int(value)
    if value == float(valueint):
        return str(valueint)
    text = format(value, ".15g")  # C printf "%1.15g"
    back = float(text)
    if abs(back - value) > max(abs(back), abs(value)) * sys.float_info.epsilon:
        text = format(value, ".17g")
    return text


def cjson_text(value: object) -> str:
    if isinstance(value, dict):
        return "{" + ",".join(f"{cjson_text(k)}:{cjson_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(cjson_text(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if value is None:
        return "null"
    return cjson_number(float(value))  # cJSON keeps every number as a double


@pytest.mark.parametrize("name", PROTOBUF_RUNTIMES)
def test_protobuf_runtimes_write_what_python_writes_and_protoc_decodes(harness_dir, name):
    protoc = require_command("protoc")
    with started(harness_dir, name) as harness:
        for profile_name, profile, type_name, item in each_payload(BUILT_IN, COUNT):
            expected = item.message.SerializeToString()
            written = harness.encoded(harness.load(type_name, None, expected))
            assert len(written) == len(expected), (profile_name, name)
            if profile_name == "string-map":  # a map's order on the wire is the runtime's
                assert profile.message_type.FromString(written) == item.message
            else:
                assert written == expected, (profile_name, name)
        for profile_name, proto in (("seed", "ev_data.proto"), ("ev-full", "ev_frame.proto")):
            profile = payloads.get(profile_name)
            blob = profile.payloads(1)[0].message.SerializeToString()
            type_name = profile.message_type.DESCRIPTOR.full_name
            encoded = harness.encoded(harness.load(type_name, None, blob))
            decode = [protoc, f"--decode={type_name}", f"-I{ROOT / 'protos'}", proto]
            native, python = (
                subprocess.run(decode, input=data, capture_output=True, check=True).stdout
                for data in (encoded, blob)
            )
            assert native == python
            assert b"header {" in native or b"battery: " in native  # a real decode, not empty


def test_nlohmann_writes_pythons_sizes_and_values_and_cjson_its_number_printing(harness_dir):
    differing = 0
    with started(harness_dir, "cpp:nlohmann") as nlohmann, started(harness_dir, "c:cjson") as cjson:
        for profile_name, _profile, type_name, item in each_payload(BUILT_IN, COUNT):
            text = python_json(item.plain)
            written = nlohmann.encoded(nlohmann.load(type_name, None, text))
            assert json.loads(written) == item.plain, profile_name
            assert [len(written)] == nlohmann_sizes([text], [written]), profile_name
            written = cjson.encoded(cjson.load(type_name, None, text)).decode()
            assert written == cjson_text(item.plain), profile_name
            differing += len(written) != len(text)
    # seed's doubles need 16-17 digits and ev-full's uint64 timestamp is no double:
    # cJSON's text differs in size there (reported in docs/native-codecs.md).
    assert differing > 0


def _hand_counted(profile_name: str, plain: dict) -> int:
    """Leaves of the JSON form, counted from what each profile's generator makes."""
    if profile_name == "seed":  # 34 scalars, two Vector3 of 3, and the two lists' items
        return 34 + 6 + len(plain["errors"]) + len(plain["alerts"])
    if profile_name == "string-map":
        return len(plain["entries"])  # a map entry's leaf is its value
    if profile_name in ("skip-flat", "skip-nested"):
        return 1  # the one field these profiles read
    return {"int-list": 16, "object-list": 16, "ten-strings": 10, "double-array": 10}[profile_name]


@pytest.mark.parametrize("name", PROTOBUF_RUNTIMES + JSON_RUNTIMES)
def test_decode_access_reads_the_leaves_of_the_json_form(harness_dir, name):
    from evbench_agent.native.codec import access_path

    binary = name in PROTOBUF_RUNTIMES
    names = ("seed", "string-map", "skip-flat", "skip-nested", "int-list", "object-list",
             "ten-strings", "double-array")  # fmt: skip
    with started(harness_dir, name) as harness:
        for profile_name, profile, type_name, item in each_payload(names, 4):
            data = item.message.SerializeToString() if binary else python_json(item.plain)
            path = access_path(profile, "message" if binary else "plain")
            leaves = harness.time("decode_access", harness.load(type_name, path, data), 3).size
            assert leaves == _hand_counted(profile_name, item.plain), (profile_name, name)


CODECS = ["json", "protobuf", *PACKAGES]


@pytest.fixture(scope="module")
def run(harness_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A codec run of every runtime: its directory and its standard error."""
    out = tmp_path_factory.mktemp("every-runtime") / "run"
    done = subprocess.run(
        [sys.executable, "-m", "evbench_agent", "run", "--suite", "codec", "--profile",
         "seed,skip-nested", "--codecs", ",".join(CODECS), "--processes", "2", "--values", "3",
         "--min-time", "0.001", "--payloads", "20", "--out", str(out)],
        capture_output=True, text=True, timeout=600, check=False,
        env=dict(os.environ, EVBENCH_NATIVE_DIR=str(harness_dir)),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return out, done.stderr


def test_a_run_measures_every_runtime(run, harness_dir):
    out, _ = run
    assert json.loads((out / "manifest.json").read_text())["status"] == "complete"
    sets = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    timed = {(s["codec"], s["metric"], s["worker"]) for s in sets if s["suite"] == "codec"}
    for codec in CODECS:
        for metric in ("encode", "decode", "decode_access"):
            assert {(codec, metric, 0), (codec, metric, 1)} <= timed, (codec, metric)
    size_sets = [s for s in sets if s["suite"] == "codec" and s["metric"] == "size"]
    sizes = {(s["profile"], s["codec"]): s["values"] for s in size_sets}
    for codec in PROTOBUF_RUNTIMES:
        assert sizes[("seed", codec)] == sizes[("seed", "protobuf")]
    # nlohmann's: Python's, but for the digits it writes beyond a double's shortest form
    (seed_json,) = [s for s in sets if s["metric"] == "size" and s["codec"] == "json"
                    and s["profile"] == "seed"]  # fmt: skip
    seed = payloads.get("seed")
    items = seed.payloads(seed_json["params"]["payloads"], seed_json["params"]["seed"])
    python_texts = [python_json(item.plain) for item in items]
    assert sizes[("seed", "json")] == [len(text) for text in python_texts]
    with started(harness_dir, "cpp:nlohmann") as harness:
        name = seed.message_type.DESCRIPTOR.full_name
        written = [harness.encoded(harness.load(name, None, text)) for text in python_texts]
    assert sizes[("seed", "cpp:nlohmann")] == nlohmann_sizes(python_texts, written)


def test_the_run_names_each_runtimes_library_version_and_architecture(run):
    """Each runtime's version is Debian's package's (dpkg-query, not the harness's word), named
    in the report's boxes and each pair's answer; built here, no emulation is said."""
    out, stderr = run
    manifest = json.loads((out / "manifest.json").read_text())
    named, versions = [], {}
    for name, (package, library) in PACKAGES.items():
        dpkg_query = [require_command("dpkg-query"), "-W", "-f", "${Version}", package]
        version = subprocess.run(dpkg_query, capture_output=True, text=True, timeout=30).stdout
        upstream = version.split(":")[-1].split("-")[0].split("+")[0]  # 1.4.1-1+b1: 1.4.1
        stated = manifest["platform"]["native_codecs"][name]
        assert upstream and (stated["library"], stated["version"]) == (library, upstream), name
        assert stated["compiler"] and stated["flags"], name
        # test_native_deploy reads this build's ELF header with `file`: this machine's
        assert stated["architecture"] == platform.machine(), name
        named.append(f"{name} {library} {upstream}")
        versions[name] = upstream
    assert "emulation" not in stderr
    assert not [w for w in unrepresentative.warnings(manifest) if "emulation" in w]
    loaded = context.load_context(out)
    in_context = dict(context.context_rows(loaded))["Codecs"].split(", ")
    python = f"json Python {sys.version.split()[0]} standard library"
    assert {python, *named} <= set(in_context), in_context
    in_environment = dict(context.environment_rows(loaded))["Codecs"].split("; ")
    assert set(named) <= set(in_environment), in_environment
    assert not [n for n in in_environment if n.endswith(" ?")], in_environment
    # The answer per runtime pair, as the terminal shows it, names library and version.
    said = answers.render(results.read_samples(out), manifest, CODECS)
    assert (
        f"The answer (Protobuf (protobuf-c {versions['c:protobuf-c']}) against "
        f"JSON (cJSON {versions['c:cjson']}) in C, on this machine):"
    ) in said
    assert f"Protobuf (libprotobuf {versions['cpp:protobuf']}) against JSON" in said
    assert f"Protobuf (nanopb {versions['c:nanopb']}) against JSON (cJSON" in said
    assert said.count("\n- seed: ") == 3  # each pair's answer for the profile


def test_the_report_pairs_each_languages_runtimes_and_names_library_and_version():
    """On a stated manifest, no run."""
    names = ["json", "protobuf", "c:protobuf-c", "c:cjson", "c:nanopb", "cpp:protobuf",
             "cpp:nlohmann"]  # fmt: skip
    found = [(p.baseline, p.candidate, p.language) for p in answers.pairs(names)]
    # C: one JSON runtime x two protobuf runtimes; C++: one x one; Python is the main answer.
    assert found == [
        ("c:cjson", "c:protobuf-c", "C"),
        ("c:cjson", "c:nanopb", "C"),
        ("cpp:nlohmann", "cpp:protobuf", "C++"),
    ]
    # no pair across languages or without both sides
    assert answers.pairs(["json", "c:protobuf-c", "cpp:nlohmann"]) == []
    assert answers.pairs(["json", "protobuf"]) == []
    native = {"c:protobuf-c": {"library": "protobuf-c", "version": "1.4.1"},
              "c:cjson": {"library": "cJSON", "version": "1.7.15"}}  # fmt: skip
    title = "Protobuf (protobuf-c 1.4.1) against JSON (cJSON 1.7.15) in C"
    pair = answers.pairs(["c:protobuf-c", "c:cjson"])[0]
    assert answers.title(pair, {"platform": {"native_codecs": native}}) == title
    # A manifest without the harness's word (an older run): the library, no version.
    assert answers.label("c:nanopb", {}) == "Protobuf (nanopb)"
    assert table.display_name("cpp:nlohmann") == "JSON (nlohmann::json)"
    assert table.display_name("protobuf") == "Protobuf"
    assert table.display_name("orjson") == "orjson"
