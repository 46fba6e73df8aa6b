"""The e2e tier's step budgets (tests/board/budgets.sh): beside the other tiers its tests'
budget counts only once they are done, so a slow machine's time under those tiers is not
held against them, while a step that outlives its budget once alone is still stopped."""

import subprocess
import time
from pathlib import Path

import psutil
import pytest
from conftest import require_command

BUDGETS = Path(__file__).resolve().parent / "board" / "budgets.sh"


def _once_alone(done: Path, budget_s: int, command: str) -> subprocess.Popen:
    script = f'set -euo pipefail; source "{BUDGETS}"; once_alone steps {budget_s} {command}'
    return subprocess.Popen(
        [require_command("bash"), "-c", script],
        env={"PATH": "/usr/bin:/bin", "EVBENCH_TIERS_DONE": str(done)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def test_a_step_longer_than_its_budget_passes_while_the_other_tiers_run(tmp_path: Path):
    """`sleep 3` against a 1 s budget, with the other tiers never done: not stopped."""
    step = _once_alone(tmp_path / "done", 1, "sh -c 'sleep 3; exit 7'")
    output, _ = step.communicate(timeout=60)
    assert step.returncode == 7, output  # the step's own status, not timeout's 124
    assert "the other tiers are done after" not in output and "over its time budget" not in output


def test_once_the_other_tiers_are_done_the_budget_stops_the_step_and_its_children(
    tmp_path: Path,
):
    done, child = tmp_path / "done", tmp_path / "child.pid"
    # The step's child sleeps in the background, as a test's server would beside pytest.
    step = _once_alone(done, 1, f"sh -c 'sleep 600 & echo $! > {child}; wait'")
    time.sleep(3)  # the step is well past its 1 s budget: it must still be running
    assert step.poll() is None
    done.touch()
    output, _ = step.communicate(timeout=60)
    assert step.returncode == 124, output
    assert "the other tiers are done after" in output and "over its time budget" in output
    assert _ends(int(child.read_text())), "the step's child outlived its budget"


def _ends(pid: int, within_s: float = 30.0) -> bool:
    """The process is gone, or a zombie left for init to reap, within `within_s`."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("status", [0, 3])
def test_a_step_that_ends_after_the_other_tiers_keeps_its_status(tmp_path: Path, status: int):
    done = tmp_path / "done"
    done.touch()
    step = _once_alone(done, 60, f"sh -c 'exit {status}'")
    output, _ = step.communicate(timeout=60)
    assert step.returncode == status, output
    assert f"(exit {status})" in output
