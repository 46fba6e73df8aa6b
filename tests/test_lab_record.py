"""The run spec's `lab` key: the labgrid place a run ran in (written by hand as
`labgrid-client show` describes one with a NetworkService), checked, then in manifest.json.
"""

import json
import re
import subprocess
import sys

import pytest

from evbench_agent import spec
from evbench_core import results
from evbench_core.errors import UserError

RECORD = {
    "coordinator": "127.0.0.1:20408", "place": "am62x-a",
    "tags": {"board": "am62x", "site": "lab1"}, "exporters": ["rack3"],
    "resources": [
        {"name": "NetworkService", "path": "rack3/board-a/NetworkService/NetworkService",
         "class": "NetworkService",
         "params": {"address": "10.0.3.17", "username": "root", "port": 22}}
    ],
    "owner": "labpc/nightly+evbench-4242", "held_by_user": False,
    "transport": "ssh://root@10.0.3.17:22?python=python3&dir=.evbench", "jump": "rack3.lab:22",
}  # fmt: skip


def test_a_run_with_a_lab_record_writes_it_into_the_checksummed_manifest(tmp_path):
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps({"lab": RECORD}))
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "evbench_agent", "run", "--spec", str(spec_file),
         "--suite", "codec", "--profile", "seed", "--codecs", "json", "--processes", "1",
         "--values", "1", "--payloads", "5", "--progress", "none", "--out", str(out)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / results.MANIFEST).read_text())
    assert manifest["lab"] == RECORD
    assert "lab" not in manifest["spec"]  # recorded once, as the manifest's own section
    assert results.verify_checksums(out) == []  # the manifest with it is checksummed


def test_a_run_without_one_has_no_lab_section():
    assert "lab" not in spec.from_dict({}).as_dict() and spec.from_dict({}).lab is None


def _with(**changes):
    return {**RECORD, **changes}


def _resource(**fields):
    return {"name": "x", "path": "p", "class": "c", **fields}


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ("am62x-a", "spec key 'lab' must be an object"),
        (_with(colour="red"), "spec key 'lab': unknown key 'colour'"),
        (_with(place="two words"), "spec key 'lab': place: board name 'two words'"),
        (_with(place=None), "spec key 'lab': place:"),
        (_with(tags={"board": ""}), "the tag 'board' must be text of 1 to 512"),
        (_with(tags={str(i): "x" for i in range(65)}), "tags must be an object of at most 64"),
        (_with(exporters="rack3"), "exporters must be a list"),
        (_with(resources=[_resource(cost=1)]), "resources[0]"),
        (
            _with(resources=[_resource(params={"a": [[[[[1]]]]]})]),
            "resources[0].params.a[0][0][0][0] is nested too deep",
        ),
        (_with(held_by_user="no"), "held_by_user must be true or false"),
        (_with(jump=""), "jump must be text"),
        (_with(owner="x" * 513), "owner must be text of 1 to 512"),
        # 64 resources of 300-byte parameters: about 20 kB, over the 16 KiB cap.
        (_with(resources=[_resource(params={"a": "x" * 300})] * 64), "more than 16384"),
        (_with(tags={"board": float("nan")}), "is not plain JSON"),
    ],
)  # fmt: skip
def test_bad_lab_records_are_refused_naming_what_is_wrong(record, message):
    with pytest.raises(UserError, match=re.escape(message)):
        spec.from_dict({"lab": record})
