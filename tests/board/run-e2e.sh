#!/usr/bin/env bash
# The end-to-end tier: build (or reuse) the virtual ARM64 board, then run the
# e2e tests on it. Each step has a time budget, printed before it starts and
# enforced with timeout(1); the elapsed time is printed after it.
#   E2E_BUILD_BUDGET  seconds for the board build (default 900; ~6 min from scratch, seconds cached)
#   E2E_TEST_BUDGET   seconds for the tests (default 1800; 13 tests took 732 s in one CI run,
#                     14 took 1187 s on the same kind of VM at another hour)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
python="${PYTHON:-$root/.venv/bin/python}"
build_budget="${E2E_BUILD_BUDGET:-900}"
test_budget="${E2E_TEST_BUDGET:-1800}"

step() {  # step NAME BUDGET COMMAND...
    local name="$1" budget="$2" start=$SECONDS status=0
    shift 2
    echo "e2e: $name: budget ${budget} s"
    # --kill-after: a step that ignores SIGTERM is killed 30 s later.
    timeout --kill-after=30 "$budget" "$@" || status=$?
    echo "e2e: $name: took $((SECONDS - start)) s of ${budget} s (exit $status)"
    [ "$status" -eq 124 ] && echo "e2e: $name: over its time budget" >&2
    return "$status"
}

# The build prints the board's directory; the tests boot that one (EVBOARD_IMAGE) instead
# of looking up today's inputs again (apt-get update and apt-cache: minutes under load).
image_file=$(mktemp)
trap 'rm -f "$image_file"; echo "e2e: $SECONDS s in all"' EXIT
step "board build" "$build_budget" nice -n 10 "$python" "$here/evboard_image.py" | tee "$image_file"
EVBOARD_IMAGE=$(grep '^/' "$image_file" | tail -n 1 || true)
export EVBOARD_IMAGE
step "end-to-end tests" "$test_budget" "$python" -m pytest -m e2e --durations=25 "$here" "$@"
