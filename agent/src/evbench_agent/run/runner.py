"""Runs the suites of a spec into a results directory, complete or partial."""

from __future__ import annotations

import datetime
import logging
import os
import signal
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from evbench_agent import codecs, registry
from evbench_agent.platform import board_identity, memory
from evbench_agent.processes import child_exit, workers
from evbench_agent.progress import Progress
from evbench_agent.run import platform_info
from evbench_agent.spec import Spec
from evbench_agent.suites import RunContext
from evbench_agent.telemetry.session import TelemetrySession
from evbench_core import comparison, interrupts, results, sequential
from evbench_core.analysis import identity
from evbench_core.errors import PartialRun
from evbench_core.results import RunWriter
from evbench_core.write_failures import WriteFailed

log = logging.getLogger(__name__)


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds")


class _Stop:
    """The run's handler of Ctrl-C, SIGTERM and SIGHUP: the first stops the run as Ctrl-C
    does. Any after it, and any while the run is sealed, is noted and ignored: cut short,
    the seal would leave the run "running", without its summary and checksums (`timeout`
    signals the process and then its group; an impatient user presses Ctrl-C again)."""

    def __init__(self) -> None:
        self.stopping = False

    def __call__(self, signum: int, _frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if self.stopping:
            log.warning("%s received while the run is being stopped and sealed: ignored", name)
            return
        self.stopping = True
        raise KeyboardInterrupt(name)


def _stop_telemetry(
    telemetry: TelemetrySession, writer: RunWriter, manifest: dict[str, Any]
) -> None:
    """Stop the sampler and add the per-phase records; a failure here loses no samples."""
    try:
        sample_sets, facts = telemetry.stop()
        writer.add(sample_sets)
    except Exception as error:  # the measured samples matter more than their telemetry
        facts = {"error": f"{type(error).__name__}: {error}"}
    manifest["telemetry"].update(telemetry.manifest(), **facts)


def _seal(writer: RunWriter, manifest: dict[str, Any]) -> None:
    """Write the final manifest, summary and checksums; a run whose summary finds no
    room is still marked partial, never left "running" or "complete" without them."""
    writer.write_manifest(manifest)
    try:
        writer.finish(complete=manifest["status"] == "complete")
    except WriteFailed as error:
        manifest.update(status="partial", reason=str(error))
        writer.write_manifest(manifest)
        raise PartialRun(f"{error}; the samples are kept as partial", hint=error.hint) from error


def aa_result(aa: str, directory: Path) -> dict[str, Any]:
    """What an A/A run of codec `aa` found: its tested rows, and those that named a winner.

    Without a testing slowdown both arms are the same code, so every winner is
    a false one; the lab's false-winner rate is the share of runs with any.
    """
    try:
        found = comparison.compare(results.read_samples(directory), aa, codecs.copy_name(aa))
    except Exception as error:  # the measured samples matter more than this summary
        return {"error": f"{type(error).__name__}: {error}"}
    tested = found.by_role(identity.TESTED)
    return {
        "tested_rows": len(tested),
        "too_small": sum(row.too_small for row in tested),
        "winners": [
            {
                "label": row.label,
                "family": row.family,
                "winner": row.verdict.winner,
                "pct_diff": row.verdict.pct_diff,
                "p_holm": row.verdict.p_holm,
            }
            for row in found.winners()
            if row.verdict is not None  # a winner has one
        ],
    }


def describe_plan(planned: dict[str, float], spec: Spec) -> str:
    """The run's planned duration, said before it starts: in total and per suite."""
    parts = ", ".join(f"{suite} {seconds:.0f} s" for suite, seconds in planned.items())
    text = f"planned duration: about {sum(planned.values()):.0f} s ({parts})"
    if spec.cool_to is not None:
        text += f", plus waits to cool to {spec.cool_to:g} °C"
    return text


def run_suites(context: RunContext, suites: Sequence[str]) -> None:
    """Measure each of `suites`, in the spec's order."""
    spec = context.spec
    for suite in suites:
        log.info("suite %s: started", suite)
        context.mark("start", suite=suite)
        suite_module = registry.load(suite)
        if suite == "codec" and spec.arms:  # --arm: the codec suite under each environment
            from evbench_agent.suites import codec_arms as suite_module
        suite_module.run(context)
        context.mark("end", suite=suite)
        log.info("suite %s: finished", suite)


def run_until_decided(context: RunContext, manifest: dict[str, Any], stage_s: float) -> None:
    """`--until-decided`: stages of the plan until every tested row of the answer's pair
    is decided or the next stage would pass the budget (evbench_core.sequential). The
    manifest's `sequential` records each look and the alpha it spent, from which any
    reader replays the verdicts (comparison.compare_run)."""
    spec, writer, progress = context.spec, context.writer, context.progress
    pair = comparison.answer_pair(spec.codecs, spec.aa)
    assert pair is not None  # spec.from_dict refuses --until-decided without two codecs
    record: dict[str, Any] = {
        "pair": list(pair),
        "budget_s": spec.budget_s,
        "planned_stage_s": round(stage_s, 1),
        "spending": sequential.SPENDING,
        "looks": [],
        "decided": False,
    }
    manifest["sequential"] = record
    chosen = comparison.margins_of({"spec": spec.as_dict()})
    suites = list(spec.suites)
    alphas: list[float] = []
    started = time.monotonic()
    for look in range(1, sequential.MAX_LOOKS + 1):
        writer.stage = look
        progress.message(f"stage {look}: {', '.join(suites)}")
        stage_started = time.monotonic()
        run_suites(context, suites)
        took = time.monotonic() - stage_started
        elapsed = time.monotonic() - started
        # the next stage measures at most these suites: it takes about this one's time
        final = look == sequential.MAX_LOOKS or elapsed + took > spec.budget_s
        alphas.append(sequential.next_alpha(alphas, elapsed, spec.budget_s, final))
        found = comparison.compare_looks(
            results.read_samples(writer.directory), *pair, alphas, chosen
        )
        opened = sequential.open_rows(found)
        record["looks"].append(
            {
                "look": look,
                "alpha": alphas[-1],
                "suites": suites,
                "seconds": round(took, 1),
                "elapsed_s": round(elapsed, 1),
                "open": len(opened),
            }
        )
        writer.write_manifest(manifest)
        if not opened:
            record["decided"] = True
            progress.message(f"look {look}: every tested row decided ({elapsed:.0f} s)")
            break
        if final:
            progress.message(f"look {look}: {len(opened)} rows still open; the budget is spent")
            break
        progress.message(f"look {look}: {len(opened)} rows still open ({elapsed:.0f} s)")
        suites = [s for s in spec.suites if s in sequential.suites_to_grow(found)]


def _begin(
    spec: Spec,
    writer: RunWriter,
    arm_versions: dict[str, Any] | None,
    notes: list[str],
    progress: Progress,
) -> tuple[dict[str, Any], dict[str, float], TelemetrySession]:
    """The run's first manifest, written once the plan and telemetry are settled: from
    then on the directory is a run (partial at worst)."""
    directory = writer.directory
    manifest: dict[str, Any] = {
        "spec": spec.as_dict(),
        "quick": spec.quick,
        "start_time": _now(),
        "end_time": None,
        "status": "running",
        "platform": platform_info.collect(),
        # Survives reflashing, unlike the hostname (the results history's board).
        "board_identity": board_identity.identify(spec.board_name, spec.board_place),
        "gc": "enabled" if spec.gc else "disabled during timing (--no-gc)",
        "affinity": spec.cpu,
        # An A/A control run: which codec, its copy, and the copy's testing slowdown.
        "aa": (
            {"codec": spec.aa, "copy": codecs.copy_name(spec.aa), "slowdown": spec.aa_slowdown}
            if spec.aa
            else None
        ),
        "pid": os.getpid(),
        "memory": memory.before_run(),
    }
    if arm_versions is not None:  # --arm: what each arm ran (Python, protobuf, codecs)
        manifest["arms"] = arm_versions
    if spec.lab is not None:  # the labgrid place, exporters, resources and tags
        manifest["lab"] = spec.lab
    if notes:  # what the suites said before the run (e.g. a bus that cannot carry the rate)
        manifest["notes"] = notes
    from evbench_agent.run import plan_probe  # the plan from a measured probe, then an ETA

    planned = plan_probe.planned_seconds(spec)
    manifest["planned_seconds"] = {suite: round(seconds, 1) for suite, seconds in planned.items()}
    progress.message(describe_plan(planned, spec))
    progress.plan(planned)
    telemetry = TelemetrySession(spec, directory, progress)  # refuses bad settings first
    manifest["telemetry"] = telemetry.manifest()
    writer.write_manifest(manifest)
    return manifest, planned, telemetry


def run(spec: Spec, directory: Path, run_id: str, progress: Progress) -> None:
    """Measure every suite of `spec` into `directory`.

    SIGTERM and SIGHUP are handled like Ctrl-C (evbench_core.interrupts). Whatever
    stops the run, the samples measured so far are kept, summarized and checksummed,
    and the run is left without its `complete` marker.
    """
    notes = registry.preflight(spec)  # before anything is written: may refuse the run
    arm_versions = None
    if spec.arms:  # each arm's interpreter answers its versions, or refuses the run here
        from evbench_agent import arms

        arm_versions = arms.probe_all(spec.arms, list(spec.codecs))
    for note in notes:
        log.warning("%s", note)
    stop = _Stop()
    # SIGTERM and SIGHUP, unless ignored on entry (`nohup evbench-agent run &`).
    previous = interrupts.handle(stop)
    # The host stops a run with SIGINT (or SIGTERM), during its probe too: handled even
    # when ignored on entry, as it is in a background job of a script, which would else
    # run on to the end.
    previous[signal.SIGINT] = signal.signal(signal.SIGINT, stop)
    made = not directory.exists()  # else the host made it, and takes it back itself
    try:
        writer = RunWriter(directory, run_id)
        manifest, planned, telemetry = _begin(spec, writer, arm_versions, notes, progress)
    except BaseException:  # stopped before the run began (even in the writer's making)
        interrupts.restore(previous)
        results.abandon(directory, made)
        raise
    status = "interrupted"
    try:
        telemetry.start()
        context = RunContext(spec, writer, progress, telemetry.mark)
        if spec.until_decided:
            run_until_decided(context, manifest, sum(planned.values()))
        else:
            run_suites(context, spec.suites)
        status = "complete"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    except PartialRun as error:  # a suite cut short (its worker or responder died)
        status = "partial"
        manifest["reason"] = str(error)
        raise
    except WriteFailed as error:  # a full disk: what was written is kept, marked partial
        status = "partial"
        manifest["reason"] = str(error)
        writer.release_reserve()  # room for the manifest and summary that say so
        raise PartialRun(
            f"{error}; the samples written before are kept as partial", hint=error.hint
        ) from error
    except BaseException:
        status = "failed"
        raise
    finally:
        stop.stopping = True  # from here a stop signal cannot cut the seal short (_Stop)
        try:
            _stop_telemetry(telemetry, writer, manifest)
            sampler_exit = manifest["telemetry"].get("sampler_exit")
            if status == "complete" and sampler_exit not in (0, None):
                # Its telemetry stops where the sampler died: the run is not whole.
                status = "partial"
                how = child_exit.describe(sampler_exit)
                manifest["reason"] = f"the telemetry sampler died ({how})"
            if spec.aa and status == "complete":
                manifest["aa"]["result"] = aa_result(spec.aa, directory)
            memory.after_run(manifest["memory"], workers.worker_peak_rss())
            manifest.update(end_time=_now(), status=status)
            _seal(writer, manifest)
        finally:
            interrupts.restore(previous)
        log.info("run %s %s: sealed in %s", run_id, status, directory)
    if status == "partial":
        raise PartialRun(f"{manifest['reason']}; the measured samples are kept as partial")
