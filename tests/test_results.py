"""The results format: atomic files, checksums, partial runs, MAJOR.MINOR versions, and a
manifest documented key by key."""

import hashlib
import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path, PurePosixPath

import pytest
from conftest import ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from report_helpers import evbench

import evbench_agent
from evbench.usecases import deploy
from evbench_core import results
from evbench_core.errors import FormatError, UserError


def _sample(metric: str = "encode", values: tuple[float, ...] = (1.0, 2.0, 3.0), worker: int = 0):
    return results.SampleSet(
        "codec", "seed", "json", metric, "s", {"loops": 8}, list(values), worker
    )


@pytest.mark.parametrize("complete", [True, False], ids=["finished", "partial"])
def test_a_run_is_summarized_checksummed_and_marked_complete_only_if_it_is(tmp_path, complete):
    writer = results.RunWriter(tmp_path / "run", "r1")
    writer.write_manifest({"spec": {}})
    writer.add([_sample(worker=0), _sample(values=(4.0, 5.0), worker=1)])
    records = writer.finish(complete=complete)
    run = results.load_run(tmp_path / "run")
    assert run.complete is complete is (tmp_path / "run" / "complete").exists()
    assert run.records == records
    (record,) = records
    assert set(record) == set(results.RECORD_FIELDS)
    assert record["n"] == 5 and record["median"] == 3.0  # workers pooled, partial or not
    assert record["p90"] is None  # n < 100
    assert results.verify_checksums(tmp_path / "run") == []
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["format"] == results.FORMAT and summary["partial"] is not complete
    # readable like any other new file
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((tmp_path / "run" / "manifest.json").stat().st_mode) == 0o666 & ~umask


@pytest.mark.slow  # real `evbench report` and `history add` processes: seconds
def test_a_report_written_while_the_run_runs_never_enters_its_checksums(tmp_path):
    """`evbench report` of a running run wrote report.md & co., the sealing listed them in
    SHA256SUMS, and the next report broke the run's checksums for good."""
    committed = ROOT / "tests" / "data" / "runs" / "core-v1"
    manifest = json.loads((committed / "manifest.json").read_text(encoding="utf-8"))
    manifest = {k: v for k, v in manifest.items() if k not in ("format", "version", "run_id")}
    run = tmp_path / "run"
    writer = results.RunWriter(run, "r-report")  # as the agent writes it
    writer.write_manifest({**manifest, "status": "running", "end_time": None})
    writer.add(results.read_samples(committed))
    during = evbench("report", str(run))
    assert during.returncode == 4, during.stderr  # partial: not sealed yet
    assert (run / "report.md").is_file() and (run / "plots").is_dir()
    writer.write_manifest({**manifest, "status": "complete"})
    writer.finish(complete=True)
    listing = (run / "SHA256SUMS").read_text(encoding="utf-8")
    listed = [line.split("  ", 1)[1] for line in listing.splitlines()]
    assert listed == ["manifest.json", "samples.jsonl", "summary.json"]
    after = evbench("report", str(run))  # rewrites report.md, report.html, ...
    assert after.returncode == 0, after.stderr
    assert results.verify_checksums(run) == []
    added = evbench("history", "add", "--history", str(tmp_path / "h.sqlite"), str(run))
    assert added.returncode == 0, added.stderr


def test_a_used_folder_fails_write_atomic_leaves_nothing_units_closed_torn_line_skipped(tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "old").write_text("x")
    with pytest.raises(UserError, match="not empty"):
        results.RunWriter(tmp_path / "full", "r5")
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match="cannot create"):
        results.RunWriter(tmp_path / "file" / "run", "r6")
    (atomic := tmp_path / "atomic").mkdir()  # write_atomic leaves no temporary file behind
    results.write_atomic(atomic / "a.json", b"{}")
    results.write_atomic(atomic / "a.json", b"[]")
    assert sorted(p.name for p in atomic.iterdir()) == ["a.json"]
    assert (atomic / "a.json").read_bytes() == b"[]"
    bad = results.SampleSet("codec", "seed", "json", "encode", "us", {}, [1.0])
    with pytest.raises(ValueError, match="unit 'us'"):
        results.summarize([bad])
    writer = results.RunWriter(tmp_path / "run", "r3")
    writer.write_manifest({})
    writer.add([_sample()])
    with open(tmp_path / "run" / "samples.jsonl", "a") as stream:
        stream.write('{"suite": "codec", "val')  # power cut mid-line
    run = results.load_run(tmp_path / "run")  # no summary.json: rebuilt from samples
    assert [r["n"] for r in run.records] == [3]
    assert not run.complete


def _finished_run(directory):
    writer = results.RunWriter(directory, "r9")
    writer.write_manifest({"spec": {}})
    writer.add([_sample()])
    writer.finish(complete=True)
    return directory


def _summary(**fields) -> bytes:
    return json.dumps({"format": results.FORMAT, "version": results.VERSION, **fields}).encode()


# the reader on crafted files: only the project's own errors (issue 16)
DEEP = b"[" * 100_000 + b"]" * 100_000  # json.loads alone raises RecursionError
CODEC_S = {"suite": "codec", "metric": "encode", "unit": "s"}


@pytest.mark.parametrize(
    ("name", "content", "says"),
    [
        *(("manifest.json", content, says) for content, says in [
            (b"[]", "not a JSON object"),
            (b'"run"', "not a JSON object"),
            (b"3", "not a JSON object"),
            (DEEP, "nested too deeply"),
            (b'{"format": "evbench-results", "version": 1, "x": "\xff\xfe"}', "not UTF-8"),
            (b'{"format": "evbench-results", "version": [1]}', "version [1]"),
            (b'{"format": {"a": 1}, "version": 1}', "not an evbench results file"),
            (b'{"format": "other", "version": 1}', "not an evbench results file"),
            (b"{" + b'"a": 1' * 3, "not JSON"),
            (b'{"v": ' + b"9" * 5000 + b"}", "not JSON"),  # beyond int's 4300-digit limit
        ]),
        *(("summary.json", content, says) for content, says in [
            (_summary(), "no list of records"),
            (_summary(records={"a": 1}), "no list of records"),
            (_summary(records=[1]), "a record is a JSON object"),
            (_summary(records=[dict(CODEC_S, unit="furlongs")]), "furlongs"),
            (_summary(records=[{"suite": "codec", "metric": "encode"}]), "'unit' is missing"),
            (_summary(records=[dict(CODEC_S, n="3")]), "n is a whole number from 0"),
        ]),
    ],
)  # fmt: skip
def test_a_bad_manifest_or_summary_is_a_format_error(tmp_path, name, content, says):
    run = _finished_run(tmp_path / "run")
    (run / name).write_bytes(content)
    with pytest.raises(FormatError, match=re.escape(says)):
        results.load_run(run)


@pytest.mark.parametrize(
    "line",
    [
        b"not json",
        b"[1, 2]",
        b'{"suite": "codec", "metric": "encode", "unit": "us", "values": [1]}',
        b'{"suite": "codec", "metric": "encode", "unit": "s", "values": ["1"]}',
        b'{"suite": "codec", "metric": "encode", "unit": "s", "values": [1e400]}',
        b'{"suite": "codec", "metric": "encode", "unit": "s", "values": [1], "worker": "0"}',
        b'{"suite": "codec", "metric": "encode", "unit": "s", "values": [1], "params": [1]}',
        b'{"suite": "\xff", "metric": "encode", "unit": "s", "values": [1]}',
        DEEP,
    ],
)
def test_a_bad_sample_line_is_refused_or_skipped_by_policy(tmp_path, line):
    run = _finished_run(tmp_path / "run")
    (run / "summary.json").unlink()  # so load_run reads the samples
    with open(run / "samples.jsonl", "ab") as stream:
        stream.write(line + b"\n")
    with pytest.raises(FormatError, match=r"samples\.jsonl line 2 cannot be read"):
        results.load_run(run)
    problems: list[str] = []
    kept = list(results.read_samples(run, errors="skip", problems=problems))
    assert [s.values for s in kept] == [[1.0, 2.0, 3.0]]
    assert problems == ["samples.jsonl line 2 cannot be read"]


@pytest.mark.parametrize(
    "listing",
    [
        b"abc  manifest.json\n",  # short digest
        b"A" * 64 + b"  manifest.json\n",  # upper case: sha256sum writes lower
        b"a" * 64 + b" manifest.json\n",  # one space
        b"a" * 64 + b"  \n",  # no name
        b"a" * 64 + b"  .\n",
        b"a" * 64 + b"  ../outside\n",
        b"a" * 64 + b"  /etc/passwd\n",
        b"a" * 64 + b"  a//b\n",
        b"a" * 64 + b"  a\n" + b"b" * 64 + b"  a/b\n",  # a file and a directory at once
        b"a" * 64 + b"  a/b\n" + b"b" * 64 + b"  a\n",
        b"a" * 64 + b"  a\n" + b"b" * 64 + b"  a\n",
        b"a" * 64 + b"  " + b"n" * 300 + b"\n",  # a name no file system holds
        b"a" * 64 + b"  caf\xe9\n",  # not UTF-8
        b"a" * 64 + b"  tab\there\n",
        b"a" * 64 + b"  complete\n",  # the marker is never listed: it is the board's word
        b"a" * 64 + b"  SHA256SUMS\n",
    ],
)
def test_odd_checksum_listings_are_refused(listing):
    with pytest.raises(FormatError, match="SHA256SUMS from board"):
        results.parse_checksums(listing, "board")


def test_a_plain_listing_parses_verify_names_changed_missing_unlisted_reads_none_outside(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x.csv").write_bytes(b"1,2\n")
    (tmp_path / "a b.json").write_bytes(b"{}")
    written = subprocess.run(
        ["sha256sum", "a b.json", "d/x.csv"], cwd=tmp_path, capture_output=True, check=True
    ).stdout  # an independent writer of the format
    assert results.parse_checksums(written, "here") == [
        (hashlib.sha256(b"{}").hexdigest(), "a b.json"),
        (hashlib.sha256(b"1,2\n").hexdigest(), "d/x.csv"),
    ]
    assert results.parse_checksums(b"", "here") == []
    run = _finished_run(tmp_path / "run")
    secret = tmp_path / "secret"
    secret.write_bytes(b"outside the run\n")
    digest = hashlib.sha256(secret.read_bytes()).hexdigest()
    (run / "link").symlink_to(secret)
    (run / "dir").symlink_to(tmp_path, target_is_directory=True)
    listing = (run / "SHA256SUMS").read_text()
    (run / "SHA256SUMS").write_text(listing + f"{digest}  link\n{digest}  dir/secret\n")
    # Before: both matched, so the secret was read (and its existence revealed).
    assert results.verify_checksums(run) == [
        "link: not a regular file in the run directory",
        "dir/secret: not a regular file in the run directory",
    ]
    (run / "SHA256SUMS").write_text(listing + f"{digest}  ../secret\n")
    found = results.verify_checksums(run)
    (run / "SHA256SUMS").write_text(listing + f"{digest}  ../no-such-file\n")
    absent = results.verify_checksums(run)
    assert len(found) == 1 and "bad line 4" in found[0]
    assert found[0].replace("secret", "X") == absent[0].replace("no-such-file", "X")
    (run / "SHA256SUMS").write_text(listing)
    (run / "samples.jsonl").write_text("tampered\n")
    (run / "manifest.json").unlink()
    problems = results.verify_checksums(run)
    assert "samples.jsonl: checksum mismatch" in problems and "manifest.json: missing" in problems
    # An emptied SHA256SUMS listed nothing, so nothing mismatched: a changed summary.json
    # passed as verified. Each of the run's own files present must be listed.
    run = _finished_run(tmp_path / "again")
    (run / "SHA256SUMS").write_bytes(b"")
    assert results.verify_checksums(run) == [
        f"{name}: not listed in SHA256SUMS"
        for name in ("manifest.json", "summary.json", "samples.jsonl")
    ]


# property tests: whatever the bytes, a result or a FormatError
FILES = st.sampled_from(["manifest.json", "summary.json", "samples.jsonl", "SHA256SUMS"])
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=20,
)


def _mutated(original: bytes, data: st.DataObject) -> bytes:
    """The original with a slice replaced by arbitrary bytes or by some JSON."""
    start = data.draw(st.integers(0, len(original)))
    end = data.draw(st.integers(start, min(len(original), start + 40)))
    insert = data.draw(st.binary(max_size=40) | JSON_VALUES.map(lambda v: json.dumps(v).encode()))
    return original[:start] + insert + original[end:]


@pytest.fixture(scope="module")
def finished_files(tmp_path_factory) -> dict[str, bytes]:
    """A real finished run's files, written once (each example copies them)."""
    run = _finished_run(tmp_path_factory.mktemp("base") / "run")
    return {path.name: path.read_bytes() for path in run.iterdir()}


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), name=FILES)
def test_property_a_damaged_run_reads_or_is_refused(tmp_path_factory, finished_files, data, name):
    run = tmp_path_factory.mktemp("prop")
    for file_name, content in finished_files.items():
        (run / file_name).write_bytes(content)
    path = run / name
    path.write_bytes(_mutated(path.read_bytes(), data))
    try:
        loaded = results.load_run(run)
    except FormatError:
        pass
    else:
        for record in loaded.records:
            assert record["unit"] in results.UNITS
    problems: list[str] = []
    list(results.read_samples(run, errors="skip", problems=problems))
    assert all(isinstance(problem, str) for problem in results.verify_checksums(run))


@settings(max_examples=150, deadline=None)
@given(
    listing=st.binary(max_size=300)
    | st.lists(st.text(max_size=20)).map(
        lambda names: "".join(f"{'a' * 64}  {n}\n" for n in names).encode("utf-8", "surrogatepass")
    )
)
def test_property_every_name_a_listing_gives_stays_inside_the_run(listing):
    root = PurePosixPath("/run")
    try:
        entries = results.parse_checksums(listing, "board")
    except FormatError:
        return
    names = [name for _digest, name in entries]
    assert len(names) == len(set(names))
    for name in names:
        inside = root / name
        assert ".." not in inside.parts and inside.is_relative_to(root) and inside != root
        assert not any(other.startswith(name + "/") for other in names)


DOC = ROOT / "docs" / "results-format.md"
GOLDEN = ROOT / "tests" / "data" / "runs"


def _write(run: Path, version: object) -> None:
    """A copy of a golden run (written by an evbench of format 1) with another version."""
    for name in ("manifest.json", "summary.json"):
        document = json.loads((GOLDEN / "core-v1" / name).read_text(encoding="utf-8"))
        document["version"] = version
        (run / name).write_text(json.dumps(document), encoding="utf-8")


MALFORMED = ["1", "1.", ".1", "1.1.1", "01.1", "1.01", "v1.1", " 1.1", 1.1, True, None, -1]
NEWER = "a newer evbench wrote this run (format {}): update evbench to read it"
OLDER = (
    "an older evbench wrote this run (format {}) and this one does not convert it: read it "
    "with the evbench that wrote it, or measure again"
)
DAMAGED = "the file is damaged or not written by evbench: measure again"


@pytest.mark.parametrize(
    ("version", "hint"),
    # every minor of a known major, and the integer runs written before minors still say;
    # what to do about another depends on its age
    [(v, None) for v in (1, "1.0", "1.1", "1.7", "1.123456")]
    + [(v, NEWER) for v in ("2.0", "2.3", 2, "10.1")]
    + [(v, OLDER) for v in (0, "0.9")]
    + [(v, DAMAGED) for v in MALFORMED],  # damage, not an age
)
def test_a_minor_reads_another_major_is_named_by_age_a_malformed_is_damage(tmp_path, version, hint):
    _write(tmp_path, version)
    if hint is None:
        run = results.load_run(tmp_path)
        assert run.manifest["version"] == version and run.records
        return
    with pytest.raises(FormatError) as raised:
        results.load_run(tmp_path)
    assert raised.value.hint == hint.format(version)
    message = str(raised.value)
    assert f"results format version {version!r}" in message and "reads 1.x" in message
    assert "\n" not in message


def _tables(section: str) -> list[dict[str, str]]:
    """Each markdown table of `section` as {first-column name: the row's content}."""
    tables: list[dict[str, str]] = []
    rows: dict[str, str] | None = None
    for line in section.splitlines():
        if not line.startswith("|"):
            rows = None
            continue
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if rows is None:
            rows = {}
            tables.append(rows)  # the header row
            continue
        if set(cells[0]) <= {"-", " "}:
            continue
        for name in re.findall(r"`([a-z_]+)`", cells[0]):
            rows[name] = cells[1]
    return tables


def _documented() -> list[dict[str, str]]:
    """The manifest's top-level keys and its platform section's keys, as documented."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index("\n## The manifest\n")
    end = text.find("\n## ", start + 1)
    return _tables(text[start : end if end != -1 else len(text)])[:2]


def test_a_real_run_writes_only_documented_keys_and_the_writer_no_other(tmp_path):
    # a real, small A/A run of the agent (the A/A section and its result)
    argv = "run --suite codec --profile int --aa json --processes 2 --values 1 --payloads 5"
    argv = [sys.executable, "-m", "evbench_agent", *argv.split(), "--min-time", "0.0001"]
    out = tmp_path / "aa"
    done = subprocess.run([*argv, "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    real_manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    top, platform = _documented()
    assert set(real_manifest) <= set(top), sorted(set(real_manifest) - set(top))
    assert set(real_manifest["platform"]) <= set(platform)
    # the sections documented inline name each of their keys
    for section in ("board_identity", "memory", "aa"):
        for key in real_manifest[section]:
            assert re.search(rf"\b{key}\b", top[section]), (section, key)
    for key in real_manifest["aa"]["result"]:
        assert re.search(rf"\b{key}\b", top["aa"]), key
    for key in real_manifest["platform"]["clock"]:
        assert re.search(rf"\b{key}\b", platform["clock"]), key
    assert results.parse_version(real_manifest["version"]) >= (1, 1)
    # Optional keys (arms, lab, notes, reason, source) appear in few runs: the writer's list
    # is checked to be the documented one, and a key outside it refused.
    assert sorted(results.MANIFEST_KEYS) == sorted(top)
    writer = results.RunWriter(tmp_path / "run", "r1")
    writer.release_reserve()
    with pytest.raises(ValueError, match="'bogus'"):
        writer.write_manifest({"status": "running", "bogus": 1})
    assert not (tmp_path / "run" / "manifest.json").exists()


@pytest.mark.parametrize(
    ("results_format", "usable"),
    [(1, True), ("1.0", True), ("1.9", True), ("2.0", False), (2, False), ("x", False)],
)
def test_a_board_agent_is_usable_when_the_host_reads_its_format(results_format, usable):
    """An image's agent written before minors says 1; a newer minor is still read."""
    info = {"agent": evbench_agent.__version__, "results_format": results_format}
    assert deploy.compatible(info) is usable
