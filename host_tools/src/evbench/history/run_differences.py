"""What differs between two runs of the history: versions, sample plan, environment.

A change point is only useful with what moved with it: a new protobuf, another
kernel, a quicker sample plan or a CPU governor that changed explain a moved
figure before anyone reads the code. These functions read them from two history
rows (their columns and their manifest's JSON), and refuse a damaged row with
`FormatError` rather than guess: `version_changes` names every field that
differs, `plan` a run's sample plan in a few words, `codec_versions` and
`environment` the parts they are made of.
"""

from __future__ import annotations

import json
from typing import Any

from evbench_core import results
from evbench_core.errors import FormatError

#: The run fields whose change a change point reports.
VERSION_FIELDS = ("image", "kernel", "python", "protobuf", "protobuf_backend", "agent")
#: The spec keys that make a run's sample plan: nights with other plans measure differently.
PLAN_KEYS = ("quick", "processes", "values", "warmups", "min_time", "payloads", "seed")


def _malformed(run: dict[str, Any], what: str) -> FormatError:
    run_id = run.get("run_id")
    named = f" (run {run_id})" if isinstance(run_id, str) else ""
    return FormatError(
        f"a history row{named} is malformed: {what}",
        hint="the store was damaged or edited by hand: it is left as it is",
    )


def _json_object(run: dict[str, Any], column: str) -> dict[str, Any]:
    """A row's JSON column (manifest, codec_versions) as an object, or FormatError."""
    text = run.get(column)
    if text is None:
        return {}
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except (ValueError, RecursionError):
        value = None
    if not isinstance(value, dict):
        raise _malformed(run, f"{column} is not a JSON object")
    return value


def _spec(run: dict[str, Any]) -> dict[str, Any]:
    """The plan keys of the run's manifest spec, each of its type (FormatError if not)."""
    spec = _json_object(run, "manifest").get("spec")
    if spec is None:
        return {}
    if not isinstance(spec, dict):
        raise _malformed(run, "manifest.spec is not an object")
    for key in PLAN_KEYS:
        value = spec.get(key)
        fits = isinstance(value, bool) if key == "quick" else results.is_value(value)
        if value is not None and not fits:
            kind = "true or false" if key == "quick" else "a number"
            raise _malformed(run, f"manifest.spec.{key} is not {kind}: {value!r:.40}")
    return spec


def plan(run: dict[str, Any]) -> str:
    """The run's sample plan in a few words, from its manifest's spec."""
    spec = _spec(run)
    given = [f"{key}={spec[key]}" for key in PLAN_KEYS if spec.get(key) not in (None, False)]
    return " ".join(given) or "full"


def codec_versions(run: dict[str, Any]) -> dict[str, str | None]:
    """Each codec's library version the run recorded (text or null, FormatError if not)."""
    versions = _json_object(run, "codec_versions")
    for codec, version in versions.items():
        if version is not None and not isinstance(version, str):
            raise _malformed(run, f"codec_versions.{codec} is not text: {version!r:.40}")
    return versions


#: The machine's state a run records (manifest platform, telemetry): not versions, but
#: a change in them explains a moved figure as well as a new protobuf does.
ENVIRONMENT_FIELDS = (
    ("platform", "cpu_model"),
    ("platform", "cpu_count"),
    ("platform", "affinity"),
    ("platform", "python_implementation"),
    ("platform", "clock", "clocksource"),
    ("platform", "clock", "timer"),
    ("telemetry", "governor"),
    ("telemetry", "throttled_phases"),
    ("gc",),
)


def _dig(document: dict[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = document  # any JSON value, once a step down
    for name in path:
        if not isinstance(value, dict):
            return None
        value = value.get(name)
    return value


def environment(manifest: dict[str, Any]) -> dict[str, str | None]:
    """The run's environment fields (ENVIRONMENT_FIELDS) as short text."""
    found = {}
    for path in ENVIRONMENT_FIELDS:
        value = _dig(manifest, path)
        found[".".join(path[1:] if path[0] == "platform" else path)] = (
            None if value is None else json.dumps(value) if isinstance(value, list) else str(value)
        )
    return found


def version_changes(
    before: dict[str, Any], after: dict[str, Any]
) -> dict[str, tuple[str | None, str | None]]:
    """The version fields (each codec's version, the sample plan) and the environment
    fields (CPU, affinity, clock, governor, throttling) that differ between runs."""
    moved = {}
    for name in VERSION_FIELDS:
        if before.get(name) != after.get(name):
            moved[name] = (before.get(name), after.get(name))
    codecs_before, codecs_after = codec_versions(before), codec_versions(after)
    for codec in sorted(set(codecs_before) | set(codecs_after)):
        if codec != "protobuf" and codecs_before.get(codec) != codecs_after.get(codec):
            moved[f"codec {codec}"] = (codecs_before.get(codec), codecs_after.get(codec))
    if "manifest" in before and "manifest" in after:
        if plan(before) != plan(after):
            moved["plan"] = (plan(before), plan(after))
        env_before = environment(_json_object(before, "manifest"))
        env_after = environment(_json_object(after, "manifest"))
        for name, value in env_before.items():
            if value != env_after[name]:
                moved[name] = (value, env_after[name])
    return moved
