"""Issue 44, item 13 and the terminal part of item 4, on the real commands: one quick real
run of the codec suite with JSON, Protobuf and a C runtime pair (protobuf-c against cJSON,
built by the documented command), its `evbench run` output on an 80-column pseudo-terminal
(python's pty, TIOCSWINSZ), then `evbench report --terminal` there too and `evbench
compare` with COLUMNS=80. Expected widths are counted on the printed lines."""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from native_cross import build_documented
from test_terminal_width import on_pty

from evbench_agent.native import runtimes

pytestmark = pytest.mark.integration  # a real run, real native harnesses

EVBENCH = [sys.executable, "-m", "evbench"]
PAIR = ("c:protobuf-c", "c:cjson")
RUN = [*EVBENCH, "run", "--quick", "--no-history", "--suite", "codec", "--profile", "seed",
       "--codecs", "json,protobuf," + ",".join(PAIR)]  # fmt: skip
#: A line ending in a number whose next line starts with a unit: a number split from it.
_SPLIT_UNIT = re.compile(r"^\s*(µs|ms|ns|s|B|KiB|MiB|%|Hz|min)(\W|$)")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return {**env, **extra}


@pytest.fixture(scope="module")
def native_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """The harness directory, the run directory and what `evbench run` printed on an
    80-column terminal."""
    names = [runtimes.RUNTIMES[codec].executable_name for codec in PAIR]
    build = build_documented(tmp_path_factory, *names)
    out = tmp_path_factory.mktemp("width") / "run"
    env = _env(EVBENCH_NATIVE_DIR=str(build))
    code, printed, stderr = on_pty([*RUN, "--out", str(out)], 80, env)
    assert code == 0, stderr + printed
    return build, out, printed


def _check_fits(printed: str, columns: int) -> list[str]:
    lines = printed.splitlines()
    assert lines, printed
    for line in lines:
        assert len(line) <= columns, line
    for line, after in itertools.pairwise(lines):
        number = re.search(r"(^|\s)[-+]?\d[\d.]*$", line)  # the line ends in a number
        assert not (number and _SPLIT_UNIT.match(after)), (line, after)
    return lines


def test_the_one_screen_fits_80_columns_and_answers_each_native_pair(native_run):
    _build, out, printed = native_run
    lines = _check_fits(printed, 80)
    # item 4: the C pair's heading, naming both runtimes, then its one-line verdict
    heading = next(i for i, line in enumerate(lines) if " in C:" in line)
    assert lines[heading].startswith("Protobuf (protobuf-c ")
    assert "against JSON (cJSON " in lines[heading]
    verdict = lines[heading + 1]
    assert verdict.startswith("  seed: "), verdict
    assert any(word in verdict for word in ("smaller", "faster", "no winner")), verdict
    # the pair's full table stays behind --details: its header appears nowhere here
    assert "CI (Holm step)" not in printed
    assert f"evbench report --terminal {out}" in printed


def test_report_terminal_fits_80_columns_and_120_when_piped(native_run):
    build, out, _printed = native_run
    env = _env(EVBENCH_NATIVE_DIR=str(build))
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


def test_compare_fits_80_columns(native_run):
    _build, out, _printed = native_run
    argv = [*EVBENCH, "compare", "--no-history", str(out), str(out)]
    code, printed, stderr = on_pty(argv, 80, _env())
    assert code == 0, stderr
    lines = _check_fits(printed, 80)
    keyed = [line for line in lines if line.startswith("Suite ")]
    key = ["Suite", "Profile", "Codec", "Metric"]
    assert len(keyed) > 1 and all([c.strip() for c in line.split("|")[:4]] == key for line in keyed)


def test_item_4_the_piped_one_screen_answers_each_native_pair(native_run, tmp_path):
    """Item 4 alone, at the piped default of 120 columns: the C pair's answer is on the
    one screen (today's code printed the Python answer and returned before it)."""
    build, _out, _printed = native_run
    out = str(tmp_path / "run")
    done = subprocess.run([*RUN, "--out", out], capture_output=True, text=True, timeout=900,
                          env=_env(EVBENCH_NATIVE_DIR=str(build)))  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = _check_fits(done.stdout, 120)
    assert len(lines) <= 50
    heading = lines.index("Protobuf (protobuf-c 1.4.1) against JSON (cJSON 1.7.15) in C:")
    assert lines[heading + 1].startswith("  seed: Protobuf (protobuf-c) - ")
    assert "CI (Holm step)" not in done.stdout  # the pair's table: --details
