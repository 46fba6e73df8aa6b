"""evbench's LAVA tables: its device types (lava/job.py) against docs/lava.md, the CLI and
what each job must hold, written here by hand from LAVA's device-type templates (U-Boot
boots over TFTP and NFS, QEMU from tmpfs with a context); its units in LAVA's test cases.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from conftest import ROOT
from test_lava import JOB_ARGS

from evbench.lava import job
from evbench_agent.integrations import lava_units
from evbench_core import results
from evbench_core.errors import UserError

LAVA_DOC = ROOT / "docs" / "lava.md"
SK_ROOTFS = "http://lab.example/am62x/evbench-image-am62xx-evm.rootfs.tar.xz"
QEMU_ROOTFS = "http://lab.example/qemuarm64/evbench-image-qemuarm64.rootfs.ext4"
#: Per device type: the job's files, then (deploy to, boot method, has a context).
EXPECTED = {
    "k3-am625-sk": ({"rootfs": SK_ROOTFS, "dtb": "http://lab/k3.dtb"}, ("tftp", "u-boot", False)),
    "qemu": ({"rootfs": QEMU_ROOTFS}, ("tmpfs", "qemu", True)),
    "qemu-aarch64": ({"rootfs": QEMU_ROOTFS}, ("tmpfs", "qemu", True)),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_device_types_job_deploys_and_boots_as_its_template_does(name):
    files, (deploy_to, boot_method, has_context) = EXPECTED[name]
    options = job.JobOptions(name, "https://git.example/e.git", "http://lab.example/Image", **files)
    built = job.build(options)
    assert built["device_type"] == name
    assert built["actions"][0]["deploy"]["to"] == deploy_to
    assert built["actions"][1]["boot"]["method"] == boot_method
    assert ("context" in built) == has_context


def test_an_unknown_device_type_is_refused_naming_the_known_ones():
    options = job.JobOptions("beaglebone-black", "r", "k", QEMU_ROOTFS)
    with pytest.raises(UserError, match="unknown LAVA device type 'beaglebone-black'") as raised:
        job.build(options)
    assert all(name in raised.value.hint for name in EXPECTED)


def test_every_registered_device_type_is_expected_here_documented_and_offered_by_the_cli():
    assert set(job.device_types()) == set(EXPECTED) == set(JOB_ARGS)
    text = LAVA_DOC.read_text()
    table = text.split("| device type | the device dictionary must set |", 1)[1].split("\n\n")[0]
    rows = table.splitlines()[2:]
    documented = [name for line in rows for name in re.findall(r"`([^`]+)`", line.split("|")[1])]
    assert sorted(documented) == sorted(job.device_types())
    argv = [sys.executable, "-m", "evbench", "lava", "job", "--help"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True)
    assert "{k3-am625-sk,qemu,qemu-aarch64}" in done.stdout


#: What a LAVA signal parameter carries safely: LAVA splits on white space and '=',
#: and evbench keeps ids and units to these characters (docs/lava.md).
SIGNAL_SAFE = re.compile(r"^[A-Za-z0-9._-]+$")


@pytest.mark.parametrize("unit", sorted(results.UNITS | {"ratio"}))
def test_every_unit_has_a_lava_spelling_that_reads_back(unit: str) -> None:
    # Reading back to `unit` itself also means no two units share a spelling.
    spelling = lava_units.to_lava(unit)
    assert SIGNAL_SAFE.match(spelling), spelling
    assert lava_units.from_lava(spelling) == unit


@pytest.mark.parametrize(
    ("unit", "spelling"),
    [("bytes/s", "bytes-per-s"), ("messages/s", "messages-per-s"), ("°C", "degC")],
)
def test_rates_and_temperature_are_spelled_out(unit: str, spelling: str) -> None:
    assert lava_units.to_lava(unit) == spelling


@pytest.mark.parametrize(
    ("old", "unit"),
    [("B-s", "bytes/s"), ("msg-s", "messages/s"), ("B/s", "bytes/s"), ("msg/s", "messages/s")],
)
def test_what_older_agents_sent_still_reads(old: str, unit: str) -> None:
    assert lava_units.from_lava(old) == unit


def test_an_unknown_spelling_is_named() -> None:
    with pytest.raises(lava_units.UnknownUnit, match="furlongs"):
        lava_units.from_lava("furlongs")
