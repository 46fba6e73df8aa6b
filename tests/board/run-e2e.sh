#!/usr/bin/env bash
# The end-to-end tier: build (or reuse) the virtual ARM64 board, then run the
# e2e tests on it. Each step has a time budget, printed before it starts and
# enforced with timeout(1); the elapsed time is printed after it.
#   E2E_BUILD_BUDGET  seconds for the board build (default 900; ~6 min from scratch, seconds cached)
#   E2E_TEST_BUDGET   seconds for the tests once the machine is theirs (default 1800; alone,
#                     16 tests took 356 s on an idle VM of CI's usual speed)
#
# Beside the other tiers (tests/run-tiers.sh starts this at nice 10 and names a file in
# EVBENCH_TIERS_DONE that it creates when they end), the tests' budget counts from the
# later of their start and that file's appearance. Niced, they get what the other tiers
# leave of the cores, so the time those tiers take is not theirs: on a machine at half
# CI's usual speed (CI, 2026-12-07) those tiers held the cores for most of the 30 minutes,
# and a budget counted from the start stopped the 14th of 16 tests running, not hung.
# Until then a hang is bounded by each test's own limits (pytest-timeout's marks,
# COMMAND_TIMEOUT and BOOT_TIMEOUT in evboard_fixture.py); after it, by the budget.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
python="${PYTHON:-$root/.venv/bin/python}"
build_budget="${E2E_BUILD_BUDGET:-900}"
test_budget="${E2E_TEST_BUDGET:-1800}"

source "$here/budgets.sh"

# The build prints the board's directory; the tests boot that one (EVBOARD_IMAGE) instead
# of looking up today's inputs again (apt-get update and apt-cache: minutes under load).
image_file=$(mktemp)
trap 'rm -f "$image_file"; echo "e2e: $SECONDS s in all"' EXIT
step "board build" "$build_budget" nice -n 10 "$python" "$here/evboard_image.py" | tee "$image_file"
EVBOARD_IMAGE=$(grep '^/' "$image_file" | tail -n 1 || true)
export EVBOARD_IMAGE
tests=("$python" -m pytest -m e2e --durations=25 "$here" "$@")
if [ -n "${EVBENCH_TIERS_DONE:-}" ]; then
    once_alone "end-to-end tests" "$test_budget" "${tests[@]}"
else
    step "end-to-end tests" "$test_budget" "${tests[@]}"
fi
