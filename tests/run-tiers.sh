#!/usr/bin/env bash
# Runs the test tiers, each with its time budget printed, and fails when any tier
# fails. Extra arguments go to every pytest call.
#   fast         unit tests and local runs (no real external component)
#   integration  real components: sshd, login shells on ptys, ser2net, loop devices,
#                other protobuf runtimes, a labgrid coordinator and exporter (marked
#                `lab` too: `pytest -m lab` runs those alone)
#   e2e          the virtual ARM64 board under QEMU (tests/board/run-e2e.sh builds or
#                reuses its image, with budgets of its own)
# The e2e tier starts first, in the background at nice 10; the fast tier, then the
# integration tier, run in the foreground beside it, and its output is printed when all
# are done. Niced, the emulated board takes what the two tiers leave of the cores instead
# of contending with them for it; its tests' time budget counts once those tiers are done
# (EVBENCH_TIERS_DONE, tests/board/run-e2e.sh). EVBENCH_E2E_APART=1 runs the e2e tier
# after the integration tier instead, as a loaded machine may need.
#
# The fast and integration tiers run their tests in parallel (pytest-xdist), one worker
# per core: the cores bound them, not the workers. A third worker on two cores made the
# integration tier slower (fresh-clone runs on an idle machine, 2026-12-06: 761 s instead
# of 736 s, both cores busy throughout and the same tests taking more CPU time under that
# contention); four made three timing-sensitive tests fail (commit 811d331). But a few
# files mostly wait on real time (paced serial lines, dropped connections, consoles, the
# docs' `make run`: tests/conftest.py, WAITING_FILES, marks them `waits`), and on a worker
# they held it for minutes at a third of a core or less. The integration tier runs them in a lane of their
# own, two more pytest processes beside its workers (a file's tests stay in one), and
# prints the lane's output after theirs: in one process the lane took longer than the
# workers (620-649 s idle against 576-629 s, fresh-clone runs of 2026-12-07) at about
# 140 CPU s in all. EVBENCH_TEST_WORKERS says how many workers (1 runs every test in this
# process, one at a time, with no lane).
#
# A test file's tests all run on one worker, one after another: its module fixtures (a
# native build, a lab, runs to report on) are made once, and tests that share a place
# (test_docs.py's documents write results/) never run side by side. Files start longest
# first (tests/conftest.py, LONGEST_FILES), in that order (--no-loadscope-reorder), so no
# long file starts last. Each tier lists its 25 slowest steps (--durations).
set -uo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
workers=${EVBENCH_TEST_WORKERS:-$(nproc)}
extra=("$@")
failed=()
# The native builds the tiers' tests make (tests/native_cross.py), one per configuration
# for the whole run: the e2e tier's aarch64 and host harnesses are the integration tier's.
EVBENCH_TEST_BUILDS=$(mktemp -d -t evbench-test-builds.XXXXXX)
export EVBENCH_TEST_BUILDS
trap 'rm -rf "$EVBENCH_TEST_BUILDS"' EXIT

pytest_status() {  # pytest_status MARKER ARGS...: pytest's exit status, 0 for "no tests" (5)
    local status=0
    "$python" -m pytest -m "$1" --durations=25 "${@:2}" || status=$?
    [ "$status" -eq 5 ] && status=0
    return "$status"
}

tier() {  # tier NAME BUDGET MARKER [LANE]: LANE (a marker) runs in two processes beside the workers
    local name=$1 budget=$2 marker=$3 lane=${4:-}
    echo "=== tier $name: budget $((budget / 60)) min"
    local start=$SECONDS status=0 lane_status=0 lane_pid="" lane_log="$EVBENCH_TEST_BUILDS/$name-lane.log"
    local parallel=(-n "$workers" --dist loadfile --no-loadscope-reorder)
    if [ "$workers" = 1 ]; then
        parallel=(-p no:xdist)
        lane=""
    fi
    if [ -n "$lane" ]; then
        echo "=== tier $name: the tests marked $lane in a lane beside the workers (output after theirs)"
        pytest_status "($marker) and $lane" -n 2 --dist loadfile --no-loadscope-reorder \
            "${extra[@]}" >"$lane_log" 2>&1 &
        lane_pid=$!
        marker="($marker) and not $lane"
    fi
    pytest_status "$marker" "${parallel[@]}" "${extra[@]}" || status=$?
    if [ -n "$lane_pid" ]; then
        wait "$lane_pid" || lane_status=$?
        echo "=== tier $name: its lane ($lane), exit $lane_status"
        cat "$lane_log"
        [ "$status" -eq 0 ] && status=$lane_status
    fi
    local elapsed=$((SECONDS - start))
    echo "=== tier $name: ${elapsed}s of $((budget / 60)) min budget, exit $status"
    [ "$elapsed" -le "$budget" ] || echo "=== tier $name: OVER BUDGET"
    [ "$status" -eq 0 ] || failed+=("$name")
}

e2e_tier() {
    echo "=== tier e2e: budgets: board build 15 min, tests 30 min${EVBENCH_TIERS_DONE:+ once the other tiers are done}"
    local start=$SECONDS status=0
    nice -n 10 tests/board/run-e2e.sh "$@" || status=$?
    echo "=== tier e2e: $((SECONDS - start))s, exit $status"
    return "$status"
}

apart=${EVBENCH_E2E_APART:-0}
if [ "$apart" != 1 ]; then
    e2e_log="$EVBENCH_TEST_BUILDS/e2e.log"
    EVBENCH_TIERS_DONE="$EVBENCH_TEST_BUILDS/tiers-done"
    export EVBENCH_TIERS_DONE
    echo "=== tier e2e: started at nice 10 beside the fast and integration tiers (its output follows theirs)"
    e2e_tier "$@" >"$e2e_log" 2>&1 &
    e2e_pid=$!
fi
tier fast 300 "not integration and not compat and not e2e and not slow"
if [ "$apart" = 1 ]; then
    tier integration 900 "(integration or compat or slow) and not e2e" waits
    e2e_tier "$@" || failed+=(e2e)
else
    tier integration 1200 "(integration or compat or slow) and not e2e" waits
    touch "$EVBENCH_TIERS_DONE"
    wait "$e2e_pid" || failed+=(e2e)
    cat "$e2e_log"
fi

if [ ${#failed[@]} -gt 0 ]; then
    echo "=== failed tiers: ${failed[*]}"
    exit 1
fi
echo "=== every tier passed"
