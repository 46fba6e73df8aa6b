"""lab.html: one self-contained page, a row per board and entry.

Status, exit code, duration, the failure's one line, the key figures (each record's
median in a readable unit, 57.4 µs or 995.5 B as the run's report shows it, with its
sample count), the comparison with the board's previous run (a regressed entry's row
is coloured; a gain beyond --max-change is named as one, not as a regression), and
links to each run's own report. No script, no external resource: the page opens from a
file anywhere.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from evbench.report.units import format_value
from evbench_core import results

REPORT = "lab.html"
STYLE = (
    "body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse}"
    "td,th{border:1px solid #bbb;padding:.3em .6em;vertical-align:top;text-align:left}"
    ".complete{background:#e6f4e6}.partial,.interrupted{background:#fff4d6}"
    ".failed{background:#fbe0e0}"
    ".regressed{color:#a00;font-weight:bold}tr.regressed-entry{background:#f6c6c6}"
    ".beyond{color:#7a5200;font-weight:bold}"
    "small{color:#555}"
)


def _figures(run_dir: Path) -> str:
    try:
        run = results.load_run(run_dir)
    except Exception as error:  # a broken run still gets its row
        return f"<small>no figures ({html.escape(str(error))})</small>"
    items = []
    for record in run.records:
        median = record.get("median")
        if median is None:
            continue
        # Telemetry and link records name no codec or profile: the suite says what they are.
        what = [record.get(k) or "" for k in ("suite", "profile", "codec", "metric")]
        label = html.escape(" ".join(part for part in what if part))
        shown = html.escape(format_value(median, str(record.get("unit") or ""), what[3]))
        items.append(f"{label}: median {shown} (n={record.get('n')})")
    return "<br>".join(items) or "<small>no records</small>"


def _comparison(comparison: dict[str, Any] | None) -> str:
    if not comparison:
        return ""
    if comparison.get("baseline") is None:
        return html.escape(comparison.get("note", "no baseline"))
    if comparison["regressed"]:
        verdict = '<span class="regressed">REGRESSED</span>'
    elif comparison.get("improved_beyond_max_change"):
        # compare failed on it all the same: a change that large asks whether both runs
        # measured the same thing (logs/ENTRY.compare.txt names the rows).
        verdict = (
            '<span class="beyond">improved beyond --max-change</span> '
            "(no regression; check both runs measured the same)"
        )
    else:
        verdict = "no regression"
    return f"{verdict}<br><small>vs {html.escape(comparison['baseline_run_id'])}</small>"


def render(directory: Path, index: dict[str, Any]) -> str:
    rows = []
    for entry in index["entries"]:
        run_dir = directory / entry["run_dir"] if entry.get("run_dir") else None
        link = ""
        if run_dir is not None and (run_dir / "report.html").exists():
            target = html.escape(f"{entry['run_dir']}/report.html", quote=True)
            link = f'<a href="{target}">run report</a>'
        figures = _figures(run_dir) if run_dir is not None and run_dir.is_dir() else ""
        duration = "" if entry["duration_s"] is None else f"{entry['duration_s']:.0f} s"
        classes = [entry["status"].replace(" ", "-")]
        if (entry.get("comparison") or {}).get("regressed"):
            classes.append("regressed-entry")
        rows.append(
            f'<tr class="{html.escape(" ".join(classes))}">'
            f"<td>{html.escape(entry['board'])}</td>"
            f"<td>{html.escape(entry['suite'])} / {html.escape(entry['profile'])} / "
            f"{html.escape(entry['codecs'])}</td>"
            f"<td>{html.escape(entry['status'])}</td>"
            f"<td>{'' if entry['exit_code'] is None else entry['exit_code']}</td>"
            f"<td>{duration}</td>"
            f"<td>{html.escape(entry.get('error') or '')}</td>"
            f"<td>{figures}</td>"
            f"<td>{_comparison(entry.get('comparison'))}</td>"
            f"<td>{link}</td></tr>"
        )
    head = (
        "<tr><th>board</th><th>entry</th><th>status</th><th>exit</th><th>duration</th>"
        "<th>failure</th><th>key figures</th><th>vs previous run</th><th>links</th></tr>"
    )
    title = f"evbench lab {html.escape(index.get('started') or '')}"
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        f"<style>{STYLE}</style></head><body><h1>{title}</h1>"
        f"<p>plan: {html.escape(index.get('plan') or '')}; finished: "
        f"{html.escape(index.get('finished') or 'still running')}</p>"
        f"<table>{head}{''.join(rows)}</table></body></html>\n"
    )


def write(directory: Path, index: dict[str, Any]) -> Path:
    path = directory / REPORT
    results.write_atomic(path, render(directory, index).encode("utf-8"))
    return path
