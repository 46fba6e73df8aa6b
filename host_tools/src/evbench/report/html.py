"""report.html: one self-contained file, images as base64 data URIs, no scripts.

It opens from a USB stick on a lab PC without network: no external style
sheet, font, script or image. Every text is escaped.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from html import escape

from evbench.report.plots import Plot
from evbench.report.sections import Section

#: Nothing may load from the network and nothing may run: inline style and data: images.
POLICY = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"

STYLE = """
body { font-family: sans-serif; margin: 2em; color: #222; max-width: 80em; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }
th { background: #f0f0f0; }
td { font-variant-numeric: tabular-nums; }
.partial, .warning { border: 2px solid #b00; background: #fee; padding: 0.5em 1em; }
.partial h2 { color: #b00; }
figure { margin: 1em 0 2em; }
figcaption { font-size: 0.9em; color: #555; max-width: 60em; }
img { max-width: 100%; }
p.note { font-size: 0.85em; color: #555; }
nav { margin: 0 0 1em; line-height: 1.6; }
summary { cursor: pointer; color: #225; margin: 0.5em 0; }
.environment { border: 1px solid #bbb; background: #f7f7f7; padding: 0.3em 1em 0.6em; }
.environment h2 { font-size: 1.1em; margin: 0.3em 0; }
.environment .warning { margin: 0.4em 0; }
.environment .warning ul { margin: 0.2em 0; padding-left: 1.2em; }
dl.facts { display: grid; grid-template-columns: repeat(auto-fill, minmax(26em, 1fr));
  gap: 0.15em 1.5em; margin: 0.3em 0 0; font-size: 0.9em; }
dl.facts div { display: flex; gap: 0.5em; }
dl.facts dt { font-weight: bold; white-space: nowrap; }
dl.facts dd { margin: 0; }
"""


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(str(cell))}</td>" for cell in row) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


#: A table with more rows than this starts folded (<details>): the plots stay near the top.
FOLD_ROWS = 30
#: The id of the answer's section and of the table of contents (links and tests use them).
ANSWER_ID = "answer"
CONTENTS_ID = "contents"
PLOTS_ID = "plots"
ENVIRONMENT_ID = "environment"


def anchor(title: str) -> str:
    """A section's id, from its title: 'Comparison: JSON against X' -> 'comparison-json-...'."""
    if title.startswith("The answer"):
        return ANSWER_ID
    if title.startswith("Environment"):
        return ENVIRONMENT_ID
    words = "".join(c.lower() if c.isalnum() else " " for c in title).split()
    return "-".join(words)[:60] or "section"


def _environment(section: Section) -> str:
    """The environment box: its warnings in a red box first, then its facts in a grid."""
    parts = [f"<h2>{escape(section.title)}</h2>"]
    if section.paragraphs:
        items = "".join(f"<li>{escape(p)}</li>" for p in section.paragraphs)
        parts.append(f'<div class="warning"><ul>{items}</ul></div>')
    facts = "".join(
        f"<div><dt>{escape(what)}</dt><dd>{escape(value)}</dd></div>"
        for what, value in section.facts
    )
    parts.append(f'<dl class="facts">{facts}</dl>')
    return f'<section id="{ENVIRONMENT_ID}" class="environment">{"".join(parts)}</section>'


def _section(section: Section) -> str:
    if section.facts:
        return _environment(section)
    parts = [f"<h2>{escape(section.title)}</h2>"]
    note = ' class="note"' if section.rows else ""
    parts += [f"<p{note}>{escape(p)}</p>" for p in section.paragraphs]
    if section.rows:
        shown = _table(section.headers, section.rows)
        if len(section.rows) > FOLD_ROWS:
            shown = (
                f"<details><summary>{len(section.rows)} rows: show the table</summary>"
                f"{shown}</details>"
            )
        parts.append(shown)
    css = ' class="partial"' if section.warning else ""
    return f'<section id="{escape(anchor(section.title))}"{css}>{"".join(parts)}</section>'


def _contents(sections: Sequence[Section], plots: Sequence[Plot]) -> str:
    """One line of links to every section and to the plots, under the title."""
    links = [(anchor(s.title), s.title.split(":")[0]) for s in sections]
    if plots:  # where the page has them: after the answer
        at = next((i + 1 for i, (key, _) in enumerate(links) if key == ANSWER_ID), len(links))
        links.insert(at, (PLOTS_ID, "Plots"))
    items = " · ".join(f'<a href="#{escape(i)}">{escape(text)}</a>' for i, text in links)
    return f'<nav id="{CONTENTS_ID}"><strong>Contents:</strong> {items}</nav>'


def _headline(headline: str | None) -> str:
    if not headline:
        return ""
    return f'<p class="partial" id="headline"><strong>{escape(headline)}</strong></p>\n'


def _figure(plot: Plot) -> str:
    data = base64.b64encode(plot.png).decode("ascii")
    return (
        f'<figure id="{escape(plot.name)}"><h3>{escape(plot.title)}</h3>'
        f'<img alt="{escape(plot.title)}" src="data:image/png;base64,{data}">'
        f"<figcaption>{escape(plot.caption)}</figcaption></figure>"
    )


def render(
    title: str, sections: Sequence[Section], plots: Sequence[Plot], headline: str | None = None
) -> str:
    """`headline`: a partial run's first line (evbench.report.headline), before the title."""
    figures = "\n".join(_figure(p) for p in plots)
    if figures:
        figures = f'<section id="{PLOTS_ID}"><h2>Plots</h2>\n' + figures + "</section>"
    # The plots right after the answer (and the warnings before it), the big tables after.
    cut = next(
        (i + 1 for i, s in enumerate(sections) if anchor(s.title) == ANSWER_ID), len(sections)
    )
    body = "\n".join(
        [*(_section(s) for s in sections[:cut]), figures, *(_section(s) for s in sections[cut:])]
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head>\n"
        f"<body>{_headline(headline)}<h1>{escape(title)}</h1>\n{_contents(sections, plots)}\n"
        f"{body}\n</body></html>\n"
    )
