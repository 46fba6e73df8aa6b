"""The agent under the protobuf runtimes it supports (4.25.8 in .venv-pb425, the newest in
the main venv, Debian 12's python3 with 4.21.12 cpp) and its minimum Python: a quick run,
protobuf-json's zero values by the proto3 JSON mapping, one payload digest per set; and
protobuf-json's bytes and a user's message measured alike on each runtime."""

import base64
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import AGENT_SRC, ROOT, require
from test_schema_kinds import compile_set

from evbench_agent import payloads
from evbench_agent.payloads import identity as payload_identity

pytestmark = pytest.mark.compat

DEBIAN_PYTHON = "/usr/bin/python3"


INTERPRETERS = {
    "protobuf-4.25": str(ROOT / ".venv-pb425" / "bin" / "python"),
    "newest": sys.executable,
    "debian": DEBIAN_PYTHON,
}


#: Only agent/src on the path: the agent must stand alone, without the host tools.
AGENT_ALONE = dict(os.environ, PYTHONPATH=str(AGENT_SRC), PYTHONNOUSERSITE="1")


def _agent(python: str, *argv: str) -> subprocess.CompletedProcess:
    command = [python, "-m", "evbench_agent", *argv]
    return subprocess.run(command, capture_output=True, text=True, env=AGENT_ALONE, timeout=600)


def on_each_runtime(argv, stdin: str = "", timeout: float = 600) -> dict[str, str]:
    """Each runtime's stdout of `python argv(runtime)`, the runtimes at once."""
    for runtime, python in INTERPRETERS.items():
        require(os.access(python, os.X_OK), f"the interpreter for {runtime} ({python})")
    options = {"input": stdin, "capture_output": True, "text": True, "timeout": timeout}

    def run(runtime: str) -> subprocess.CompletedProcess:
        return subprocess.run([INTERPRETERS[runtime], *argv(runtime)], env=AGENT_ALONE, **options)

    with ThreadPoolExecutor(len(INTERPRETERS)) as pool:
        done = dict(zip(INTERPRETERS, pool.map(run, INTERPRETERS), strict=True))
    for runtime, finished in done.items():
        assert finished.returncode == 0, f"{runtime}: {finished.stderr}"
    return {runtime: finished.stdout for runtime, finished in done.items()}


RUN = ["run", "--quick", "--profile", "seed,ev-full,string-map",
       "--codecs", "json,protobuf,protobuf-json"]  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple]:
    """Per runtime found, at once: (`info --json`, its quick run or None, the run's folder)."""
    top = tmp_path_factory.mktemp("runs")
    found = [name for name, python in INTERPRETERS.items() if os.access(python, os.X_OK)]

    def info_and_run(name: str) -> tuple:
        python, out = INTERPRETERS[name], top / name
        info = _agent(python, "info", "--json")
        run = _agent(python, *RUN, "--out", str(out)) if info.returncode == 0 else None
        return info, run, out

    with ThreadPoolExecutor(max(len(found), 1)) as pool:
        return dict(zip(found, pool.map(info_and_run, found), strict=True))


@pytest.mark.parametrize("runtime", list(INTERPRETERS))
def test_agent_runs_a_quick_suite_on_each_runtime(runtime, runs):
    python = INTERPRETERS[runtime]
    require(runtime in runs, f"the interpreter for {runtime} ({python})")
    probe, done, out = runs[runtime]
    require(probe.returncode == 0 or "google" not in probe.stderr, f"protobuf for {runtime}")
    assert probe.returncode == 0, probe.stderr
    info = json.loads(probe.stdout)
    if runtime == "debian":
        assert info["protobuf"] == "4.21.12" and info["protobuf_backend"] == "cpp"
    elif runtime == "protobuf-4.25":
        assert info["protobuf"] == "4.25.8"
    else:
        assert int(info["protobuf"].split(".")[0]) >= 5
    assert done.returncode == 0, done.stderr
    assert (out / "complete").exists()
    summary = json.loads((out / "summary.json").read_text())
    codec_records = [r for r in summary["records"] if r["suite"] == "codec"]
    # The machine's state around each worker (contention_* records) belongs to no codec.
    measured = {r["codec"] for r in codec_records if not r["metric"].startswith("contention_")}
    assert measured == {"json", "protobuf", "protobuf-json"}
    assert all(r["codec"] is None for r in codec_records if r["metric"].startswith("contention_"))
    # Every codec and link record of a profile carries its payload set's digest: the
    # run's defaults, 200 payloads of seed 1 (docs/running.md); the link measures seed.
    found: dict[tuple[str, str], set[str]] = {}
    with (out / "samples.jsonl").open(encoding="utf-8") as stream:
        for record in map(json.loads, stream):
            if record["suite"] in ("codec", "link") and record.get("profile") is not None:
                key = (record["suite"], record["profile"])
                found.setdefault(key, set()).add(record["params"].get("payload_digest"))
    names = ("seed", "ev-full", "string-map")
    expected = {n: payload_identity.compute(payloads.get(n), 200, 1) for n in names}
    wanted = {("codec", n): {expected[n]} for n in names}
    wanted[("link", "seed")] = {expected["seed"]}
    assert found == wanted


def test_agent_source_needs_no_python_newer_than_3_10():
    vermin = shutil.which("vermin", path=str(Path(sys.executable).parent))
    require(vermin is not None, "vermin (requirements-dev.txt)")
    argv = [vermin, "--target=3.10-", "--violations", "--no-tips", "--eval-annotations",
            "--backport", "enum", "--backport", "typing",
            str(AGENT_SRC / "evbench_agent")]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


# protobuf-json's zero values on each runtime: before 5.26 the agent adds proto3 defaults
# itself (json_format's option would print unset proto2 `optional` scalars). Expected: the
# proto3 JSON mapping (protobuf.dev, "JSON Mapping"): 32-bit integers numbers, 64-bit ones
# strings, bytes base64, an enum its value's name; and each runtime's Parse reads it back.

#: Every scalar type of protobuf, with the JSON form of its zero value by the mapping.
SCALARS = {
    "double": 0.0, "float": 0.0, "int32": 0, "int64": "0", "uint32": 0, "uint64": "0",
    "sint32": 0, "sint64": "0", "fixed32": 0, "fixed64": "0", "sfixed32": 0, "sfixed64": "0",
    "bool": False, "string": "", "bytes": "",
}  # fmt: skip
#: A value other than zero for each, as a Python attribute value.
SET = {
    "double": 1.5, "float": 2.5, "int32": -3, "int64": -4, "uint32": 5, "uint64": 6,
    "sint32": -7, "sint64": -8, "fixed32": 9, "fixed64": 10, "sfixed32": -11,
    "sfixed64": -12, "bool": True, "string": "s", "bytes": b"b",
}  # fmt: skip

FIELDS = "\n".join(f"  {kind} f_{kind} = {number};" for number, kind in enumerate(SCALARS, start=1))
PROTO3 = f"""syntax = "proto3";
package evbench.zero;
import "google/protobuf/any.proto";
import "legacy2.proto";
enum Mode {{ MODE_IDLE = 0; MODE_DRIVE = 1; }}
message WithAny {{
{FIELDS}
  Mode f_enum = 16;
  google.protobuf.Any any = 17;
}}
message WithProto2 {{
{FIELDS}
  Mode f_enum = 16;
  evbench.zero2.Old old = 17;
}}
"""
PROTO2 = """syntax = "proto2";
package evbench.zero2;
message Old { optional int32 level = 1; }
"""

ROOTS = ["evbench.zero.WithAny", "evbench.zero.WithProto2"]
KINDS = ROOT / "tests" / "data" / "kinds"
CASES = {
    "proto2-defaults": ("legacy", "evbench.legacy.Chassis"),
    "proto2-required": ("legacy", "evbench.legacy.Limits"),
    "proto3-well-known": ("well_known", "evbench.kinds.Everything"),
    "recursive": ("fanout", "evbench.kinds.M"),
    "repeated-extension": ("legacy", "evbench.legacy.Diagnostics"),
}
#: Cases holding maps: the runtimes order a map's entries differently (protobuf binary too),
#: so there the values and the sizes are compared, not the bytes.
MAPS = ("proto3-well-known/",)
#: Per runtime: ROOTS' messages (all at zero, and each with one scalar set) printed by
#: protobuf-json and read back, two profiles' payload digests, and CASES' payloads through
#: protobuf, json and protobuf-json in both JSON styles.
SCRIPT = r"""
import base64, hashlib, json, sys
from google.protobuf import json_format
from evbench_agent import codecs
from evbench_agent.payloads import identity as payload_identity
from evbench_agent.payloads import user_schema
from evbench_core.errors import UserError
serialized, roots, set_values, cases, MAPS = json.load(sys.stdin)
MAPS = tuple(MAPS)
digests = [payload_identity.payload_digest(name, 20, 3) for name in ("ev-full", "seed")]
out = {}
for root in roots:
    profile = user_schema.build_profile({"descriptor_set": serialized, "message": root})
    bound = codecs.get("protobuf-json").bind(profile)
    cls = profile.message_type
    messages = {"all-zero": cls()}
    for kind, value in set_values.items():  # one field set, the others at zero
        message = cls()
        setattr(message, "f_" + kind, value.encode() if kind == "bytes" else value)
        messages[kind] = message
    for name, message in messages.items():
        blob = bound.encode(message)
        try:
            back = bound.decode(blob)
            read = back == message
        except json_format.ParseError as error:
            read = "ParseError: " + str(error)
        out[root + "/" + name] = {"printed": blob.decode(), "read back": read}
measured = {}
for case, (serialized, message) in cases.items():
    for style in ("proto3", "fields"):
        profile = user_schema.build_profile(
            {"descriptor_set": serialized, "message": message, "json_style": style}
        )
        items = profile.payloads(40, 7)
        for name in ("protobuf", "json", "protobuf-json"):
            try:
                bound = codecs.get(name).bind(profile)
            except UserError as error:
                measured[f"{case}/{style}/{name}"] = "refused: " + str(error)
                continue
            blobs = [bound.encode(bound.data(item)) for item in items]
            decoded = [bound.decode(blob) for blob in blobs]
            leaves = [bound.access(value) for value in decoded]
            if name == "json":
                canonical = [json.dumps(v, sort_keys=True).encode() for v in decoded]
            elif not case.startswith(MAPS):
                canonical = []  # the bytes themselves are compared
            else:  # through the JSON mapping: an Any's bytes hold maps in their order too
                pool = profile.message_type.DESCRIPTOR.file.pool
                canonical = [
                    json.dumps(json_format.MessageToDict(v, descriptor_pool=pool), sort_keys=True)
                    .encode() for v in decoded
                ]
            measured[f"{case}/{style}/{name}"] = {
                "bytes": hashlib.sha256(b"\0".join(blobs)).hexdigest(),
                "values": hashlib.sha256(b"\0".join(canonical)).hexdigest(),
                "size": sum(map(len, blobs)),
                "leaves": sum(leaves),
            }
print(json.dumps([out, digests, measured]))
"""


@pytest.fixture(scope="module")
def printed(tmp_path_factory) -> dict[str, list]:
    """Per runtime, one interpreter start: what SCRIPT prints."""
    folder = tmp_path_factory.mktemp("zero")
    (folder / "legacy2.proto").write_text(PROTO2)
    (folder / "zero.proto").write_text(PROTO3)
    serialized = base64.b64encode(compile_set(folder, "zero.proto", folder)).decode()
    set_values = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in SET.items()}
    names = ("legacy", "well_known", "fanout")
    sets = {n: base64.b64encode(compile_set(KINDS, f"{n}.proto", folder)).decode() for n in names}
    cases = {case: (sets[proto], message) for case, (proto, message) in CASES.items()}
    stdin = json.dumps([serialized, ROOTS, set_values, cases, MAPS])
    printed = on_each_runtime(lambda _: ["-c", SCRIPT], stdin)
    return {runtime: json.loads(stdout) for runtime, stdout in printed.items()}


def test_zeros_print_as_the_mapping_says_read_back_and_print_alike_on_each_runtime(printed):
    zero = {f"f{kind[0].upper()}{kind[1:]}": value for kind, value in SCALARS.items()}
    zero["fEnum"] = "MODE_IDLE"
    assert len(printed["newest"][0]) == len(ROOTS) * (1 + len(SET))  # all at zero, one set each
    for runtime, (found, _digests, _measured) in printed.items():
        for root in ROOTS:
            as_json = json.loads(found[f"{root}/all-zero"]["printed"])
            # the mapping's values, and their JSON types (0 is not 0.0 nor False)
            assert as_json == zero, (runtime, root, as_json)
            types = {k: type(v) for k, v in as_json.items()}
            assert types == {k: type(v) for k, v in zero.items()}, (runtime, root)
        unread = {k: v for k, v in found.items() if v["read back"] is not True}
        assert not unread, (runtime, unread)
    # byte for byte what the newest runtime prints with its own option; and one payload
    # set, one digest: the runtime's own encoding is left out (docs/results-format.md)
    assert printed["debian"][:2] == printed["newest"][:2]
    assert printed["protobuf-4.25"][:2] == printed["newest"][:2]
    ev_full, seed = printed["newest"][1]
    assert ev_full != seed  # two payload sets, two digests


def test_protobuf_json_is_byte_for_byte_the_same_on_every_runtime(printed):
    results = {runtime: measured for runtime, (_, _, measured) in printed.items()}
    newest = results["newest"]
    differ = []
    for runtime, found in results.items():
        for key, value in found.items():
            if key.startswith("repeated-extension/") and key.endswith("/protobuf-json"):
                continue
            expected = dict(newest[key])
            if key.startswith(MAPS):  # map order is the runtime's: same values, same size
                expected["bytes"] = value["bytes"]
            if value != expected:
                differ.append((runtime, key, value, newest[key]))
    assert not differ, differ
    # the newest carries a repeated extension; the older runtimes refuse it, by name
    assert isinstance(newest["repeated-extension/proto3/protobuf-json"], dict)
    for runtime in ("debian", "protobuf-4.25"):
        refusal = results[runtime]["repeated-extension/fields/protobuf-json"]
        assert refusal.startswith("refused: ") and "evbench.legacy.fault_codes" in refusal
    # and the sizes are not all alike: the printing options matter for proto2 defaults
    defaults = "proto2-defaults/proto3/"
    assert newest[defaults + "protobuf-json"]["size"] > newest[defaults + "json"]["size"]


def test_each_runtime_measures_the_same_user_message(tmp_path):
    """The rich test schema, from a spec holding only its descriptor set."""
    rich = compile_set(ROOT / "tests" / "data" / "bms", "rich.proto", tmp_path)
    spec = {
        "schema": {"descriptor_set": base64.b64encode(rich).decode(),
                   "message": "evbench.test.Rich"},
        "suites": ["codec"], "codecs": ["json", "protobuf", "protobuf-json"], "quick": True,
        "payloads": 40,
    }  # fmt: skip
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    run = ["-m", "evbench_agent", "run", "--spec", str(tmp_path / "spec.json"), "--out"]
    runtimes = on_each_runtime(lambda runtime: [*run, str(tmp_path / runtime)])
    sizes = {}
    for runtime in runtimes:
        assert (tmp_path / runtime / "complete").exists()
        summary = json.loads((tmp_path / runtime / "summary.json").read_text())
        records = [r for r in summary["records"] if r["metric"] == "size"]
        sizes[runtime] = {r["codec"]: [r["min"], r["median"], r["max"], r["mean"]] for r in records}
        assert set(sizes[runtime]) == {"json", "protobuf", "protobuf-json"}
    first = next(iter(sizes.values()))
    assert all(value == first for value in sizes.values()), sizes
