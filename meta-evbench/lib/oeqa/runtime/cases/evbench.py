#
# SPDX-License-Identifier: MIT
#
"""The agent on the booted evbench-image: `info`, then a quick codec run.

Run with `bitbake -c testimage evbench-image` (kas/qemuarm64.yml sets it up).
"""

import json

from oeqa.core.decorator.depends import OETestDepends
from oeqa.runtime.case import OERuntimeTestCase
from oeqa.runtime.decorator.package import OEHasPackage

RUN_DIR = "/tmp/evbench-oeqa"


class EvbenchAgentTest(OERuntimeTestCase):
    @OETestDepends(["ssh.SSHTest.test_ssh"])
    @OEHasPackage(["evbench-agent"])
    def test_agent_info(self) -> None:
        status, output = self.target.run("evbench-agent info --json")
        self.assertEqual(status, 0, msg=f"evbench-agent info failed: {output}")
        info = json.loads(output)
        # The generated protobuf modules load on the image's protobuf runtime,
        # and the codecs the image installs are found.
        for codec in ("protobuf", "json", "ujson", "msgpack", "cbor2", "dbc"):
            self.assertIn(codec, info["codecs"], msg=f"codec {codec} missing: {output}")

    @OETestDepends(["evbench.EvbenchAgentTest.test_agent_info"])
    def test_quick_codec_run(self) -> None:
        self.target.run(f"rm -rf {RUN_DIR}")
        command = (
            "evbench-agent run --suite codec --quick --profile seed "
            f"--codecs json,protobuf,cbor2 --progress none --out {RUN_DIR}"
        )
        status, output = self.target.run(command, timeout=600)
        self.assertEqual(status, 0, msg=f"quick codec run failed: {output}")
        # `complete` is written last, and every file matches its checksum.
        status, output = self.target.run(
            f"cd {RUN_DIR} && test -f complete && sha256sum -c SHA256SUMS"
        )
        self.assertEqual(status, 0, msg=f"run directory incomplete or corrupt: {output}")
        status, output = self.target.run(f"cat {RUN_DIR}/summary.json")
        self.assertEqual(status, 0, msg=output)
        summary = json.loads(output)
        self.assertFalse(summary["partial"], msg=output)
        codecs = {record["codec"] for record in summary["records"]}
        self.assertTrue({"json", "protobuf", "cbor2"} <= codecs, msg=output)


class EvbenchCanTest(OERuntimeTestCase):
    """The kernel carries what the link suite over CAN needs (meta-evbench's fragment):
    on qemuarm64 too, where vcan stands in for a controller."""

    @OETestDepends(["ssh.SSHTest.test_ssh"])
    @OEHasPackage(["evbench-can"])
    def test_can_isotp_and_vcan_load(self) -> None:
        for module in ("can-isotp", "vcan"):
            status, output = self.target.run(f"modprobe {module}")
            self.assertEqual(status, 0, msg=f"modprobe {module} failed: {output}")
        status, output = self.target.run(
            "ip link add dev evbtest0 type vcan && ip link set evbtest0 up && "
            "ip -details link show evbtest0; status=$?; ip link del evbtest0; exit $status"
        )
        self.assertEqual(status, 0, msg=f"a vcan interface did not come up: {output}")
        self.assertIn("vcan", output, msg=output)
        # An ISO-TP socket opens on it: what the link suite does first.
        status, output = self.target.run(
            "ip link add dev evbtest1 type vcan && ip link set evbtest1 up && "
            'python3 -c "import socket; s = socket.socket(socket.AF_CAN, socket.SOCK_DGRAM, '
            "socket.CAN_ISOTP); s.bind(('evbtest1', 0x7E8, 0x7E0)); print('isotp bound')\"; "
            "status=$?; ip link del evbtest1; exit $status"
        )
        self.assertEqual(status, 0, msg=f"no ISO-TP socket on vcan: {output}")
        self.assertIn("isotp bound", output, msg=output)
