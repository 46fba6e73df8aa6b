"""Every file of a report: report.md, a self-contained report.html, the plots, and
the exports that report/exports/ declares, one module each (CSV of the records,
comparison.csv: the comparison table's rows, and JUnit).

Everything is read from the run directory through the results format, so a
run fetched from a board, a local run and an older run all render.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evbench.report import exports, html, markdown, plots, sections
from evbench.report.context import RunContext, load_context
from evbench.report.headline import partial_headline
from evbench_core.comparison import Comparison
from evbench_core.errors import UserError
from evbench_core.results import REPORT_OUTPUTS, write_atomic
from evbench_core.write_failures import writing

REPORT_MD = "report.md"
REPORT_HTML = "report.html"


@dataclass(frozen=True)
class Written:
    context: RunContext
    files: list[Path]
    plots: list[plots.Plot]
    #: A partial run's first line ("PARTIAL: why"), None for a complete run.
    headline: str | None = None


def write_report(directory: Path, comparison: Comparison | None = None) -> Written:
    """Render the run in `directory` into files beside it; return what was written.

    `comparison` is the run's, when the caller computed it already (evbench run
    prints it first); otherwise it is computed here from the run's samples."""
    context = load_context(directory)
    if comparison is None:
        comparison = sections.compare_context(context)
    title = f"evbench run {context.run_id}" + (" (PARTIAL)" if context.partial else "")
    content = sections.build(context, comparison)
    drawn = plots.draw(context)
    # After the sections: reading the samples may add to the context's problems.
    first = (
        partial_headline(context.manifest, context.missing, context.problems)
        if context.partial
        else None
    )
    directory = context.directory
    files = []
    plot_directory = directory / markdown.PLOT_DIRECTORY
    if plot_directory.is_symlink() or (plot_directory.exists() and not plot_directory.is_dir()):
        # A link would take the plots, and the clearing of stale ones, out of the run.
        raise UserError(
            f"{plot_directory} is not a directory of the run (a symbolic link or a file); "
            "nothing was written",
            hint="remove it, or render a copy of the run",
        )
    outputs = {
        REPORT_MD: markdown.render(title, content, drawn, first).encode(),
        REPORT_HTML: html.render(title, content, drawn, first).encode(),
        **{entry.file: entry.make(context, comparison) for entry in exports.registered()},
    }
    # SHA256SUMS leaves out only REPORT_OUTPUTS: a file of the report named nowhere there
    # would be listed when a report is written before the run is sealed, and fail the
    # run's checksums at the next report for ever.
    unlisted = sorted({markdown.PLOT_DIRECTORY, *outputs} - REPORT_OUTPUTS)
    if unlisted:
        raise ValueError(f"report files {unlisted} are not in results.REPORT_OUTPUTS: add them")
    with writing(directory):  # a read-only or full directory: the user's error
        if drawn:
            plot_directory.mkdir(exist_ok=True)
        current = {f"{plot.name}.png" for plot in drawn}
        for stale in plot_directory.glob("*.png") if plot_directory.is_dir() else ():
            # from an earlier render whose data is gone: only a file of ours goes
            if stale.name not in current and stale.is_file() and not stale.is_symlink():
                stale.unlink()
        for plot in drawn:
            path = plot_directory / f"{plot.name}.png"
            write_atomic(path, plot.png)
            files.append(path)
        for name, data in outputs.items():
            write_atomic(directory / name, data)
            files.append(directory / name)
    return Written(context, files, drawn, first)
