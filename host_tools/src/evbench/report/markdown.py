"""report.md: the sections as Markdown; plots as PNG files beside it in plots/."""

from __future__ import annotations

import re
from collections.abc import Sequence

from evbench.report import table
from evbench.report.plots import Plot
from evbench.report.sections import Section

PLOT_DIRECTORY = "plots"
#: Leading columns that name a row: a table split to fit 120 columns repeats them.
KEY_HEADERS = {"suite", "profile", "codec", "metric", "context (not tested)", "bus", "what"}


#: Characters that would turn a reason into emphasis, a link or HTML in Markdown.
_MARKUP = re.compile(r"([\\`*_\[\]<>])")


def _anchor(heading: str) -> str:
    """The anchor a Markdown viewer (GitHub, GitLab) gives a heading."""
    text = heading.replace("**", "").strip().lower()
    kept = "".join(c for c in text if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


def _plot_lines(plots: Sequence[Plot]) -> list[str]:
    lines = ["## Plots", ""] if plots else []
    for plot in plots:
        lines += [
            f"### {plot.title}",
            "",
            f"![{plot.title}]({PLOT_DIRECTORY}/{plot.name}.png)",
            "",
            plot.caption,
            "",
        ]
    return lines


def render(
    title: str, sections: Sequence[Section], plots: Sequence[Plot], headline: str | None = None
) -> str:
    """`headline`: a partial run's first line (evbench.report.headline), shown as it is.

    Under the title a line of contents; the plots right after the answer, the big
    tables after them (as in report.html)."""
    lines = ["**" + _MARKUP.sub(r"\\\1", headline) + "**", ""] if headline else []
    lines += [f"# {title}", ""]
    answer_at = next(
        (i + 1 for i, s in enumerate(sections) if s.title.startswith("The answer")), len(sections)
    )
    titles = [s.title for s in sections[:answer_at]]
    titles += ["Plots"] if plots else []
    titles += [s.title for s in sections[answer_at:]]
    contents = " · ".join(f"[{t.split(':')[0]}](#{_anchor(t)})" for t in titles)
    lines += [f"Contents: {contents}", ""]
    for index, section in enumerate(sections):
        if index == answer_at:
            lines += _plot_lines(plots)
        heading = f"## {'**' + section.title + '**' if section.warning else section.title}"
        lines += [heading, ""]
        for paragraph in section.paragraphs:
            lines += [f"- **{paragraph}**" if section.facts else paragraph, ""]
        if section.facts:
            lines += [f"- {what}: {value}" for what, value in section.facts] + [""]
        if section.rows:
            keys = next(
                (i for i, h in enumerate(section.headers) if h.lower() not in KEY_HEADERS),
                len(section.headers),
            )
            lines += [table.format_markdown(section.headers, section.rows, keys), ""]
    if answer_at >= len(sections):
        lines += _plot_lines(plots)
    return "\n".join(lines)
