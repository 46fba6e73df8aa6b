"""`evbench run --schema`: a user's .proto from the command line to the table (the agent a
real process on the local board), and its refusals as a person types them: exit 2 before a
run directory exists, one line naming what is wrong and what to do."""

import base64
import hashlib
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import AGENT_SRC, ROOT
from google.protobuf import descriptor_pb2, json_format
from report_helpers import evbench
from test_user_schema import _document, compile_set

from evbench.commands import run as run_command
from evbench.usecases import schema as host_schema
from evbench_agent.payloads import user_schema

DATA = ROOT / "tests" / "data" / "bms"
KINDS = ROOT / "tests" / "data" / "kinds"
BMS = "evbench.example.BmsStatus"
SAMPLES = DATA / "bms_samples.jsonl"
SCHEMA = ["--schema", str(DATA / "bms.proto"), "--message", BMS]
QUICK = ["--board", "local", "--quick", "--details", "--codecs", "json,protobuf"]
#: The runs the slow tests read; two workers where the test reads no timing count.
RUNS = {
    "every suite": ["--processes", "2"],
    "five samples": ["--suite", "codec", "--samples", str(SAMPLES), "--payloads", "5",
                     "--profile-name", "our-bms", "--processes", "2"],
    "all samples": ["--suite", "codec", "--samples", str(SAMPLES)],
}  # fmt: skip


def _records(out: Path, metric: str, codec: str) -> list[dict]:
    summary = json.loads((out / "summary.json").read_text())
    return [r for r in summary["records"] if (r["metric"], r["codec"]) == (metric, codec)]


@pytest.mark.slow
def test_a_user_schema_runs_every_suite_and_from_samples_in_file_order_round_again(tmp_path):
    """The three runs at once: they share nothing (each its own directory and history store)."""

    def run(name: str) -> tuple[subprocess.CompletedProcess, Path]:
        out = tmp_path / name.replace(" ", "-")
        env = {**os.environ, "EVBENCH_HISTORY": f"{out}.sqlite"}
        done = evbench("run", *QUICK, *SCHEMA, *RUNS[name], "--out", str(out), env=env, timeout=600)
        assert done.returncode == 0, done.stderr
        return done, out

    with ThreadPoolExecutor(len(RUNS)) as pool:
        runs = dict(zip(RUNS, pool.map(run, RUNS), strict=True))
    done, out = runs["every suite"]
    rows = [line for line in done.stdout.splitlines() if line.startswith(f"schema:{BMS} ")]
    metrics = {row.split("|")[1].strip() for row in rows}
    assert {"Size", "Serialization", "Deserialization"} <= metrics
    assert any(m.startswith("RTT") for m in metrics)  # the link suite carried it too
    schema = json.loads((out / "manifest.json").read_text())["spec"]["schema"]
    assert schema["message"] == BMS
    digest = hashlib.sha256((DATA / "bms.proto").read_bytes()).hexdigest()
    assert schema["files"] == [{"name": "bms.proto", "sha256": digest}]
    files = descriptor_pb2.FileDescriptorSet.FromString(base64.b64decode(schema["descriptor_set"]))
    assert [f.name for f in files.file] == ["bms.proto"]
    assert (out / "complete").exists()
    # Samples are measured in file order: the protobuf sizes are those of the file's lines,
    # encoded by json_format here.
    done, out = runs["five samples"]
    assert "our-bms" in done.stdout
    report = (out / "report.md").read_text()
    assert f"| Your message | {BMS} from bms.proto (SHA-256 " in report
    assert "| Its payloads / JSON | samples bms_samples.jsonl (jsonl) / proto3 |" in report
    schema = json.loads((out / "manifest.json").read_text())["spec"]["schema"]
    assert schema["samples"]["sha256"] == hashlib.sha256(SAMPLES.read_bytes()).hexdigest()
    cls = user_schema.find_message(base64.b64decode(schema["descriptor_set"]), BMS)
    lines = SAMPLES.read_text().splitlines()[:5]
    expected = sorted(len(json_format.Parse(line, cls()).SerializeToString()) for line in lines)
    (size,) = _records(out, "size", "protobuf")
    assert size["n"] == 5
    assert size["min"] == expected[0] and size["max"] == expected[-1]
    compact = [json.dumps(json.loads(line), separators=(",", ":")).encode() for line in lines]
    json_sizes = sorted(len(text) for text in compact)
    (json_size,) = _records(out, "size", "json")
    assert json_size["min"] == json_sizes[0] and json_size["max"] == json_sizes[-1]
    # A samples file shorter than the rounds goes round again: 12 lines, and the quick
    # plan's 8 workers take 4 rounds each.
    out = runs["all samples"][1]
    (size,) = _records(out, "size", "protobuf")
    assert size["n"] == len(SAMPLES.read_text().splitlines()) == 12
    (encode,) = _records(out, "encode", "protobuf")
    assert encode["n"] == 8 * 3  # every worker's values recorded


CODEC = ["--suite", "codec"]
WIDE = {"fields": {"many": {"count": 100}, "many.many": {"count": 100}}}
NAN = b'{"sequence": 1, "socPercent": 50.0}\n{"sequence": 2, "socPercent": "NaN"}\n'
LINES = SAMPLES.read_bytes().splitlines(keepends=True)
FIRST = LINES[0].rstrip(b"\n")
#: The samples file with line 5's state a name the enum lacks.
BAD_SAMPLES = b"".join(
    [*LINES[:4], LINES[4].replace(b'"state":"BMS_STATE_DRIVE"', b'"state":"BMS_STATE_FLYING"'),
     *LINES[5:]]
)  # fmt: skip
SLOW = pytest.mark.slow  # once an internal error or a hang (a 25 MiB line: 136 s, 651 MB)


@pytest.mark.parametrize(
    # files: name to bytes (None: a FIFO); in argv, a file's name (or TMP, the test's
    # directory) stands for its path. in_error: parts of the one error line.
    ("files", "argv", "in_error", "in_stderr"),
    [
        pytest.param({"pack.jsonl": NAN},
                     [*CODEC, *SCHEMA, "--json-style", "fields", "--samples", "pack.jsonl"],
                     [f"{BMS}.soc_percent is nan"], ["--json-style proto3"], id="nan in fields"),
        pytest.param({"wide.json": json.dumps(WIDE).encode()},
                     [*CODEC, "--schema", str(KINDS / "fanout.proto"), "--message",
                      "evbench.kinds.M", "--generate", "wide.json"],
                     ["wide.json: payload 0: field 'many.many", "budget per payload"],
                     ["evbench: hint:"], id="generator budget"),
        pytest.param({}, ["--peer", "127.0.0.1:9", *SCHEMA],
                     ["--peer 127.0.0.1:9", f"schema:{BMS}"], ["leave --peer out"],
                     id="responder without the schema"),
        pytest.param({}, [*CODEC, "--schema", str(DATA / "broken.proto"), "--message", "x.Y"],
                     ["protoc cannot compile"], ['broken.proto:7:3: "flaot" is not defined.'],
                     id="does not compile"),  # protoc's own message
        pytest.param({"fifo.proto": None}, [*CODEC, "--schema", "fifo.proto", "--message", "x.Y"],
                     ["the .proto file", "fifo.proto does not exist or is not a file"], [],
                     id="FIFO as schema"),
        pytest.param({}, [*CODEC, "--schema", str(DATA / "bms.proto"), "--message", "BmsStatus"],
                     ["no message 'BmsStatus'"], [f"messages there: {BMS}"], id="no such message"),
        pytest.param({}, [*CODEC, "--schema", str(DATA / "rich.proto"), "-I", "TMP", "--message",
                          "evbench.test.Rich"],
                     ["protoc cannot compile"], [], id="import not found"),
        pytest.param({}, [*CODEC, "--message", BMS, "--samples", str(SAMPLES)],
                     ["--message, --samples need --schema"], [], id="options need a schema"),
        pytest.param({"pack.jsonl": BAD_SAMPLES}, [*CODEC, *SCHEMA, "--samples", "pack.jsonl"],
                     ["pack.jsonl line 5:", "BMS_STATE_FLYING"], [], id="bad samples line"),
        pytest.param({"rules.yaml": b"fields:\n  cell_voltage: {count: 96}\n"},
                     [*CODEC, *SCHEMA, "--generate", "rules.yaml"],
                     ["rules.yaml", "no field 'cell_voltage'"], [], id="no such field"),
        # (a reversed range: tests/test_user_schema.py's [90, 10], in the same reader)
        pytest.param({"rules.yaml": b"fields:\n  sequence: {range: [0, 4294967296]}\n"},
                     [*CODEC, *SCHEMA, "--generate", "rules.yaml"],
                     ["rules.yaml", "impossible range [0, 4294967296]"], [],
                     id="range past uint32"),
        # the byte's offset by hand: "fields:\n" is 8 bytes, the line before it 36
        pytest.param({"rules.yaml": b"fields:\n  soc_percent: {range: [0, 100]}  # \xff\n"},
                     [*CODEC, *SCHEMA, "--generate", "rules.yaml"],
                     ["rules.yaml is not UTF-8 text (byte 44)"], [], id="generator not UTF-8",
                     marks=SLOW),
        # a flow list left open: the file ends, after its one line, inside it
        pytest.param({"rules.yaml": b"fields: [soc_percent\n"},
                     [*CODEC, *SCHEMA, "--generate", "rules.yaml"],
                     ["rules.yaml is not valid YAML: line 2, column 1: "], [],
                     id="generator YAML in one line"),
        pytest.param({"map.json": b"[" * 100_000 + b"]" * 100_000},
                     [*CODEC, *SCHEMA, "--json-map", "map.json"],
                     ["map.json nests too deeply to read"], [], id="json map 100000 deep",
                     marks=SLOW),
        # a hang would end in the 120 s timeout
        pytest.param({"samples.jsonl": None}, [*CODEC, *SCHEMA, "--samples", "samples.jsonl"],
                     ["samples.jsonl is not a regular file"], [], id="FIFO as samples",
                     marks=SLOW),
        pytest.param({"pack.jsonl": FIRST + b"\n" + FIRST[:-1] + b', "pad": "'
                      + b"x" * (2 * 1024 * 1024) + b'"}\n'},
                     [*CODEC, *SCHEMA, "--samples", "pack.jsonl"],
                     ["pack.jsonl line 2 is", "over 1048576"], [],
                     id="samples line over 1 MiB", marks=SLOW),
    ],
)  # fmt: skip
def test_a_refusal_comes_before_a_run_directory(tmp_path, files, argv, in_error, in_stderr):
    for name, content in files.items():
        if content is None:
            os.mkfifo(tmp_path / name)
        else:
            (tmp_path / name).write_bytes(content)
    paths = {"TMP": str(tmp_path), **{name: str(tmp_path / name) for name in files}}
    out = tmp_path / "run"
    argv = [*(paths.get(arg, arg) for arg in argv), "--out", str(out)]
    done = evbench(
        "run", "--board", "local", "--quick", "--codecs", "json,protobuf", *argv, timeout=120
    )
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert not out.exists(), "a refused run left a run directory behind"
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    (error,) = [line for line in done.stderr.splitlines() if line.startswith("evbench: error:")]
    assert all(part in error for part in in_error), error
    assert all(part in done.stderr for part in in_stderr), done.stderr[-2000:]  # what to do


def test_a_binary_schema_is_one_line_and_protocs_errors_are_capped(tmp_path):
    # A binary file given as --schema: protoc would report nearly every byte (megabytes).
    # 0x80, the first byte of bytes(range(256)) that is not UTF-8, is at offset 128.
    binary = tmp_path / "image.proto"
    binary.write_bytes(bytes(range(256)) * 64)
    done = evbench("run", *QUICK, *CODEC, "--schema", str(binary), "--message", "x.Y",
                   "--out", str(tmp_path / "run"))  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"evbench: error: the .proto file {binary} is not UTF-8 text (byte 128)"
    ]
    # 300 typos, one error each; their count from protoc run directly, not through evbench.
    typos = tmp_path / "typos.proto"
    body = "".join(f"message M{n} {{ flaot x = 1; }}\n" for n in range(300))
    typos.write_text('syntax = "proto3";\n' + body)
    direct = subprocess.run(
        [*host_schema.protoc_command(), f"-I{tmp_path}",
         f"--descriptor_set_out={tmp_path / 'set.binpb'}", str(typos)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    errors = direct.stderr.strip().splitlines()
    assert len(errors) == 300, direct.stderr[-2000:]
    done = evbench("run", *QUICK, *CODEC, "--schema", str(typos), "--message", "x.Y",
                   "--out", str(tmp_path / "run"))  # fmt: skip
    assert done.returncode == 2
    heading, *shown, more = done.stderr.splitlines()
    assert heading == f"evbench: error: protoc cannot compile {typos}:"
    assert 0 < len(shown) <= 20 and shown == errors[: len(shown)]
    assert more == f"... and {len(errors) - len(shown)} more lines"


def _agent(*argv: str, timeout: float = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(AGENT_SRC))
    command = [sys.executable, "-m", "evbench_agent", *argv]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)


def test_the_agent_refuses_before_writing_debug_shows_its_traceback_bare_runs_pass(tmp_path):
    """The agent alone (evbench-agent run --spec): the same refusal, nothing written."""
    serialized = compile_set(KINDS, "fanout.proto", tmp_path)
    rules = {"name": "g.json", "document": {"fields": {"many": {"count": 100_000}}}}
    schema = _document(serialized, "evbench.kinds.M", generator=rules)
    spec = {"schema": schema, "suites": ["codec"], "codecs": ["json", "protobuf"], "quick": True}
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    out = tmp_path / "agent-run"
    done = _agent("run", "--spec", str(path), "--out", str(out))
    assert done.returncode == 2, done.stderr
    assert not out.exists()
    assert "g.json: payload 0: field 'many' takes the payload past" in done.stderr
    # --debug asks the agent for its traceback and shows it
    args = run_command.argparse.Namespace(debug=True, agent_spec=None)
    argv = run_command._agent_arguments(args, "run-1", Path("/tmp/x"))
    assert "--debug" in argv
    # what a real agent prints under --debug, found in its output
    done = _agent("run", "--debug", "--spec", "/nonexistent", timeout=120)
    assert done.returncode != 0
    traceback = run_command._agent_traceback("agent says\n" + done.stderr)
    assert traceback.startswith("Traceback (most recent call last):")
    assert "evbench_agent" in traceback and "cannot read the spec /nonexistent" in traceback
    # a run that sends the responder no user message is not refused
    base = {"peer": "192.0.2.1:7000", "suite": None, "link_profile": None}
    for given in ({"suite": "codec"}, {"link_profile": "seed"}, {"peer": "host"}, {"peer": None}):
        fine = run_command.argparse.Namespace(**{**base, **given})
        assert host_schema._check_peer_knows_it(fine, "schema:x.Y") is None  # no UserError


def test_an_empty_message_is_measured_and_its_size_change_is_minus_100_percent(tmp_path):
    # `message Empty {}` (a heartbeat): protobuf writes 0 bytes, json "{}" (2): -100 %, which
    # a factor ("Nx smaller") cannot say; the table once divided by zero there.
    proto = tmp_path / "empty.proto"
    proto.write_text('syntax = "proto3";\npackage odd;\nmessage Empty {}\n')
    out = tmp_path / "run"
    done = evbench("run", *QUICK, "--schema", str(proto), "--message", "odd.Empty",
                   "--suite", "codec", "--processes", "2", "--payloads", "5", "--no-history",
                   "--out", str(out))  # fmt: skip
    assert done.returncode == 0, done.stderr
    ((size_json,), (size_protobuf,)) = (_records(out, "size", c) for c in ("json", "protobuf"))
    assert (size_json["mean"], size_protobuf["mean"]) == (2, 0)
    (size_row,) = [line for line in done.stdout.splitlines() if "| Size" in line][:1]
    assert "-100.0%" in size_row, done.stdout
