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
import math
import shutil
import tarfile
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from evbench_agent import registry
from evbench_agent.integrations import lava_units
from evbench_core import results
from evbench_core.errors import CheckFailed, FormatError, UserError

NOTE = "lava.json"
#: Bounds on what a results file may hold (it comes from a server).
MAX_CASES = 100_000
MAX_ARCHIVE_BYTES = 1 << 30


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


def from_upload(archive: Path, out: Path, job: str) -> Path:
    """Unpack an uploaded run directory into `out` and verify it against its SHA256SUMS."""
    results.prepare_output(out)
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
                target = out / name
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
    problems = results.verify_checksums(out)
    if problems:
        raise CheckFailed(
            f"the uploaded run does not match its SHA256SUMS: {problems[0]}",
            hint="the upload was damaged or changed on the way; nothing else was trusted",
        )
    _note(out, {"job": job, "source": "uploaded run directory", "archive": archive.name})
    return out


def _pages(document: Any) -> Any:
    """The cases of a REST page ({"count", "next", "results"}) or a list of pages."""
    if isinstance(document, dict) and isinstance(document.get("results"), list):
        return document["results"]
    pages = isinstance(document, list) and document and all(isinstance(p, dict) for p in document)
    if pages and all(isinstance(page.get("results"), list) for page in document):
        return [case for page in document for case in page["results"]]
    return document


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


def _measurement(case: dict[str, Any]) -> float | None:
    value = case.get("measurement")
    if value in (None, "", "None"):
        return None
    try:
        number = float(Decimal(str(value)))
    except (InvalidOperation, ValueError):
        raise FormatError(f"test case {case['name']!r}: measurement {value!r}") from None
    return number if math.isfinite(number) else None


def _record(case: dict[str, Any], value: float) -> dict[str, Any] | None:
    """A summary record from a record case id `suite.profile.codec.metric[.phase].hash`."""
    parts = case["name"].split(".")
    if len(parts) < 5 or parts[0] not in registry.RECORD_SUITES:
        return None
    suite, profile, codec, metric, *rest = parts
    # lavacli and the REST API v0.2 say "unit"; the older REST API said "units".
    spelling = str(case.get("unit") or case.get("units") or "")
    try:
        unit = lava_units.from_lava(spelling)
    except lava_units.UnknownUnit as error:
        raise FormatError(f"test case {case['name']!r}: {error}") from None
    if unit not in results.UNITS:
        raise FormatError(f"test case {case['name']!r}: unit {unit!r} is not a record's")
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
    import yaml  # a host dependency of the report's exports already; only needed here

    try:
        document = yaml.safe_load(results_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise UserError(f"cannot read LAVA results {results_file}: {error}") from None
    cases = [c for c in _cases(document, results_file) if c.get("suite") != "lava"]
    records, verdicts, complete = [], [], False
    for case in cases:
        name = case["name"]
        if name == "run.complete":
            complete = case.get("result") == "pass"
        elif name.startswith("verdict."):
            verdicts.append({k: case.get(k) for k in ("name", "result", "measurement")})
        elif case.get("result") == "pass" and (value := _measurement(case)) is not None:
            record = _record(case, value)
            if record is not None:
                records.append(record)
    if not records:
        raise UserError(
            f"{results_file} holds no evbench test cases",
            hint="is it the results of a job that ran lava/evbench.yaml?",
        )
    results.prepare_output(out)
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
    results.write_json(out / results.MANIFEST, manifest)
    summary = {
        "format": results.FORMAT,
        "version": results.VERSION,
        "run_id": run_id,
        "partial": not complete,
        "records": records,
    }
    results.write_json(out / results.SUMMARY, summary)
    # No raw samples came back (a test case holds one number): an empty samples file
    # says so, where a missing one would mean a run cut short.
    results.write_atomic(out / results.SAMPLES, b"")
    results.write_checksums(out)
    if complete:
        results.write_atomic(out / results.COMPLETE, b"")
    _note(out, {"job": job, "source": "test cases", "verdicts": verdicts, "complete": complete})
    return out


def describe(directory: Path) -> str:
    note = json.loads((directory / NOTE).read_text(encoding="utf-8"))
    return f"LAVA job {note['job']} ({note['source']}) -> {directory}"
