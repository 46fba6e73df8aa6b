"""evbench's LAVA tables: its device types (lava/job.py) against docs/lava.md, the CLI and
LAVA's device-type templates (U-Boot boots over TFTP and NFS, QEMU from tmpfs with a context);
its units in LAVA's test cases; the files `evbench lava results --test-cases` refuses.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

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
    ("unit", "spelling", "older"),
    [
        ("bytes/s", "bytes-per-s", ["B-s", "B/s"]),
        ("messages/s", "messages-per-s", ["msg-s", "msg/s"]),
        ("°C", "degC", []),
    ],
)
def test_rates_and_temperature_are_spelled_out_and_what_older_agents_sent_still_reads(
    unit: str, spelling: str, older: list[str]
) -> None:
    assert lava_units.to_lava(unit) == spelling
    assert [lava_units.from_lava(old) for old in older] == [unit] * len(older)


def test_an_unknown_spelling_is_named() -> None:
    with pytest.raises(lava_units.UnknownUnit, match="furlongs"):
        lava_units.from_lava("furlongs")


ENCODE = "codec.seed.json.encode.2d04ed79"
#: One record case as lavacli lists it: with it, a file is refused only for what a test adds.
GOOD_CASE = """- name: codec.seed.json.decode.2d04ed79
  result: pass
  suite: 1_evbench
  measurement: '3.823620312e-05'
  unit: s
"""


def _refused(tmp_path: Path, results_file: Path) -> str:
    """The one error line of `evbench lava results --test-cases results_file`, checked to
    be a user error (exit 2, docs/lava.md) that leaves no --out behind."""
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "evbench", "lava", "results", "9", "--test-cases"]
    argv += [str(results_file), "--out", str(out)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    errors = [line for line in done.stderr.splitlines() if line.startswith("evbench: error:")]
    assert (done.returncode, len(errors)) == (2, 1), done.stderr[:2000]
    assert "Traceback" not in done.stderr
    assert not out.exists()
    return errors[0]


def _alias_bomb(width: int = 10, depth: int = 6) -> str:
    """Anchors a0..a(depth-1), each `width` aliases of the one before: the last stands for
    width**depth items in a few hundred bytes (the 3 KB original went 9 deep)."""
    levels = [f"    a0: &a0 [{', '.join(['x'] * width)}]"]
    for level in range(1, depth):
        aliases = ", ".join([f"*a{level - 1}"] * width)
        levels.append(f"    a{level}: &a{level} [{aliases}]")
    return "- name: job\n  result: pass\n  suite: lava\n  metadata:\n" + "\n".join(levels) + "\n"


@pytest.mark.parametrize("case", [ENCODE, "verdict.codec.seed"])
def test_a_yaml_alias_is_refused_before_it_expands(tmp_path: Path, case: str) -> None:
    bomb = tmp_path / "bomb.yaml"
    used = f"- name: {case}\n  result: pass\n  suite: 1_evbench\n  measurement: *a5\n  unit: s\n"
    bomb.write_text(_alias_bomb() + used + GOOD_CASE)
    error = _refused(tmp_path, bomb)
    assert str(bomb) in error and "alias" in error
    assert len(error) < 300  # nothing of the expansion in it


@pytest.mark.parametrize(
    ("case", "field", "value", "says"),
    [
        (ENCODE, "measurement", "{payload: 3}", "measurement"),
        ("verdict.codec.seed", "measurement", "{payload: 3}", "measurement"),
        (ENCODE, "unit", "[payload, s]", "unit"),
        ("verdict.codec.seed", "result", "[payload]", "result"),
        # A measurement beyond what a results file holds: the bound it is beyond.
        (ENCODE, "measurement", "'1e200'", f"{results.MAX_VALUE:g}"),
    ],
)
def test_a_list_or_mapping_or_a_huge_measurement_is_refused_naming_the_case(
    tmp_path: Path, case: str, field: str, value: str, says: str
) -> None:
    fields = {"result": "pass", "measurement": "'1.5'", "unit": "s", field: value}
    listed = "".join(f"  {key}: {item}\n" for key, item in fields.items())
    results_file = tmp_path / "cases.yaml"
    results_file.write_text(f"- name: {case}\n  suite: 1_evbench\n{listed}" + GOOD_CASE)
    error = _refused(tmp_path, results_file)
    assert case in error and field in error and says in error
    assert "payload" not in error  # the value is not turned into text: it may be huge


@pytest.mark.parametrize("kind", ["directory", "FIFO", "over 64 MiB"])
def test_a_results_path_that_is_no_regular_file_or_too_big_is_refused_unread(tmp_path, kind):
    path = tmp_path / "cases.yaml"
    if kind == "directory":
        path.mkdir()
    elif kind == "FIFO":
        os.mkfifo(path)  # reading it whole would wait for a writer for ever
    else:
        with path.open("wb") as sparse:  # sparse: no 64 MiB written
            sparse.truncate((64 << 20) + 1)
    error = _refused(tmp_path, path)
    assert str(path) in error
    assert ("67108864" if kind == "over 64 MiB" else "not a regular file") in error
