"""docs/lab.md's exporter file loads in labgrid 26's own exporter configuration reader
(Jinja2, line statements starting with `#`, before YAML)."""

import json
import re
import subprocess
from pathlib import Path

import labgrid_rig
import pytest
from conftest import ROOT

pytestmark = pytest.mark.integration  # labgrid, in its own venv

READER = """
import json, sys
from labgrid.remote.config import ResourceConfig
try:
    config = ResourceConfig(sys.argv[1])
except Exception as error:
    print(json.dumps({"error": f"{type(error).__name__}: {error}"}))
else:
    print(json.dumps({"groups": {g: sorted(r) for g, r in config.data.items()}}))
"""


def _exporter_example() -> str:
    text = (ROOT / "docs" / "lab.md").read_text()
    (block,) = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if "exporter.yaml" in b]
    return block


def _load(tmp_path: Path, text: str) -> dict:
    labgrid_rig.require_installed()
    path = tmp_path / "exporter.yaml"
    path.write_text(text)
    argv = [str(labgrid_rig.BIN / "python"), "-c", READER, str(path)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def test_the_documented_exporter_file_loads_in_labgrid(tmp_path: Path) -> None:
    resources = ["NetworkPowerPort", "NetworkService", "USBSerialPort"]
    assert _load(tmp_path, _exporter_example()) == {"groups": {"am62x-sk-1": resources}}
    # Its first line's comment with one hash instead of two: refused by labgrid.
    loaded = _load(tmp_path, _exporter_example().replace("## ", "# ", 1))
    assert "TemplateSyntaxError" in loaded["error"]
