"""Pure analysis: what a record measured, the metrics, the statistics and the verdicts.

`identity` says what a row is (the params that name it, and each metric's role
in a comparison), `metrics` every metric's unit and better direction, `stats`
the exact tests and intervals, `margins` each metric's equivalence margin,
`verdicts` the decisions they lead to, `contention` when a replicate ran on a
busy machine. None of them does I/O or imports anything of the core but the error
types (`evbench_core.errors`): the comparison (`evbench_core.comparison`) and
the results reader use them, on the host and on the board.
"""

__all__ = ["contention", "identity", "margins", "metrics", "stats", "verdicts"]
