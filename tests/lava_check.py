"""LAVA's own code, run by the LAVA tests in .venv-lava (python tests/lava_check.py ...).

It imports Debian 12's lava-common, lava-dispatcher and lava-server (2023.01),
unpacked by tests/setup_envs.py into tests/cache/lava/root, and prints JSON:

    validate JOB.yaml        lava_common.schemas.validate(job, strict=True)
    device-type JOB.yaml     render the job's device-type template from lava-server
                             with a sample device dictionary, then ask lava-dispatcher's
                             strategy selection (Deployment.select, Boot.select) which
                             deploy and boot strategies take the job's actions
    signals CONSOLE.txt      read a console log as LAVA's test shell does: its signal
                             pattern, handle_testcase, SignalMatch

One part is faked, and only because it cannot be installed from PyPI: the
libguestfs Python bindings (`guestfs`), which lava-dispatcher imports at module
level to build guest images and which strategy selection never calls.
"""

from __future__ import annotations

import json
import re
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent / "cache" / "lava" / "root"
PACKAGES = ROOT / "usr" / "lib" / "python3" / "dist-packages"
DEVICE_TYPES = ROOT / "usr" / "share" / "lava-server" / "device-types"
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


def render_device(device_type: str) -> dict:
    import jinja2
    import yaml

    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(DEVICE_TYPES)), trim_blocks=True, autoescape=False
    )
    template = environment.from_string(DEVICE_DICTIONARY.replace("DEVICE_TYPE", device_type))
    return yaml.safe_load(template.render())


def device_type(path: str) -> dict:
    # Imported for their side effect: they register the strategies select() chooses from.
    import lava_dispatcher.actions.boot.strategies
    import lava_dispatcher.actions.deploy.strategies  # noqa: F401
    from lava_common.exceptions import LAVAError
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


def signals(path: str) -> dict:
    """Every test case the test shell would record, with its test set."""
    from lava_dispatcher.actions.test.shell import handle_testcase
    from lava_dispatcher.connection import SignalMatch

    # lava_dispatcher/actions/test/shell.py, TestShellAction's "signal" pattern.
    pattern = re.compile(r"<LAVA_SIGNAL_(\S+) ([^>]+)>")
    cases, errors, test_set = [], [], None
    for match in pattern.finditer(Path(path).read_text()):
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


def main() -> None:
    command, path = sys.argv[1], sys.argv[2]
    handlers = {"validate": validate, "device-type": device_type, "signals": signals}
    print(json.dumps(handlers[command](path)))


if __name__ == "__main__":
    main()
