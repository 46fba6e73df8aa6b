"""Pure analysis: what a record measured, the metrics, the statistics and the verdicts.

`identity` says what a row is (the params that name it, and each metric's role
in a comparison), `metrics` every metric's unit and better direction, `stats`
the exact tests and intervals, `margins` each metric's equivalence margin,
`verdicts` the decisions they lead to. None of them does I/O or imports anything
else of the agent but the suite registry and the error types
(`evbench_agent.registry` and `evbench_agent.errors`, which import none of ours): the comparison
(`evbench_agent.comparison`) and the results reader use them, on the host and
on the board.
"""

__all__ = ["identity", "margins", "metrics", "stats", "verdicts"]
