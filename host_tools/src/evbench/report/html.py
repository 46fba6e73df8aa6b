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
.partial { border: 2px solid #b00; background: #fee; padding: 0.5em 1em; }
.partial h2 { color: #b00; }
figure { margin: 1em 0 2em; }
figcaption { font-size: 0.9em; color: #555; max-width: 60em; }
img { max-width: 100%; }
p.note { font-size: 0.85em; color: #555; }
"""


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(str(cell))}</td>" for cell in row) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _section(section: Section) -> str:
    parts = [f"<h2>{escape(section.title)}</h2>"]
    note = ' class="note"' if section.rows else ""
    parts += [f"<p{note}>{escape(p)}</p>" for p in section.paragraphs]
    if section.rows:
        parts.append(_table(section.headers, section.rows))
    css = ' class="partial"' if section.warning else ""
    return f"<section{css}>{''.join(parts)}</section>"


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
    body = "\n".join(_section(s) for s in sections)
    figures = "\n".join(_figure(p) for p in plots)
    if figures:
        figures = "<section><h2>Plots</h2>\n" + figures + "</section>"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">'
        f"<title>{escape(title)}</title><style>{STYLE}</style></head>\n"
        f"<body>{_headline(headline)}<h1>{escape(title)}</h1>\n{body}\n{figures}\n</body></html>\n"
    )
