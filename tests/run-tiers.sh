#!/usr/bin/env bash
# Runs the test tiers, each with its time budget printed, and fails when any tier
# fails. Extra arguments go to every pytest call. The e2e tier starts first, in the
# background at nice 10; the fast tier, then the integration tier, run in the foreground
# beside it. Its output is kept apart and printed when all are done. Niced, the emulated
# board takes what the two tiers leave of the cores (the fast tier's workers wait on
# subprocesses a quarter of the time, the integration tier's on links, consoles and
# servers half of it) instead of contending with them for it. EVBENCH_E2E_APART=1 runs
# the e2e tier after the integration tier instead, as a loaded machine may need.
#   fast         unit tests and local runs (no real external component)
#   integration  real components: sshd, login shells on ptys, ser2net, loop devices,
#                other protobuf runtimes, a labgrid coordinator and exporter (marked
#                `lab` too: `pytest -m lab` runs those alone)
#   e2e          the virtual ARM64 board under QEMU (tests/board/run-e2e.sh builds or
#                reuses its image, with budgets of its own)
# The fast and integration tiers run their tests in parallel (pytest-xdist), one worker
# per core. The integration tier's tests mostly wait (links paced at 20 Hz, consoles,
# labgrid places, servers), yet a third worker on two cores made it slower: in fresh-clone
# runs on an idle machine (2026-12-06) two workers took 736 s beside the e2e tier (744 CPU
# seconds, the e2e tier's 385), three took 761 s (842 and 518 CPU seconds: both cores
# were busy throughout, and the same tests took more CPU time under that contention).
# Four (two per core) made three timing-sensitive tests fail (commit 811d331). The cores
# bound the tiers, not the workers. EVBENCH_TEST_WORKERS says how many for both
# (1 runs them in this process, one at a time). A test file's tests all run on one
# worker, one after another: its module fixtures (a native build, a lab, runs to report
# on) are made once, and tests that share a place (test_docs.py's documents write
# results/) never run side by side. Files start longest first (tests/conftest.py,
# LONGEST_FILES), in that order (--no-loadscope-reorder), so no long file starts last.
# Each tier lists its 25 slowest steps (--durations).
set -uo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
workers=${EVBENCH_TEST_WORKERS:-}
cores=$(nproc)
failed=()
# The native builds the tiers' tests make (tests/native_cross.py), one per configuration
# for the whole run: the e2e tier's aarch64 and host harnesses are the integration tier's.
EVBENCH_TEST_BUILDS=$(mktemp -d -t evbench-test-builds.XXXXXX)
export EVBENCH_TEST_BUILDS
trap 'rm -rf "$EVBENCH_TEST_BUILDS"' EXIT

xdist() {  # xdist WORKERS: sets xdist_args, the pytest arguments for that many workers
    if [ "$1" = 1 ]; then
        xdist_args=(-p no:xdist)
    else
        xdist_args=(-n "$1" --dist loadfile --no-loadscope-reorder)
    fi
}

tier() {
    local name=$1 budget=$2 marker=$3
    shift 3
    echo "=== tier $name: budget $((budget / 60)) min"
    local start=$SECONDS
    "$python" -m pytest -m "$marker" --durations=25 "$@"
    local status=$? elapsed=$((SECONDS - start))
    # pytest's 5 means the tier has no tests: nothing failed.
    [ "$status" -eq 5 ] && status=0
    echo "=== tier $name: ${elapsed}s of $((budget / 60)) min budget, exit $status"
    [ "$elapsed" -le "$budget" ] || echo "=== tier $name: OVER BUDGET"
    [ "$status" -eq 0 ] || failed+=("$name")
}

e2e_tier() {
    echo "=== tier e2e: budget 45 min (board build 15, tests 30)"
    local start=$SECONDS status=0
    nice -n 10 tests/board/run-e2e.sh "$@" || status=$?
    echo "=== tier e2e: $((SECONDS - start))s, exit $status"
    return "$status"
}

xdist "${workers:-$cores}"
apart=${EVBENCH_E2E_APART:-0}
if [ "$apart" != 1 ]; then
    e2e_log="$EVBENCH_TEST_BUILDS/e2e.log"
    echo "=== tier e2e: started at nice 10 beside the fast and integration tiers (its output follows theirs)"
    e2e_tier "$@" >"$e2e_log" 2>&1 &
    e2e_pid=$!
fi
tier fast 300 "not integration and not compat and not e2e and not slow" "${xdist_args[@]}" "$@"
if [ "$apart" = 1 ]; then
    tier integration 900 "(integration or compat or slow) and not e2e" "${xdist_args[@]}" "$@"
    e2e_tier "$@" || failed+=(e2e)
else
    tier integration 1200 "(integration or compat or slow) and not e2e" "${xdist_args[@]}" "$@"
    wait "$e2e_pid" || failed+=(e2e)
    cat "$e2e_log"
fi

if [ ${#failed[@]} -gt 0 ]; then
    echo "=== failed tiers: ${failed[*]}"
    exit 1
fi
echo "=== every tier passed"
