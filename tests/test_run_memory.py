"""A run's manifest carries the board's free memory before and after and the agent's peak RSS
(the telemetry sampler's apart).

The expectations come from outside the agent: MemTotal and MemAvailable read
here from /proc/meminfo with a regular expression, and a bare interpreter's peak
RSS measured by the kernel in this test. Not a timing or budget test: the 30 MiB
aim is measured in benchmarks/ (the figures vary with the machine).
"""

from __future__ import annotations

import json
import re
import resource
import subprocess
import sys
from pathlib import Path

from evbench_agent.platform import memory

AGENT = [sys.executable, "-m", "evbench_agent"]
MiB = 1024 * 1024


def _meminfo_kib(field: str) -> int:
    match = re.search(rf"^{field}:\s+(\d+) kB$", Path("/proc/meminfo").read_text(), re.MULTILINE)
    assert match, field
    return int(match.group(1))


def _bare_interpreter_peak_rss() -> int:
    code = (
        "import re; print(re.search(r'VmHWM:\\s+(\\d+) kB', open('/proc/self/status').read())[1])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    return int(done.stdout) * 1024


def test_a_json_protobuf_run_records_memory_before_after_and_peak_rss(tmp_path):
    out = tmp_path / "run"
    available_before = _meminfo_kib("MemAvailable") * 1024
    argv = [*AGENT, "run", "--suite", "codec", "--profile", "seed", "--codecs", "json,protobuf",
            "--quick", "--processes", "1", "--out", str(out), "--progress", "none"]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    available_after = _meminfo_kib("MemAvailable") * 1024
    assert done.returncode == 0, done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    section = manifest["memory"]

    assert section["total_bytes"] == _meminfo_kib("MemTotal") * 1024
    # Other processes come and go on this machine: a wide bound around this test's readings.
    for key, reading in (("available_before_bytes", available_before),
                         ("available_after_bytes", available_after)):  # fmt: skip
        assert 0 < section[key] <= section["total_bytes"], key
        assert 0.5 * reading <= section[key] <= 2 * reading, (key, section[key], reading)

    bare = _bare_interpreter_peak_rss()
    for key in ("manager_peak_rss_bytes", "worker_peak_rss_bytes"):
        # More than a bare interpreter (they import protobuf and run codecs), far below 1 GiB.
        assert bare < section[key] < 1024 * MiB, (key, section[key], bare)
    # The telemetry sampler's own peak, apart (it imports psutil, which a bare one does not).
    sampler = manifest["telemetry"]["sampler_peak_rss_bytes"]
    assert bare < sampler < 1024 * MiB, (sampler, bare)
    # The kernel's own account of this test's children (ru_maxrss, which also counts what a
    # child had before exec): the largest was at least as big as the agent's processes.
    agents = max(section["manager_peak_rss_bytes"], section["worker_peak_rss_bytes"])
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024 >= agents


def test_meminfo_fields_are_read_in_bytes_and_missing_ones_are_none(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(
        "MemTotal:        2048 kB\nMemAvailable:    1536 kB\nHugePages_Total:       4\n"
    )
    assert memory.meminfo_bytes("MemTotal", meminfo) == 2048 * 1024
    assert memory.meminfo_bytes("MemAvailable", meminfo) == 1536 * 1024
    assert memory.meminfo_bytes("HugePages_Total", meminfo) == 4  # a count, no unit
    assert memory.meminfo_bytes("SwapFree", meminfo) is None
    assert memory.meminfo_bytes("MemTotal", tmp_path / "absent") is None


def test_the_platform_listing_names_the_codecs_without_importing_them():
    # Every manifest lists the installed codecs; only a run's own codecs are imported (RSS).
    code = (
        "import json, sys\n"
        "from evbench_agent.run import platform_info\n"
        "listed = platform_info.collect()['codecs']\n"
        "print(json.dumps([sorted(listed), sorted(m for m in sys.modules if '.' not in m)]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    listed, modules = json.loads(done.stdout)
    from evbench_agent import codecs

    # requirements-dev installs them all: the registry's optional codecs' libraries
    optional = {c.module.partition(".")[0] for c in codecs.CODECS.values() if c.optional}
    assert {"orjson", "cbor2", "cantools"} <= optional  # as worked out by hand
    assert optional & set(modules) == set()
    # What is listed is what imports here (every install of this venv is whole).
    assert listed == sorted(codecs.available())
