"""Real-time scheduling for the periodic sender: what is recorded is what the
kernel granted (read back in a fresh process, so this one stays ordinary)."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, os
from evbench_agent.link import timing
before = timing.current()
granted = timing.enter_realtime()
policy_now = os.sched_getscheduler(0)
timing.leave_realtime(before)
after = timing.current()
print(json.dumps({
    "granted": granted.as_params(),
    "fifo_read_back": policy_now == os.SCHED_FIFO,
    "slack_before": before.timer_slack_ns,
    "after": after.as_params(),
    "root": os.geteuid() == 0,
}))
"""


def test_realtime_records_what_the_kernel_granted_and_is_undone():
    done = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=True
    )
    probe = json.loads(done.stdout)
    granted = probe["granted"]
    assert granted["realtime"] is True
    assert granted["realtime_granted"] == probe["fifo_read_back"]
    if probe["root"]:  # root may always have SCHED_FIFO; CI runs as root
        assert granted["realtime_granted"] and granted["policy"] == "SCHED_FIFO"
    if granted["realtime_granted"]:
        assert granted["timer_slack_ns"] in (0, 1)  # 0: the kernel reports none for RT tasks
    after = probe["after"]
    assert after["policy"] == "SCHED_OTHER" and after["realtime_granted"] is False
    assert after["timer_slack_ns"] == probe["slack_before"]
