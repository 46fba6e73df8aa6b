"""LAVA's own code for the LAVA tests, run in .venv-lava: `python tests/lava_check.py CMD ...`
imports Debian 12's lava-common, lava-dispatcher and lava-server (2023.01, unpacked by
tests/setup_envs.py into tests/cache/lava/root) and prints JSON. Commands:

    validate JOB             lava_common.schemas.validate(job, strict=True)
    device-type JOB          the job's device-type template rendered (lava-server, a sample
                             device dictionary), then lava-dispatcher's Deployment.select and
                             Boot.select: the strategies that take the job's actions
    job JOB                  both, in one process (each start of LAVA's code takes a while)
    signals CONSOLE          a console log read as LAVA's test shell does (handle_testcase)
    export CONSOLE           those cases as a LAVA server's REST API (v0.2) returns them
    test-shell JOB DIR       lava-dispatcher parses, validates and runs the job's overlay
                             actions (definition cloned, run.sh and helpers written), then
                             unpacks the overlay into DIR at lava_test_results_dir

EVBENCH_LAVA_SOURCE=DIR reads LAVA from a checkout of its repository instead (its dependencies
in the interpreter). libguestfs's `guestfs`, imported by lava-dispatcher and never called, is
faked: PyPI has none.
"""

import decimal
import json
import os
import re
import sys
import tarfile
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent / "cache" / "lava" / "root"
PACKAGES = ROOT / "usr" / "lib" / "python3" / "dist-packages"
DEVICE_TYPES = ROOT / "usr" / "share" / "lava-server" / "device-types"
if os.environ.get("EVBENCH_LAVA_SOURCE"):
    PACKAGES = Path(os.environ["EVBENCH_LAVA_SOURCE"])
    DEVICE_TYPES = PACKAGES / "etc" / "dispatcher-config" / "device-types"
sys.path.insert(0, str(PACKAGES))
sys.modules.setdefault("guestfs", types.ModuleType("guestfs"))  # the one stand-in (above)

#: A device dictionary as a lab writes one: the commands LAVA runs to reach and power it.
DEVICE_DICTIONARY = """{% extends 'DEVICE_TYPE.jinja2' %}
{% set connection_command = 'telnet localhost 7000' %}
{% set power_off_command = '/usr/local/bin/pdu off 1' %}
{% set power_on_command = '/usr/local/bin/pdu on 1' %}
{% set hard_reset_command = '/usr/local/bin/pdu reboot 1' %}
"""


def _load(path: str) -> dict:
    import yaml

    return yaml.safe_load(Path(path).read_text())


def validate(path: str) -> dict:
    from lava_common.schemas import validate as lava_validate

    try:
        lava_validate(_load(path), strict=True, extra_context_variables=[])
    except Exception as error:  # voluptuous's MultipleInvalid and friends
        return {"valid": False, "error": str(error)}
    return {"valid": True}


def render_device(device_type: str, context: dict | None = None, extra: str = "") -> dict:
    """The device's configuration as lava-server renders it for a job (with its context)."""
    import jinja2
    import yaml

    loader = jinja2.FileSystemLoader(str(DEVICE_TYPES))
    try:  # LAVA's own environment (its filters) where the release has one
        from lava_common.jinja import create_device_templates_env

        environment = create_device_templates_env(loader=loader)
    except ImportError:  # 2023.01: lava-server renders with a plain environment
        environment = jinja2.Environment(loader=loader, trim_blocks=True, autoescape=False)
    dictionary = DEVICE_DICTIONARY.replace("DEVICE_TYPE", device_type) + extra
    template = environment.from_string(dictionary)
    return yaml.safe_load(template.render(**(context or {})))


def device_type(path: str) -> dict:
    from lava_common.exceptions import LAVAError

    try:  # LAVA from 2024 on: the strategies are registered where they are defined
        from lava_dispatcher.actions.boot_strategy import BootStrategy as Boot
        from lava_dispatcher.actions.deploy_strategy import DeployStrategy as Deployment
    except ImportError:  # 2023.01: imported for their side effect, registering them
        import lava_dispatcher.actions.boot.strategies
        import lava_dispatcher.actions.deploy.strategies  # noqa: F401
        from lava_dispatcher.logical import Boot, Deployment

    job = _load(path)
    device = render_device(job["device_type"])
    chosen = {}
    try:
        for action in job["actions"]:
            ((kind, parameters),) = action.items()
            if kind == "deploy":
                chosen["deploy"] = Deployment.select(device, parameters).__name__
            elif kind == "boot":
                chosen["boot"] = Boot.select(device, parameters).__name__
    except LAVAError as error:
        return {"accepted": False, "error": str(error), **chosen}
    return {"accepted": True, **chosen}


def job(path: str) -> dict:
    return {"validate": validate(path), "device-type": device_type(path)}


def signals(path: str) -> dict:
    """Every test case the test shell would record, with its test set."""
    from lava_dispatcher.actions.test.shell import handle_testcase
    from lava_dispatcher.connection import SignalMatch

    # lava_dispatcher/actions/test/shell.py, TestShellAction's "signal" pattern.
    pattern = re.compile(r"<LAVA_SIGNAL_(\S+) ([^>]+)>")
    cases, errors, test_set = [], [], None
    for match in pattern.finditer(Path(path).read_text()):
        if match.group(1) in ("STARTRUN", "ENDRUN"):
            continue  # the runner's own, around the definition
        name, params = match.group(1), match.group(2).split()
        if name == "TESTSET":
            action = params.pop(0)
            test_set = params[0] if action == "START" else None
        elif name == "TESTCASE":
            try:
                result = SignalMatch().match(handle_testcase(params))
            except Exception as error:  # JobError / TestError: LAVA logs and drops the case
                errors.append(str(error))
                continue
            result["set"] = test_set
            cases.append(result)
        else:
            errors.append(f"unexpected signal {name}")
    return {"cases": cases, "errors": errors}


#: lava_results_app.models.TestCase.measurement: DecimalField(max_digits=30, decimal_places=10).
MEASUREMENT_DIGITS, MEASUREMENT_PLACES = 30, 10


def _stored_measurement(value: float) -> str:
    """A measurement as the server stores it and the REST API prints it: the test shell sends
    float(Decimal(text)); Django's DecimalField makes a Decimal of it at max_digits, quantized
    to decimal_places; DRF prints it as text. (Django needs the server's database: this
    follows the model's declaration.)"""
    context = decimal.Context(prec=MEASUREMENT_DIGITS)
    number = context.create_decimal_from_float(value)
    return str(number.quantize(decimal.Decimal(1).scaleb(-MEASUREMENT_PLACES), context=context))


def export(path: str) -> dict:
    """A REST API page of the job's test cases (/api/v0.2/jobs/ID/tests/?limit=...)."""
    parsed = signals(path)
    results, set_ids = [], {}
    for number, case in enumerate(parsed["cases"], start=1):
        # TestShellAction.signal_test_case's res_data, then map_scanned_results.
        measurement = None
        if "measurement" in case:
            measurement = _stored_measurement(float(decimal.Decimal(case["measurement"])))
        unit = case.get("units", "") if measurement is not None else ""
        # The test set is a foreign key: the set's id, not its name.
        name = case["set"]
        test_set = None if name is None else set_ids.setdefault(name, len(set_ids) + 1)
        results.append({
            "id": number, "name": case["test_case_id"], "unit": unit, "result": case["result"],
            "measurement": measurement,
            "suite": 2,  # the definition's suite (1 is "lava", the job's own cases)
            "test_set": test_set,
        })  # fmt: skip
    return {"count": len(results), "next": None, "previous": None, "results": results}


def test_shell(path: str, dut: str) -> dict:
    """lava-dispatcher writes the test shell for the job; DIR then holds it as a board would."""
    import inspect
    import logging

    import lava_dispatcher.job
    import yaml
    from lava_common.log import YAMLLogger
    from lava_dispatcher.device import NewDevice
    from lava_dispatcher.parser import JobParser

    job_document = _load(path)
    dut_dir = Path(dut).resolve()
    results_dir = dut_dir / "lava-%s"
    results_setting = f"{{% set lava_test_results_dir = '{results_dir}' %}}\n"
    device = NewDevice(
        render_device(job_document["device_type"], job_document.get("context"), results_setting)
    )
    # The dispatcher's download directory (a site setting, /var/lib/lava/dispatcher/tmp):
    # dispatcher.yaml's dispatcher_download_dir from 2024 on, a module constant before.
    download_dir = str(dut_dir.parent / "dispatcher")
    lava_dispatcher.job.DISPATCHER_DOWNLOAD_DIR = download_dir
    dispatcher_config = yaml.safe_dump({"dispatcher_download_dir": download_dir})
    log_file = dut_dir.parent / "dispatcher.log"
    job_id = "4242"
    content = yaml.safe_dump(job_document)
    order = list(inspect.signature(JobParser.parse).parameters)
    if order.index("logger") > order.index("dispatcher_config"):  # LAVA 2024+: a keyword
        logger = YAMLLogger()
        logger.add_file_handler(str(log_file))
        job = JobParser().parse(content, device, job_id, dispatcher_config, logger=logger)
    else:  # 2023.01: a logging.Logger subclass, the logger before the config
        logging.setLoggerClass(YAMLLogger)
        logger = logging.getLogger("dispatcher")
        logging.setLoggerClass(logging.Logger)
        logger.addHandler(logging.FileHandler(log_file))
        logger.setLevel(logging.DEBUG)
        job = JobParser().parse(content, device, job_id, logger, dispatcher_config)
    job.validate()
    actions = [job.pipeline]
    qemu: list[str] = []
    while actions:  # the QEMU command (binary, device options, the job's image_args)
        for action in actions.pop().actions:
            if action.name == "execute-qemu":
                qemu = [*action.base_sub_command, *action.commands]
            if action.pipeline is not None:
                actions.append(action.pipeline)
    overlay = next(
        action
        for deploy in job.pipeline.actions
        if deploy.pipeline is not None
        for action in deploy.pipeline.actions
        if action.name == "lava-overlay"
    )
    overlay.run(None, time.monotonic() + 120)
    tarball = overlay.get_namespace_data(action="compress-overlay", label="output", key="file")
    # The board unpacks the tarball at its root (2023.01's members start at lava-ID/, later
    # releases' at lava_test_results_dir's full path): the test directory goes where run.sh
    # looks for it.
    unpacked = dut_dir.parent / "overlay"
    with tarfile.open(tarball) as tar:
        tar.extractall(unpacked, filter="tar")
    (found,) = [p for p in unpacked.rglob(f"lava-{job_id}") if p.is_dir()][:1]
    lava_dir = dut_dir / f"lava-{job_id}"
    dut_dir.mkdir(parents=True, exist_ok=True)
    found.rename(lava_dir)
    run_sh = sorted(str(p) for p in lava_dir.glob("0/tests/*/run.sh"))
    runner = str(lava_dir / "bin" / "lava-test-runner")
    return {"runner": runner, "stage": str(lava_dir / "0"), "qemu": qemu, "run_sh": run_sh}


def main() -> None:
    command, *paths = sys.argv[1:]
    handlers = {"validate": validate, "device-type": device_type, "job": job, "signals": signals,
                "export": export, "test-shell": test_shell}  # fmt: skip
    print(json.dumps(handlers[command](*paths)))


if __name__ == "__main__":
    main()
