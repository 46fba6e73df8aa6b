"""The one screen `evbench run` ends on, on real quick runs: both suites in at most 50 lines
of 120 columns; the codec suite with a C pair (protobuf-c against cJSON, built by the
documented command) on an 80-column pty, `evbench report --terminal` and `compare` too."""

import itertools
import re
import subprocess
import sys

import pytest
from native_cross import build_documented
from report_helpers import evbench
from test_terminal_width import on_pty, terminal_env

from evbench_agent.native import runtimes

pytestmark = pytest.mark.integration  # real runs, real native harnesses

EVBENCH = [sys.executable, "-m", "evbench"]
PAIR = ("c:protobuf-c", "c:cjson")
RUN = [*EVBENCH, "run", "--quick", "--no-history", "--suite", "codec", "--profile", "seed",
       "--codecs", "json,protobuf," + ",".join(PAIR)]  # fmt: skip
#: A line ending in a number whose next line starts with a unit: a number split from it.
_SPLIT_UNIT = re.compile(r"^\s*(µs|ms|ns|s|B|KiB|MiB|%|Hz|min)(\W|$)")


def test_the_default_output_is_one_screen_of_at_most_120_columns(tmp_path):
    out = tmp_path / "run"  # a quick run of both suites
    done = evbench("run", "--quick", "--no-history", "--out", str(out), timeout=900)
    assert done.returncode == 0, done.stderr
    printed = done.stdout.splitlines()
    for line in printed + done.stderr.splitlines():  # progress included
        assert len(line) <= 120, line
    assert len(printed) <= 50, done.stdout  # the answer and the pointers: one screen
    # the verdict in one line per profile (ev-full, seed), then the answer's sentences
    assert [line.split(":")[0] for line in printed[:2]] == ["ev-full", "seed"]
    assert all(len(line) <= 100 for line in printed[:2])
    assert printed[3] == "The answer (Protobuf against JSON, on this machine):"
    start = printed.index(next(line for line in printed if line.startswith("Profile ")))
    end = printed.index("", start)
    key_table = printed[start:end]
    assert max(len(line) for line in key_table) <= 100
    metrics = {line.split("|")[1].strip(" *") for line in key_table[2:]}
    assert {"Size", "Serialization", "Deserialization"} <= metrics
    assert any(metric.startswith("RTT") for metric in metrics)
    assert "Medians per codec:" not in done.stdout and "Does it fit" not in done.stdout
    # Bus fit by hand: the seed's JSON, >= 995 B at 10 bits a byte (8N1), holds a 115200
    # baud line 995 * 10 / 115200 = 86 ms > the 50 ms period: no fit. Protobuf's <= 281 B
    # take 281 * 8 / 2 Mbit/s = 1.1 ms of CAN FD data phase, plus 5 frames' arbitration at
    # 500 kbit/s (< 0.5 ms), as much for the reply: far below 40 % of 50 ms. It fits.
    assert any(line.startswith("seed") and "Bus fit at 20 Hz" in line for line in key_table)
    fit = " ".join(printed[printed.index(next(p for p in printed if p.startswith("Bus fit:"))) :])
    json_fits, protobuf_fits = fit.split("seed: JSON fits ")[1].split("; Protobuf fits ")
    assert "uart-115200" not in json_fits
    assert "canfd-500k-2M" in protobuf_fits.split(" (of ")[0]
    assert f"evbench report --terminal {out}" in done.stdout
    assert f"Report with plots: {out / 'report.html'}" in done.stdout


def _check_fits(printed: str, columns: int) -> list[str]:
    lines = printed.splitlines()
    assert lines, printed
    for line in lines:
        assert len(line) <= columns, line
    for line, after in itertools.pairwise(lines):
        number = re.search(r"(^|\s)[-+]?\d[\d.]*$", line)  # the line ends in a number
        assert not (number and _SPLIT_UNIT.match(after)), (line, after)
    return lines


def test_a_native_pairs_run_report_and_compare_fit_80_columns_and_120_piped(
    tmp_path_factory, tmp_path
):
    names = [runtimes.RUNTIMES[codec].executable_name for codec in PAIR]
    build = build_documented(tmp_path_factory, *names)
    out = tmp_path_factory.mktemp("width") / "run"  # `evbench run` at 80 columns: a short path
    env = terminal_env(EVBENCH_NATIVE_DIR=str(build))
    code, printed, stderr = on_pty([*RUN, "--out", str(out)], 80, env)
    assert code == 0, stderr + printed
    lines = _check_fits(printed, 80)
    # the C pair's heading, naming both runtimes, then its one-line verdict
    heading = next(i for i, line in enumerate(lines) if " in C:" in line)
    assert lines[heading].startswith("Protobuf (protobuf-c ")
    assert "against JSON (cJSON " in lines[heading]
    verdict = lines[heading + 1]
    assert verdict.startswith("  seed: "), verdict
    assert any(word in verdict for word in ("smaller", "faster", "no winner")), verdict
    # the pair's full table stays behind --details: its header appears nowhere here
    assert "CI (Holm step)" not in printed
    assert f"evbench report --terminal {out}" in printed
    # Piped, at the default 120 columns, the C pair's answer is on the one screen too.
    piped = str(tmp_path / "run")
    done = subprocess.run(
        [*RUN, "--out", piped], capture_output=True, text=True, timeout=900, env=env
    )
    assert done.returncode == 0, done.stderr
    lines = _check_fits(done.stdout, 120)
    assert len(lines) <= 50
    heading = lines.index("Protobuf (protobuf-c 1.4.1) against JSON (cJSON 1.7.15) in C:")
    assert lines[heading + 1].startswith("  seed: Protobuf (protobuf-c) - ")
    assert "CI (Holm step)" not in done.stdout  # the pair's table: --details
    code, printed, stderr = on_pty([*EVBENCH, "report", "--terminal", str(out)], 80, env)
    assert code == 0, stderr
    lines = _check_fits(printed, 80)
    # every column of the full table is still there, in groups that repeat Profile, Metric
    groups = [line for line in lines if line.startswith("Profile ") and "| Metric" in line]
    assert len(groups) > 1
    assert all(line.split("|")[1].strip() == "Metric" for line in groups)
    assert any("CI (Holm step)" in line for line in groups)
    assert "Protobuf (protobuf-c 1.4.1) against JSON (cJSON 1.7.15) in C" in printed
    # piped: the tables keep today's shape, whole (one header line holds every column)
    piped = subprocess.run([*EVBENCH, "report", "--terminal", str(out)], capture_output=True,
                           text=True, env=env, timeout=300)  # fmt: skip
    assert piped.returncode == 0, piped.stderr
    headers = [line for line in piped.stdout.splitlines() if line.startswith("Profile ")]
    assert any("| Verdict " in line and "| detectable" in line for line in headers)
    # what the one screen leaves out (the first test): each codec's medians, the bus budget
    assert "Medians per codec:" in piped.stdout and "Does it fit at 20 Hz?" in piped.stdout
    assert "Change (est.)" in piped.stdout  # the full comparison table's header
    # compare fits 80 columns too
    argv = [*EVBENCH, "compare", "--no-history", str(out), str(out)]
    code, printed, stderr = on_pty(argv, 80, terminal_env())
    assert code == 0, stderr
    lines = _check_fits(printed, 80)
    keyed = [line for line in lines if line.startswith("Suite ")]
    key = ["Suite", "Profile", "Codec", "Metric"]
    assert len(keyed) > 1 and all([c.strip() for c in line.split("|")[:4]] == key for line in keyed)
