"""report.md: the sections as Markdown; plots as PNG files beside it in plots/."""

from __future__ import annotations

import re
from collections.abc import Sequence

from evbench.report import table
from evbench.report.plots import Plot
from evbench.report.sections import Section

PLOT_DIRECTORY = "plots"


#: Characters that would turn a reason into emphasis, a link or HTML in Markdown.
_MARKUP = re.compile(r"([\\`*_\[\]<>])")


def render(
    title: str, sections: Sequence[Section], plots: Sequence[Plot], headline: str | None = None
) -> str:
    """`headline`: a partial run's first line (evbench.report.headline), shown as it is."""
    lines = ["**" + _MARKUP.sub(r"\\\1", headline) + "**", ""] if headline else []
    lines += [f"# {title}", ""]
    for section in sections:
        heading = f"## {'**' + section.title + '**' if section.warning else section.title}"
        lines += [heading, ""]
        for paragraph in section.paragraphs:
            lines += [paragraph, ""]
        if section.rows:
            lines += [table.format_markdown(section.headers, section.rows), ""]
    if plots:
        lines += ["## Plots", ""]
    for plot in plots:
        lines += [
            f"### {plot.title}",
            "",
            f"![{plot.title}]({PLOT_DIRECTORY}/{plot.name}.png)",
            "",
            plot.caption,
            "",
        ]
    return "\n".join(lines)
