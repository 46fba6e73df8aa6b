"""What `evbench run` does with the history: add the run at its end, unless told not to.

The run is already on disk when this runs; a store that cannot be reached or
refuses the run costs a warning, never the run or its exit code.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from evbench.progress import notice

log = logging.getLogger(__name__)


def add_history_options(parser: argparse.ArgumentParser) -> None:
    """`--history URL` and `--no-history` (host only: the agent never sees them)."""
    parser.add_argument(
        "--history",
        metavar="URL",
        help="add the run to this results history: a path, sqlite:///PATH or "
        "postgresql://USER@HOST/DB (default: EVBENCH_HISTORY, else "
        "$XDG_DATA_HOME/evbench/history.sqlite)",
    )
    parser.add_argument(
        "--no-history", action="store_true", help="do not add the run to the results history"
    )


def record_run(args: argparse.Namespace, out: Path) -> bool:
    """Index the run in `out` into the history; True when it is there now."""
    if getattr(args, "no_history", False):
        return False
    from evbench.history import default_url, open_store
    from evbench.history.indexing import index_run
    from evbench_core.errors import EvbenchError

    try:
        url = default_url(getattr(args, "history", None))
        with open_store(url) as store:
            indexed = index_run(out)
            store.add(indexed)
    except (EvbenchError, OSError) as error:
        log.warning(
            "the run is not in the history (%s); the results are kept: "
            "try 'evbench history add %s'",
            error,
            out,
        )
        return False
    flag = " as partial" if indexed.row.partial else ""
    notice(f"history: added{flag} to {url.display} (board {indexed.row.board})")
    return True
