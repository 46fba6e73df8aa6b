"""LAVA's results back into ordinary run directories (report, compare, history read them).

Two sources, best first:

- the run directory the test definition uploaded (a .tar.gz of the board's
  run): unpacked member by member (plain files and directories only, names
  that stay inside), its SHA256SUMS verified; it keeps the raw samples;
- the job's test cases (``lavacli results JOB --yaml``, or the REST API's
  ``/api/v0.2/jobs/JOB/tests/`` JSON, a page or a list of pages): one summary record per
  record case (its MEASUREMENT is the board's median, so n is 1 and there are
  no raw samples: no verdict can be drawn from it), the verdict cases and the
  run's completeness kept in ``lava.json``.

Either way the directory gains ``lava.json`` (the job, where the results came
from, the verdict cases): the host's note, not listed in the board's SHA256SUMS.
"""

from __future__ import annotations

import json
import secrets
import shutil
import tarfile
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from evbench import yaml_errors
from evbench_agent import registry
from evbench_agent.integrations import lava_units
from evbench_core import results
from evbench_core.errors import CheckFailed, FormatError, UserError
from evbench_core.regular_file import read_regular

NOTE = "lava.json"
#: Bounds on what a results file may hold (it comes from a server).
MAX_CASES = 100_000
MAX_ARCHIVE_BYTES = 1 << 30
#: MAX_CASES test cases of a few hundred bytes each, with room to spare.
MAX_RESULTS_BYTES = 64 << 20


def _inside(name: str) -> bool:
    """A plain relative name that stays in the run directory."""
    parts = name.split("/")
    return (
        len(name) <= 1024
        and not name.startswith("/")
        and "" not in parts
        and not any(part in (".", "..") for part in parts)
    )


def _note(directory: Path, document: dict[str, Any]) -> None:
    results.write_json(directory / NOTE, document)


def _unpack(archive: Path, directory: Path) -> None:
    """The archive's plain files and directories into `directory`; FormatError on any
    other member, a name that climbs out, or more than MAX_ARCHIVE_BYTES."""
    try:
        with tarfile.open(archive, "r:gz") as tar:
            total = 0
            for member in tar:
                name = member.name.removeprefix("./")
                if not name or name == ".":
                    continue
                if not (member.isfile() or member.isdir()) or not _inside(name):
                    raise FormatError(f"{archive}: refusing member {member.name[:100]!r}")
                total += member.size
                if total > MAX_ARCHIVE_BYTES:
                    raise FormatError(f"{archive}: more than {MAX_ARCHIVE_BYTES} bytes unpacked")
                target = directory / name
                if member.isdir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(member)
                if source is None:
                    raise FormatError(f"{archive}: cannot read {name!r}")
                with source, open(target, "xb") as sink:
                    shutil.copyfileobj(source, sink, 1 << 20)
    except (tarfile.TarError, EOFError, OSError) as error:
        raise FormatError(f"{archive}: not a readable .tar.gz ({error})") from None


def from_upload(archive: Path, out: Path, job: str) -> Path:
    """Unpack an uploaded run directory and verify it against its SHA256SUMS; `out`
    holds it only once it verifies.

    It is unpacked into a directory of its own beside `out` and renamed to `out` when
    it verifies: a refused upload (damaged, tampered with, not an archive) leaves no
    `out`, or the empty one that was there, never a run `report` would read."""
    if out.exists():
        results.prepare_output(out)  # only an empty directory: refused before unpacking
    staging = out.parent / f".{out.name}.{secrets.token_hex(4)}.unpacking"
    try:
        staging.mkdir(parents=True)
    except OSError as error:
        raise UserError(
            f"cannot create the output directory {out}: {error.strerror}",
            hint="choose another --out",
        ) from error
    try:
        _unpack(archive, staging)
        problems = results.verify_checksums(staging)
        if problems:
            # A bad listing is named as the archive's, not by the directory about to go.
            problem = problems[0].replace(str(staging), str(archive))
            raise CheckFailed(
                f"the uploaded run does not match its SHA256SUMS: {problem}",
                hint="the upload was damaged or changed on the way; nothing of it was kept",
            )
        _note(staging, {"job": job, "source": "uploaded run directory", "archive": archive.name})
        try:
            staging.rename(out)  # replaces an empty `out`; refused if it is no longer empty
        except OSError as error:
            raise UserError(
                f"cannot write the output directory {out}: {error.strerror}",
                hint="choose a new --out; runs are never written over",
            ) from error
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out


def _pages(document: Any) -> Any:
    """The cases of a REST page ({"count", "next", "results"}) or a list of pages."""
    if isinstance(document, dict) and isinstance(document.get("results"), list):
        return document["results"]
    pages = isinstance(document, list) and document and all(isinstance(p, dict) for p in document)
    if pages and all(isinstance(page.get("results"), list) for page in document):
        return [case for page in document for case in page["results"]]
    return document


def _parse(text: str, source: Path) -> Any:
    """The YAML (or JSON) document of a results file, any alias in it refused.

    LAVA writes no anchors or aliases; refusing aliases refuses every document that a
    few lines expand into 10^9 items (nested aliases, "billion laughs"), before any is
    expanded.
    """
    import yaml  # a host dependency of the report's exports already; only needed here

    class NoAliasLoader(yaml.SafeLoader):
        def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
            if self.check_event(yaml.AliasEvent):
                mark = self.peek_event().start_mark
                problem = "a YAML alias (LAVA writes none)"
                raise yaml.composer.ComposerError(None, None, problem, mark)
            return super().compose_node(parent, index)

    try:
        return yaml.load(text, Loader=NoAliasLoader)  # a SafeLoader: plain data only
    except yaml.YAMLError as error:
        why = yaml_errors.one_line(error, text)
        raise FormatError(f"cannot read LAVA results {source}: {why}") from None
    except (ValueError, RecursionError) as error:
        # ValueError: an integer of thousands of digits or a date that is none;
        # RecursionError: lists nested thousands deep.
        problem = next(iter(str(error).splitlines()), type(error).__name__)
        raise FormatError(f"cannot read LAVA results {source}: {problem:.200}") from None


def _read_cases(results_file: Path) -> list[dict[str, Any]]:
    """The test cases of a results file, but LAVA's own."""
    # A regular file only (a FIFO would block, a device never end), read to a cap.
    data = read_regular(results_file, MAX_RESULTS_BYTES, "LAVA results file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise FormatError(f"cannot read LAVA results {results_file}: {error.reason}") from None
    document = _parse(text, results_file)
    return [c for c in _cases(document, results_file) if c.get("suite") != "lava"]


def _cases(document: Any, source: Path) -> list[dict[str, Any]]:
    document = _pages(document)
    if not isinstance(document, list) or len(document) > MAX_CASES:
        raise FormatError(f"{source}: expected a list of LAVA test cases")
    cases = []
    for case in document:
        if not isinstance(case, dict) or not isinstance(case.get("name"), str):
            raise FormatError(f"{source}: a test case without a name: {str(case)[:100]}")
        cases.append(case)
    return cases


def _named(case: dict[str, Any]) -> str:
    return f"test case {case['name']!r:.100}"


def _field(case: dict[str, Any], key: str) -> Any:
    """A case's field that is one value (text, a number, true/false or null) in LAVA's
    results; a list or mapping there is refused, never turned into text: it may be huge."""
    value = case.get(key)
    if value is None or isinstance(value, (str, int, float)):
        return value
    kind = "mapping" if isinstance(value, dict) else type(value).__name__
    raise FormatError(f"{_named(case)}: its {key} is a {kind}, not one value")


def _measurement(case: dict[str, Any]) -> float | None:
    value = _field(case, "measurement")
    if value in (None, "", "None"):
        return None
    try:
        number = Decimal(str(value))
    except (InvalidOperation, ValueError):
        raise FormatError(f"{_named(case)}: measurement {value!r:.100}") from None
    if not number.is_finite():
        return None  # the agent sends no measurement for a NaN: one that came is no number
    measured = float(number)
    # Refused here, naming the case, rather than imported for `report` to refuse the run.
    if not results.is_value(measured):
        raise FormatError(
            f"{_named(case)}: measurement {value!r:.40} is beyond {results.MAX_VALUE:g}, "
            "the largest a results file holds"
        )
    return measured


def _record(case: dict[str, Any]) -> dict[str, Any] | None:
    """A summary record from a passed, measured case whose id is
    `suite.profile.codec.metric[.phase].hash`; None for any other case (not evbench's:
    its measurement is left unchecked)."""
    parts = case["name"].split(".")
    if len(parts) < 5 or parts[0] not in registry.RECORD_SUITES:
        return None
    if _field(case, "result") != "pass" or (value := _measurement(case)) is None:
        return None
    suite, profile, codec, metric, *rest = parts
    # lavacli and the REST API v0.2 say "unit"; the older REST API said "units".
    spelling = str(_field(case, "unit") or _field(case, "units") or "")
    try:
        unit = lava_units.from_lava(spelling)
    except lava_units.UnknownUnit as error:
        raise FormatError(f"{_named(case)}: {error}") from None
    if unit not in results.UNITS:
        raise FormatError(f"{_named(case)}: unit {unit!r} is not a record's")
    # The id's last part is the hash of the identity's params, the same for every codec:
    # it keeps records of different settings apart and pairs the codecs of one setting.
    params: dict[str, Any] = {"lava_identity": rest[-1]}
    if len(rest) > 1:
        params["phase"] = rest[0]
    return {
        "suite": suite,
        "profile": None if profile == "all" else profile,
        "codec": None if codec == "all" else codec,
        "metric": metric,
        "unit": unit,
        "params": params,
        "n": 1,
        "mean": value,
        "median": value,
        "stdev": 0.0,
        "min": value,
        "max": value,
        "ci95_low": None,
        "ci95_high": None,
    }


def from_test_cases(results_file: Path, out: Path, job: str) -> Path:
    """A run directory from the job's test cases (YAML or JSON, as lavacli prints them)."""
    records, verdicts, complete = [], [], False
    for case in _read_cases(results_file):
        name = case["name"]
        if name == "run.complete":
            complete = _field(case, "result") == "pass"
        elif name.startswith("verdict."):
            verdicts.append({k: _field(case, k) for k in ("name", "result", "measurement")})
        elif (record := _record(case)) is not None:
            records.append(record)
    if not records:
        raise UserError(
            f"{results_file} holds no evbench test cases",
            hint="is it the results of a job that ran lava/evbench.yaml?",
        )
    run_id = f"lava-{job}"
    manifest = {
        "format": results.FORMAT,
        "version": results.VERSION,
        "run_id": run_id,
        "quick": None,
        "spec": {},
        "source": {"lava": {"job": job, "from": "test cases"}},
    }
    results.check_manifest_keys(manifest)
    summary = {
        "format": results.FORMAT,
        "version": results.VERSION,
        "run_id": run_id,
        "partial": not complete,
        "records": records,
    }
    # Every check the reading side makes, before --out is made: a refused file leaves
    # nothing behind, and nothing is written that `report` would refuse.
    results.read_records(summary, results_file)
    results.prepare_output(out)
    results.write_json(out / results.MANIFEST, manifest)
    results.write_json(out / results.SUMMARY, summary)
    # No raw samples came back (a test case holds one number): an empty samples file
    # says so, where a missing one would mean a run cut short.
    results.write_atomic(out / results.SAMPLES, b"")
    results.write_checksums(out)
    _note(out, {"job": job, "source": "test cases", "verdicts": verdicts, "complete": complete})
    # The marker last: it says the directory holds everything.
    if complete:
        results.write_atomic(out / results.COMPLETE, b"")
    return out


def describe(directory: Path) -> str:
    note = json.loads((directory / NOTE).read_text(encoding="utf-8"))
    return f"LAVA job {note['job']} ({note['source']}) -> {directory}"
