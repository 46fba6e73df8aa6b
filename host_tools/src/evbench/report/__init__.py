"""How a run's answer is shown: the terminal table, report.md, a self-contained
report.html, CSV and JUnit exports, and the comparison of runs.

Everything is read from the run directory through the results format, so a
run fetched from a board, a local run and an older run all render.

Modules: `table` (the comparison table in text, Markdown and cells), `units`
(readable values), `context` (what a run directory holds), `sections` (the
report's content), `markdown` and `html` (its layouts), `plots` and
`telemetry` (matplotlib, loaded only when a report is drawn), `exports` (CSV,
JUnit), `headline` (a partial run's first line), `compare` and `criteria` (runs
against each other), `writer`
(`write_report`: every file of a report). Nothing heavy loads on import of the
package: matplotlib only with `plots` (through `writer`), when a report is drawn.
"""
