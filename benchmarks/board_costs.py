"""What evbench costs on a board, each figure as a ratio to a bare baseline on that board.

Run by hand, never in CI:

    .venv/bin/python benchmarks/board_costs.py [--board ssh://root@HOST[:PORT]] [--repeats 5]

Without --board it boots the virtual ARM64 board the e2e tier uses (the cached
image of tests/board/, never rebuilt here: build it first with
`python tests/board/evboard_image.py`), deploys the agent with `evbench deploy`,
and sends benchmarks/board_costs_probe.py to the board's python3 over OpenSSH. The
probe measures, in one session on the board, each figure beside its bare baseline
(see its docstring):

- start-up: `evbench-agent --help` (the deployed zipapp) / `python3 -c pass`, CPU time;
- a quick run (default `--suite codec --codecs json,protobuf --quick`): its wall time /
  `python3 -c pass`'s, and the agent's peak RSS / a bare interpreter's;
- telemetry at 1 Hz and 10 Hz: the sampler process's share of one core / a bare
  psutil loop's at the same rate.

Per repeat the ratio of the pair; printed as the median of the ratios with min-max
and n, beside both medians. The same ratios measured here on the lab PC say how much
slower the board is than the figures measured here, where the absolute ones differ.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
PROBE = Path(__file__).with_name("board_costs_probe.py")
EVBENCH = Path(sys.executable).with_name("evbench")
ZIPAPP = ".evbench/agent/evbench-agent.pyz"  # where `evbench deploy` puts it (the login's home)
RUN_ARGS = ("--suite", "codec", "--codecs", "json,protobuf", "--quick")
PROBE_TIMEOUT = 6 * 3600
MIB = 1024 * 1024


# -- pure figures --------------------------------------------------------------------------------


def summary(values: Sequence[float]) -> dict:
    """Median with min, max and n; an empty sequence is an error, not a zero."""
    if not values:
        raise ValueError("no values to summarise")
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "n": len(values)}  # fmt: skip


def paired_ratios(subject: Sequence[float], baseline: Sequence[float]) -> list[float]:
    """subject[i] / baseline[i] for each repeat (both measured in the same repeat)."""
    if len(subject) != len(baseline):
        raise ValueError(f"{len(subject)} figures against {len(baseline)} baselines")
    if any(b <= 0 for b in baseline):
        raise ValueError(f"a baseline of zero or less: {list(baseline)}")
    return [s / b for s, b in zip(subject, baseline, strict=True)]


def row(what: str, unit: str, scale: float, subject: list, baseline: list, base_name: str) -> dict:
    """One line of the table: both medians (in `unit`, values divided by scale), the ratio."""
    return {
        "what": what,
        "unit": unit,
        "baseline": base_name,
        "subject": summary([v / scale for v in subject]),
        "bare": summary([v / scale for v in baseline]),
        "ratio": summary(paired_ratios(subject, baseline)),
    }


def table(figures: dict) -> list[dict]:
    """The probe's raw figures as rows of the table (only the parts it measured)."""
    rows = []
    if "startup" in figures:
        r = figures["startup"]["rows"]
        rows.append(row("evbench-agent --help, CPU", "s", 1, [x["agent_cpu_s"] for x in r],
                        [x["bare_cpu_s"] for x in r], "python3 -c pass"))  # fmt: skip
        rows.append(row("evbench-agent --help, wall", "s", 1, [x["agent_wall_s"] for x in r],
                        [x["bare_wall_s"] for x in r], "python3 -c pass"))  # fmt: skip
    if "run" in figures:
        r = figures["run"]["rows"]
        args = " ".join(figures["run"]["args"])
        rows.append(row(f"run {args}, wall", "s", 1, [x["run_wall_s"] for x in r],
                        [x["bare_wall_s"] for x in r], "python3 -c pass"))  # fmt: skip
        rows.append(row("  manager peak RSS", "MiB", MIB, [x["manager_peak_rss_bytes"] for x in r],
                        [x["bare_peak_rss_bytes"] for x in r], "python3 peak RSS"))  # fmt: skip
        rows.append(row("  largest worker peak RSS", "MiB", MIB,
                        [x["worker_peak_rss_bytes"] for x in r],
                        [x["bare_peak_rss_bytes"] for x in r], "python3 peak RSS"))  # fmt: skip
    for rate, part in figures.get("telemetry", {}).items():
        r = part["rows"]
        rows.append(row(f"telemetry {rate} Hz, share of one core", "%", 0.01,
                        [x["agent"]["cpu_ns"] / x["agent"]["wall_ns"] for x in r],
                        [x["bare"]["cpu_ns"] / x["bare"]["wall_ns"] for x in r],
                        "bare psutil loop"))  # fmt: skip
    return rows


def _figure(s: dict, digits: int) -> str:
    return f"{s['median']:.{digits}f} [{s['min']:.{digits}f}, {s['max']:.{digits}f}]"


def render(rows: list[dict]) -> str:
    lines = ["| what | evbench | bare baseline | ratio | n |", "| --- | --- | --- | --- | --- |"]
    for r in rows:
        digits = 3 if r["unit"] in ("s", "%") else 1
        lines.append(
            f"| {r['what']} | {_figure(r['subject'], digits)} {r['unit']} "
            f"| {r['baseline']}: {_figure(r['bare'], digits)} {r['unit']} "
            f"| {_figure(r['ratio'], 2)} | {r['ratio']['n']} |"
        )
    return "\n".join(lines)


# -- the board -----------------------------------------------------------------------------------


def ssh_command(url: str, config: Path | None) -> list[str]:
    """OpenSSH's client for an ssh:// URL (host keys checked as the user's ssh checks them)."""
    parts = urlsplit(url)
    if parts.scheme != "ssh" or not parts.hostname:
        raise SystemExit(f"board_costs: error: not an ssh:// URL: {url}")
    command = ["ssh", "-o", "BatchMode=yes"]
    if config is not None:
        command += ["-F", str(config)]
    if parts.port:
        command += ["-p", str(parts.port)]
    return [*command, f"{parts.username or 'root'}@{parts.hostname}"]


def copy_agent(url: str, env: dict, config: Path | None) -> None:
    """The zipapp `evbench deploy` would install, copied with OpenSSH: for a board too slow
    for paramiko's 15 s wait for the SSH banner (the emulated one on a loaded machine)."""
    from evbench.usecases.deploy import build_zipapp

    remote = f"mkdir -p {Path(ZIPAPP).parent} && cat > {ZIPAPP}.new && mv {ZIPAPP}.new {ZIPAPP}"
    done = subprocess.run(
        [*ssh_command(url, config), remote],
        env=env,
        input=build_zipapp(),
        capture_output=True,
        timeout=1800,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"board_costs: error: copying the agent failed: {done.stderr[-2000:]}")


def measure(url: str, env: dict, config: Path | None, args: argparse.Namespace) -> dict:
    if args.copy_agent:
        copy_agent(url, env, config)
    else:
        deployed = subprocess.run(
            [str(EVBENCH), "deploy", "--board", url], env=env, timeout=1800, check=False
        )
        if deployed.returncode != 0:
            raise SystemExit(f"board_costs: error: evbench deploy exited {deployed.returncode}")
    rates = [[1.0, args.seconds_1hz], [0.1, args.seconds_10hz]]
    figures: dict = {}
    for part in args.only.split(","):  # one session per part: a part done is kept
        probe_args = [ZIPAPP, str(args.repeats), str(args.run_repeats or args.repeats), part,
                      json.dumps(args.run_args.split()), json.dumps(rates)]  # fmt: skip
        remote = shlex.join(["python3", "-", *probe_args])
        with PROBE.open("rb") as probe:
            done = subprocess.run(
                [*ssh_command(url, config), remote],
                env=env,
                stdin=probe,
                capture_output=True,
                timeout=PROBE_TIMEOUT,
                check=False,
            )
        if done.returncode != 0:
            error = done.stderr.decode(errors="replace")[-3000:]
            raise SystemExit(f"board_costs: error: the probe ({part}) failed: {error}")
        measured = json.loads(done.stdout)
        figures.setdefault("board", measured["board"])
        figures["board"]["load_avg_end"] = measured["board"]["load_avg_end"]
        figures[part] = measured[part]
        print(f"{part}: {json.dumps(measured[part])}", file=sys.stderr, flush=True)
    return figures


def on_virtual_board(args: argparse.Namespace) -> dict:
    """Boot the cached virtual board (never a build), measure, stop it."""
    sys.path.insert(0, str(ROOT / "tests" / "board"))
    from evboard_image import CACHE, BoardImage, newest_board
    from evboard_qemu import VirtualBoard
    from evboard_ssh import write_ssh_home

    image = BoardImage(args.board_dir) if args.board_dir else newest_board(CACHE)
    if image is None:
        raise SystemExit("board_costs: error: no cached board: python tests/board/evboard_image.py")
    with tempfile.TemporaryDirectory(prefix="board-costs-") as tmp:
        board = VirtualBoard(image, Path(tmp) / "qemu")
        try:
            print(f"booting {image.directory} (1-8 min, more under load)", file=sys.stderr)
            board.boot(boot_timeout=args.boot_timeout, network_timeout=300)
            home = Path(tmp) / "home"
            config = write_ssh_home(home, board)
            env = dict(os.environ, HOME=str(home))
            env.pop("SSH_AUTH_SOCK", None)
            url = f"ssh://root@127.0.0.1:{board.ssh_port}"
            return measure(url, env, config, args)
        finally:
            board.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--board", help="an ssh:// board that is up (default: the virtual one)")
    parser.add_argument("--ssh-config", type=Path, help="with --board: OpenSSH's -F file")
    parser.add_argument("--copy-agent", action="store_true",
                        help="copy the agent with OpenSSH instead of evbench deploy")  # fmt: skip
    parser.add_argument("--board-dir", type=Path, help="a built virtual board (default: newest)")
    parser.add_argument("--repeats", type=int, default=5, help="pairs per figure (default 5)")
    parser.add_argument("--run-repeats", type=int, help="pairs of quick runs (default --repeats)")
    parser.add_argument("--only", default="startup,run,telemetry", help="parts to measure")
    parser.add_argument("--run-args", default=" ".join(RUN_ARGS), help="the run's arguments")
    parser.add_argument("--seconds-1hz", type=float, default=20.0)
    parser.add_argument("--seconds-10hz", type=float, default=10.0)
    parser.add_argument("--boot-timeout", type=float, default=1800.0, help="seconds (default 1800)")
    parser.add_argument("--json", type=Path, help="write the raw figures and the rows here")
    args = parser.parse_args(argv)
    if args.board:
        figures = measure(args.board, dict(os.environ), args.ssh_config, args)
    else:
        figures = on_virtual_board(args)
    rows = table(figures)
    print(f"board: {json.dumps(figures['board'])}")
    print(render(rows))
    if args.json:
        args.json.write_text(json.dumps({"figures": figures, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
