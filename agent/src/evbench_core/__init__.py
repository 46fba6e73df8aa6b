"""evbench core: what the board's agent and the lab host share.

The results format and its identity, the statistics, comparison and verdicts,
and the errors both programs raise: pure Python on the standard library alone
(the agent's wheel carries it to the board, so nothing here may need more than
the agent's own dependencies). It imports nothing of the agent (`evbench_agent`)
or of the host (`evbench`); both import it (tests/test_import_graph.py).

`__all__` is the public API's top level; each public module lists its own.
"""

__all__ = [
    "analysis",  # what a row is, metrics, statistics, margins, verdicts, contention bounds
    "comparison",  # a run's answer: every row against its baseline
    "digests",  # the SHA-256 digests a run's files are checked by
    "errors",  # the one error family and exit-code policy
    "extensions",  # codecs, profiles, transports, exports: each module declares its own
    "interrupts",  # the signals that end a command as Ctrl-C does
    "json_schema",  # the small JSON Schema validator every file format is checked with
    "log_output",  # log lines on standard error, at the level the flags ask for
    "regular_file",  # reading a user's file (a regular file, or a one-line error)
    "results",  # the one reader and writer of the results format
    "run_ids",  # run ids
    "sequential",  # running until decided: the stages and their stopping rule
    "write_failures",  # when results cannot be written
]
