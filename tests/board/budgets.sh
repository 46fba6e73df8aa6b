# Time budgets for the e2e tier's steps (tests/board/run-e2e.sh sources this; so does
# tests/test_e2e_budgets.py). Each prints its budget before the step and its time after.

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

once_alone() {  # once_alone NAME BUDGET COMMAND...: BUDGET counts once EVBENCH_TIERS_DONE exists
    local name="$1" budget="$2" start=$SECONDS status=0 deadline=""
    shift 2
    echo "e2e: $name: budget ${budget} s once the other tiers are done"
    # A process group of its own, whose every process the budget stops, as timeout(1)
    # signals its group: pytest dies on SIGTERM without its teardown, and the commands and
    # servers its tests started would outlive it. (setsid runs in the background job's own
    # process, so $! is the group's id.)
    setsid "$@" &
    local pid=$!
    trap 'kill -TERM -- "-$pid" 2>/dev/null || true' INT TERM
    while kill -0 "$pid" 2>/dev/null; do
        if [ -z "$deadline" ] && [ -e "$EVBENCH_TIERS_DONE" ]; then
            deadline=$((SECONDS + budget))
            echo "e2e: $name: the other tiers are done after $((SECONDS - start)) s"
        fi
        if [ -n "$deadline" ] && [ "$SECONDS" -ge "$deadline" ]; then
            kill -TERM -- "-$pid" 2>/dev/null || true
            # as timeout --kill-after=30: a step that ignores SIGTERM is killed 30 s later
            for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
            kill -KILL -- "-$pid" 2>/dev/null || true
            status=124
            break
        fi
        sleep 1
    done
    local code=0
    wait "$pid" || code=$?
    [ "$status" -eq 124 ] || status=$code
    trap - INT TERM
    echo "e2e: $name: took $((SECONDS - start)) s (exit $status)"
    [ "$status" -eq 124 ] && echo "e2e: $name: over its time budget" >&2
    return "$status"
}
