#!/bin/sh
# Runs evbench-agent under LAVA's test shell with the test definition's
# parameters (LAVA writes them into run.sh as unexported variables; the test
# definition's step before this one exports them), prints LAVA signals for every
# result, and uploads the run directory when UPLOAD_URL is set. POSIX sh:
# board images have no bash.
set -eu
SUITES=${SUITES:-codec,link}
PROFILES=${PROFILES:-seed,ev-full}
CODECS=${CODECS:-all}
QUICK=${QUICK:-true}
CRITERIA=${CRITERIA:-report}
OUT_DIR=${OUT_DIR:-/tmp/evbench-lava}
UPLOAD_URL=${UPLOAD_URL:-}
AGENT_ZIPAPP_URL=${AGENT_ZIPAPP_URL:-}

# QUICK: the usual spellings of yes and no, any case; anything else stops the job
# before it measures, instead of silently running the full plan.
case "$(printf '%s' "$QUICK" | tr '[:upper:]' '[:lower:]')" in
    true | 1 | yes | y | on) quick="--quick" ;;
    false | 0 | no | n | off) quick="" ;;
    *)
        echo "evbench: QUICK='$QUICK' is neither yes nor no; give true, 1, yes or on for the quick plan, false, 0, no or off for the full one" >&2
        exit 2
        ;;
esac

if command -v evbench-agent >/dev/null 2>&1; then
    agent="evbench-agent"
elif [ -n "$AGENT_ZIPAPP_URL" ]; then
    # A failed download is one line and exit 2, as no agent at all is: nothing to run.
    python3 - "$AGENT_ZIPAPP_URL" /tmp/evbench-agent.pyz <<'PY' || exit 2
import sys, urllib.request
try:
    with urllib.request.urlopen(sys.argv[1], timeout=120) as answer:
        data = answer.read()
    with open(sys.argv[2], "wb") as out:
        out.write(data)
except Exception as error:  # whatever it is (refused, not found, bad URL): one line
    why = getattr(error, "reason", None) or error
    print(f"evbench: cannot download the agent from AGENT_ZIPAPP_URL: {why}", file=sys.stderr)
    sys.exit(2)
PY
    agent="python3 /tmp/evbench-agent.pyz"
else
    echo "evbench: no evbench-agent on this board and no AGENT_ZIPAPP_URL" >&2
    exit 2
fi

run_dir="$OUT_DIR/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$OUT_DIR"
status=0
# What runs, in the job's log: the parameters as the agent receives them.
echo "evbench: $agent run --suite $SUITES --profile $PROFILES --codecs $CODECS $quick --lava-criteria $CRITERIA"
# shellcheck disable=SC2086 # $agent and $quick are words on purpose
$agent run --suite "$SUITES" --profile "$PROFILES" --codecs "$CODECS" $quick \
    --out "$run_dir" --progress none --lava on --lava-criteria "$CRITERIA" || status=$?
echo "evbench: run directory $run_dir (exit $status)"

if [ -n "$UPLOAD_URL" ] && [ -d "$run_dir" ]; then
    # A failed upload is said in one line (the snippet's, or tar's own) and the run stays
    # on the board: the run's status, not the upload's, decides the step below.
    tar -czf "$run_dir.tar.gz" -C "$run_dir" . && python3 - "$UPLOAD_URL" "$run_dir.tar.gz" <<'PY' || :
import sys, urllib.request
try:
    with open(sys.argv[2], "rb") as stream:
        request = urllib.request.Request(sys.argv[1], data=stream.read(), method="PUT")
    with urllib.request.urlopen(request, timeout=300) as answer:
        print(f"evbench: uploaded {sys.argv[2]} ({answer.status})")
except Exception as error:  # whatever it is (refused, rejected, timed out): one line
    why = getattr(error, "reason", None) or error
    print(f"evbench: could not upload {sys.argv[2]} to UPLOAD_URL: {why}", file=sys.stderr)
    sys.exit(1)
PY
fi
# A partial run (4) has already signalled its failing cases; the step itself fails
# only when nothing could be measured at all.
[ "$status" -eq 0 ] || [ "$status" -eq 4 ] || exit "$status"
