"""evbench lava: jobs that run evbench under LAVA, and their results back as run directories.

evbench lava job --device-type k3-am625-sk --repository URL --kernel URL --dtb URL
                 --rootfs URL [run options] [--out job.yaml] [--submit]
evbench lava results JOB_ID --out DIR (--uploaded RUN.tar.gz | --test-cases FILE | via lavacli)
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from evbench.boards.base import child_environment
from evbench.commands import _outputs
from evbench_core.errors import ExitCode, UserError

NAME = "lava"
HELP = "LAVA: write a job definition for a device type; turn a job's results into a run"
CRITERIA = ("report", "candidate-not-worse", "candidate-wins")
LAVACLI_TIMEOUT_S = 120


def setup_parser(parser: argparse.ArgumentParser) -> None:
    from evbench.lava.job import device_types  # light: the job writer, no LAVA library

    actions = parser.add_subparsers(dest="lava_action", metavar="{job,results}", required=True)
    job = actions.add_parser("job", help="write a LAVA job definition that runs evbench")
    job.add_argument("--device-type", required=True, choices=device_types())
    job.add_argument("--repository", required=True, help="git URL of this evbench repository")
    job.add_argument("--revision", help="the commit or branch of the test definition")
    job.add_argument("--kernel", required=True, metavar="URL", help="kernel image")
    job.add_argument("--rootfs", required=True, metavar="URL", help="root filesystem")
    job.add_argument("--dtb", metavar="URL", help="device tree (k3-am625-sk)")
    job.add_argument("--suite", default="codec,link", help="suites (default codec,link)")
    job.add_argument("--profile", default="seed,ev-full", help="profiles (default seed,ev-full)")
    job.add_argument("--codecs", default="all", help="codecs (default: all the board has)")
    job.add_argument("--quick", action="store_true", help="the quick sample plan")
    job.add_argument("--criteria", choices=CRITERIA, default="report", help="verdict cases")
    job.add_argument("--upload-url", default="", help="where the board PUTs its run directory")
    job.add_argument("--job-name", help="the job's name in LAVA")
    job.add_argument("--out", type=Path, help="write the job here (default: standard output)")
    job.add_argument("--submit", action="store_true", help="submit it with lavacli")
    job.add_argument("--identity", help="lavacli's identity (its -i)")

    results = actions.add_parser("results", help="a LAVA job's results as a run directory")
    results.add_argument("job_id", metavar="JOB_ID")
    results.add_argument("--out", type=Path, required=True, help="the new run directory")
    source = results.add_mutually_exclusive_group()
    source.add_argument("--uploaded", type=Path, metavar="RUN.tar.gz", help="the uploaded run")
    source.add_argument("--test-cases", type=Path, metavar="FILE", help="lavacli results --yaml")
    results.add_argument("--identity", help="lavacli's identity (its -i)")


def _planned_seconds(args: argparse.Namespace) -> float:
    # The plan as this machine would run it; the job scales it for the device type.
    from evbench_agent import registry, spec

    document = {"suites": args.suite, "profiles": args.profile, "quick": args.quick}
    if args.codecs != "all":
        document["codecs"] = args.codecs
    return sum(registry.planned_seconds(spec.from_dict(document)).values())


def _lavacli(arguments: list[str], identity: str | None) -> str:
    lavacli = shutil.which("lavacli")
    if lavacli is None:
        raise UserError(
            "lavacli is not installed", hint="pip install lavacli, then lavacli identities add"
        )
    command = [lavacli, *(["-i", identity] if identity else []), *arguments]
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=LAVACLI_TIMEOUT_S,
            check=False,
            env=child_environment(),
        )
    except subprocess.TimeoutExpired:
        raise UserError(f"lavacli did not answer within {LAVACLI_TIMEOUT_S} s") from None
    if done.returncode != 0:
        raise UserError(f"lavacli {arguments[0]} failed: {done.stderr.strip()[:300]}")
    return done.stdout


def _job(args: argparse.Namespace) -> ExitCode:
    import yaml

    from evbench.lava import job

    parameters = {
        "SUITES": args.suite,
        "PROFILES": args.profile,
        "CODECS": args.codecs,
        "QUICK": "true" if args.quick else "false",
        "CRITERIA": args.criteria,
        "UPLOAD_URL": args.upload_url,
    }
    options = job.JobOptions(
        device_type=args.device_type,
        repository=args.repository,
        revision=args.revision,
        kernel=args.kernel,
        rootfs=args.rootfs,
        dtb=args.dtb,
        parameters=parameters,
        planned_seconds=_planned_seconds(args),
        job_name=args.job_name,
    )
    text = yaml.safe_dump(job.build(options), sort_keys=False)
    if args.out:
        _outputs.make_directory(args.out.parent, "the folder of --out")
        _outputs.write_file(args.out, text.encode(), "--out")
    else:
        sys.stdout.write(text)
    if args.submit:
        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as stream:
            stream.write(text)
            stream.flush()
            print(_lavacli(["jobs", "submit", stream.name], args.identity).strip())
    return ExitCode.OK


def _results(args: argparse.Namespace) -> ExitCode:
    from evbench.lava import results

    if args.uploaded:
        directory = results.from_upload(args.uploaded, args.out, args.job_id)
    else:
        source = args.test_cases
        if source is None:
            text = _lavacli(["results", args.job_id, "--yaml"], args.identity)
            scratch = Path(tempfile.mkdtemp(prefix="evbench-lava-"))
            source = scratch / "results.yaml"
            source.write_text(text, encoding="utf-8")
        directory = results.from_test_cases(source, args.out, args.job_id)
    print(results.describe(directory))
    return ExitCode.OK


def run(args: argparse.Namespace) -> int:
    if args.lava_action == "job":
        return _job(args)
    return _results(args)
