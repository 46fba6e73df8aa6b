"""The answer per runtime: in each language, its protobuf runtimes against its JSON ones.

A verdict about "protobuf against JSON" is a verdict about one runtime, so a
run with native codecs (evbench_agent.native) gets one comparison per pair of
runtimes of the same language, named with the library and the version its
harness reported: "Protobuf (protobuf-c 1.4.1) against JSON (cJSON 1.7.15)
in C". Each is the same comparison (evbench_core.comparison) as the Python
answer's, on the same run: the codecs of a pair were measured side by side,
round by round, in the same worker processes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evbench.report import answer, table
from evbench_agent.native import runtimes
from evbench_core.comparison import Comparison, compare
from evbench_core.results import SampleSet


@dataclass(frozen=True)
class RuntimePair:
    baseline: str  # a JSON runtime
    candidate: str  # a protobuf runtime of the same language
    language: str


def pairs(codec_names: Sequence[str]) -> list[RuntimePair]:
    """Each language's (JSON, protobuf) runtime pairs among the run's codecs."""
    present = [runtimes.RUNTIMES[name] for name in codec_names if name in runtimes.RUNTIMES]
    found = []
    for json_side in (r for r in present if r.format == runtimes.JSON):
        for binary in (r for r in present if r.format == runtimes.PROTOBUF):
            if binary.language == json_side.language:
                found.append(RuntimePair(json_side.name, binary.name, json_side.language))
    return found


def label(codec: str, manifest: dict[str, Any]) -> str:
    """ "Protobuf (protobuf-c 1.4.1)": the runtime with the version its harness reported."""
    runtime = runtimes.RUNTIMES[codec]
    stated = manifest.get("platform", {}).get("native_codecs", {}).get(codec, {})
    version = stated.get("version") if isinstance(stated, dict) else None
    side = "Protobuf" if runtime.format == runtimes.PROTOBUF else "JSON"
    return f"{side} ({runtime.library}{f' {version}' if version else ''})"


def title(pair: RuntimePair, manifest: dict[str, Any]) -> str:
    candidate, baseline = label(pair.candidate, manifest), label(pair.baseline, manifest)
    return f"{candidate} against {baseline} in {pair.language}"


def comparisons(
    samples: Sequence[SampleSet], manifest: dict[str, Any], codec_names: Sequence[str]
) -> list[tuple[str, Comparison]]:
    records = list(samples)  # once: `samples` may be a generator (results.read_samples)
    return [
        (title(pair, manifest), compare(records, pair.baseline, pair.candidate))
        for pair in pairs(codec_names)
    ]


def render(
    samples: Sequence[SampleSet], manifest: dict[str, Any], codec_names: Sequence[str]
) -> str:
    """The terminal's answers and tables, one per runtime pair ('' without native codecs)."""
    parts = []
    for heading, comparison in comparisons(samples, manifest, codec_names):
        lines = answer.answer_lines(comparison) or ["no row both codecs ran."]
        parts += ["", f"The answer ({heading}, on this machine):"]
        parts += [f"- {line}" for line in lines]
        parts += ["", table.format_rows(*table.comparison_cells(comparison))]
    return "\n".join(parts)


def report_sections(
    samples: Sequence[SampleSet], manifest: dict[str, Any], codec_names: Sequence[str]
) -> list[tuple[str, list[str], list[str], list[list[str]]]]:
    """(title, paragraphs, headers, rows) of each runtime pair's report section."""
    found = []
    for heading, comparison in comparisons(samples, manifest, codec_names):
        headers, rows = table.comparison_cells(comparison)
        found.append((f"The answer: {heading}", answer.answer_lines(comparison), headers, rows))
    return found
