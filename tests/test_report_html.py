"""report.html in a real headless Chromium, driven over the DevTools protocol.

Chromium talks DevTools on a pipe (--remote-debugging-pipe: it reads commands
on fd 3 and writes on fd 4, NUL-terminated JSON), so no port is opened. The
test loads the report with background networking disabled, asks the page
whether every image decoded, collects console errors and uncaught exceptions,
and takes a screenshot.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import queue
import subprocess
import threading
import time
from pathlib import Path

import matplotlib.image
import pytest
from conftest import require_command
from report_helpers import local_run

pytestmark = pytest.mark.integration

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--remote-debugging-pipe",
)
DEADLINE_S = 60.0


class DevTools:
    """A minimal DevTools client over Chromium's pipe: commands, replies, events."""

    def __init__(self, chromium: str, profile: Path) -> None:
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()
        flags = " ".join(CHROMIUM_FLAGS)
        # bash (dash takes one-digit fds only) moves the pipe ends onto fds 3 and 4,
        # where Chromium expects them.
        self.process = subprocess.Popen(
            [
                "bash",
                "-c",
                f'exec "$0" {flags} --user-data-dir="$1" about:blank '
                f"3<&{to_chrome_r} 4>&{from_chrome_w}",
                chromium,
                str(profile),
            ],
            pass_fds=(to_chrome_r, from_chrome_w),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.messages: queue.Queue = queue.Queue()
        self.events: list[dict] = []
        self._next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        buffer = b""
        while chunk := os.read(self._from_chrome, 1 << 16):
            buffer += chunk
            *complete, buffer = buffer.split(b"\0")
            for message in complete:
                self.messages.put(json.loads(message))
        self.messages.put(None)

    def send(self, method: str, session: str | None = None, **params) -> dict:
        self._next_id += 1
        command = {"id": self._next_id, "method": method, "params": params}
        if session:
            command["sessionId"] = session
        os.write(self._to_chrome, json.dumps(command).encode() + b"\0")
        return self.wait(lambda m: m.get("id") == self._next_id)

    def wait(self, match) -> dict:
        deadline = time.monotonic() + DEADLINE_S
        while True:
            message = self.messages.get(timeout=max(0.1, deadline - time.monotonic()))
            assert message is not None, "Chromium closed the DevTools pipe"
            if "method" in message:
                self.events.append(message)
            if match(message):
                assert "error" not in message, message
                return message.get("result", message)

    def close(self) -> None:
        with contextlib.suppress(OSError):  # Chromium may already be gone
            os.write(self._to_chrome, b'{"id": 0, "method": "Browser.close"}\0')
        os.close(self._to_chrome)
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._from_chrome)


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("html") / "run"
    local_run(out, "--suite", "codec")
    return out / "report.html"


def test_report_opens_in_chromium_without_broken_images_or_errors(report: Path, tmp_path):
    chromium = require_command("chromium")
    browser = DevTools(chromium, tmp_path / "profile")
    try:
        target = browser.send("Target.createTarget", url="about:blank")["targetId"]
        session = browser.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page.enable", "Runtime.enable", "Log.enable"):
            browser.send(domain, session)
        browser.send("Page.navigate", session, url=report.as_uri())
        browser.wait(lambda m: m.get("method") == "Page.loadEventFired")
        images = browser.send(
            "Runtime.evaluate",
            session,
            expression="JSON.stringify([...document.images].map("
            "i => [i.complete, i.naturalWidth, i.naturalHeight]))",
            returnByValue=True,
        )["result"]["value"]
        metrics = browser.send("Page.getLayoutMetrics", session)["cssContentSize"]
        shot = browser.send(
            "Page.captureScreenshot",
            session,
            format="png",
            captureBeyondViewport=True,
            clip={"x": 0, "y": 0, "width": metrics["width"], "height": metrics["height"],
                  "scale": 1},
        )["data"]  # fmt: skip
    finally:
        browser.close()
    images = json.loads(images)
    assert len(images) == report.read_text().count("data:image/png;base64,") >= 2
    for complete, width, height in images:
        assert complete and width > 100 and height > 100, images
    errors = [
        event
        for event in browser.events
        if event["method"] == "Runtime.exceptionThrown"
        or (event["method"] == "Log.entryAdded" and event["params"]["entry"]["level"] == "error")
        or (event["method"] == "Runtime.consoleAPICalled" and event["params"]["type"] == "error")
    ]
    assert errors == []
    pixels = matplotlib.image.imread(io.BytesIO(base64.b64decode(shot)), format="png")
    assert pixels.shape[0] >= metrics["height"] - 1 and pixels.std() > 0.01
    (report.parent / "screenshot.png").write_bytes(base64.b64decode(shot))


def test_the_page_check_sees_a_broken_image(report: Path, tmp_path):
    """The check above can fail: a report whose image data is corrupt is caught."""
    chromium = require_command("chromium")
    broken = tmp_path / "broken.html"
    broken.write_text(report.read_text().replace("base64,iVBOR", "base64,AAAAA", 1))
    browser = DevTools(chromium, tmp_path / "profile")
    try:
        target = browser.send("Target.createTarget", url="about:blank")["targetId"]
        session = browser.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        browser.send("Page.enable", session)
        browser.send("Page.navigate", session, url=broken.as_uri())
        browser.wait(lambda m: m.get("method") == "Page.loadEventFired")
        widths = browser.send(
            "Runtime.evaluate",
            session,
            expression="JSON.stringify([...document.images].map(i => i.naturalWidth))",
            returnByValue=True,
        )["result"]["value"]
    finally:
        browser.close()
    assert 0 in json.loads(widths)
