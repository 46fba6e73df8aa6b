"""The payload set's digest (`payload_digest`), worked by hand with hashlib as
docs/results-format.md describes it; that every runtime's run puts one digest on every codec
and link record is tests/test_compat.py's."""

import hashlib
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from google.protobuf import descriptor_pb2
from test_user_schema import BMS, DATA, _profile, _protoc

from evbench_agent import payloads
from evbench_agent.payloads import identity as payload_identity
from evbench_agent.payloads import samples
from evbench_core.analysis import identity


@pytest.fixture(scope="module")
def descriptor_sets(tmp_path_factory) -> dict[str, bytes]:
    """The BMS schema as the real protoc writes it for `evbench run --schema`."""
    target = tmp_path_factory.mktemp("descriptors") / "bms.binpb"
    _protoc("--include_imports", f"--descriptor_set_out={target}", str(DATA / "bms.proto"))
    return {"bms": target.read_bytes()}


def test_the_digest_of_two_samples_is_the_hand_worked_sha256(descriptor_sets):
    lines = (DATA / "bms_samples.jsonl").read_text().splitlines()[:2]
    profile = _profile(
        descriptor_sets, "bms", BMS, samples=samples.source_from_file(DATA / "bms_samples.jsonl")
    )
    expected = hashlib.sha256(b"evbench payload set 1\n")
    head = {"count": 2, "json_style": "proto3", "message": BMS, "seed": 7}
    expected.update(json.dumps(head, sort_keys=True).encode() + b"\n")
    files = descriptor_pb2.FileDescriptorSet.FromString(descriptor_sets["bms"]).file
    for file in sorted(files, key=lambda f: f.name):
        serialized = file.SerializeToString()
        expected.update(f"file {file.name} {len(serialized)}\n".encode() + serialized)
    for line in lines:  # a proto3 line reads back as itself (test_user_schema)
        canonical = json.dumps(json.loads(line), sort_keys=True, separators=(",", ":"))
        expected.update(canonical.encode() + b"\n")
    assert payload_identity.compute(profile, 2, 7) == expected.hexdigest()[:16]


def test_what_decides_the_payloads_changes_the_digest_and_nothing_else_does(
    descriptor_sets, tmp_path
):
    source = samples.source_from_file(DATA / "bms_samples.jsonl")

    def digest(**settings: object) -> str:
        return payload_identity.compute(_profile(descriptor_sets, "bms", BMS, **settings), 5, 1)

    from_samples = digest(samples=source)
    renamed = tmp_path / "elsewhere.jsonl"  # the file's name is not its contents
    renamed.write_bytes((DATA / "bms_samples.jsonl").read_bytes())
    assert digest(samples=samples.source_from_file(renamed)) == from_samples
    edited = tmp_path / "edited.jsonl"
    text = (DATA / "bms_samples.jsonl").read_text()
    edited.write_text(text.replace('"sequence":4102', '"sequence":4999', 1))
    changed = samples.source_from_file(edited)
    others = {
        "one sample edited": _profile(descriptor_sets, "bms", BMS, samples=changed),
        "generated": _profile(descriptor_sets, "bms", BMS),
        "fields style": _profile(descriptor_sets, "bms", BMS, samples=source, json_style="fields"),
    }
    digests = {why: payload_identity.compute(p, 5, 1) for why, p in others.items()}
    assert from_samples not in digests.values(), digests
    assert len(set(digests.values())) == 3, digests
    generated = others["generated"]
    assert payload_identity.compute(generated, 5, 2) != digests["generated"]  # the seed
    assert payload_identity.compute(generated, 6, 1) != digests["generated"]  # the count


def test_the_digest_is_computed_once_per_profile_object():
    profile = payloads.get("int")
    first = payload_identity.payload_digest("int", 4, 1)
    assert payload_identity.payload_digest("int", 4, 1, items=[]) == first  # remembered
    assert payload_identity.compute(profile, 4, 1, items=[]) != first  # what `items` would give


@pytest.mark.slow
def test_generated_and_sampled_runs_of_one_profile_name_share_no_codec_row(
    descriptor_sets, tmp_path
):
    """One profile name, payloads generated in one run and read from samples in the other."""
    from test_user_schema import _document

    base = _document(descriptor_sets["bms"], BMS, profile_name="bms")
    documents = {
        "generated": base,
        "samples": dict(base, samples=samples.source_from_file(DATA / "bms_samples.jsonl")),
    }

    def codec_rows(name: str) -> set[tuple[str, identity.Identity]]:
        spec_file = tmp_path / f"{name}.json"
        spec_file.write_text(json.dumps({"schema": documents[name]}))
        out = tmp_path / name
        done = subprocess.run(
            [
                sys.executable, "-m", "evbench_agent", "run", "--spec", str(spec_file),
                "--suite", "codec", "--codecs", "json,protobuf", "--quick", "--payloads", "10",
                "--out", str(out),
            ],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        with (out / "samples.jsonl").open(encoding="utf-8") as stream:
            records = [json.loads(line) for line in stream]
        # the codec records of the profile (the machine's state per worker has none)
        measured = [r for r in records if r["suite"] == "codec" and r["profile"] is not None]
        assert {r["profile"] for r in measured} == {"bms"}
        return {(r["codec"], identity.of_record(r)) for r in measured}

    with ThreadPoolExecutor(2) as pool:  # the two runs at once: only their records count
        generated, sampled = pool.map(codec_rows, documents)
    assert generated and sampled
    assert generated.isdisjoint(sampled)
