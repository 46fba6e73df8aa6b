"""Headless Chromium for the tests: DevTools on a pipe (--remote-debugging-pipe: fds 3 and 4,
NUL-terminated JSON; no port), background networking off. `open_page` reports what a person
would notice: undecoded images, console errors, uncaught exceptions, a screenshot."""

import base64
import contextlib
import json
import os
import queue
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conftest import require_command

CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--remote-debugging-pipe",
)  # fmt: skip
DEADLINE_S = 60.0


class DevTools:
    """A minimal DevTools client over Chromium's pipe: commands, replies, events."""

    def __init__(self, chromium: str, profile: Path) -> None:
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()
        flags = " ".join(CHROMIUM_FLAGS)
        # bash (dash takes one-digit fds only) moves the pipe ends onto fds 3 and 4,
        # where Chromium expects them.
        fds = f"3<&{to_chrome_r} 4>&{from_chrome_w}"
        script = f'exec "$0" {flags} --user-data-dir="$1" about:blank {fds}'
        self.process = subprocess.Popen(
            ["bash", "-c", script, chromium, str(profile)], pass_fds=(to_chrome_r, from_chrome_w),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
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


@dataclass
class Page:
    """What a loaded page showed."""

    images: list[tuple[bool, int, int]]  # complete, natural width, natural height
    errors: list[dict]  # exceptions, console errors, log entries at level error
    value: Any = None  # the result of the expression asked for
    screenshot: bytes | None = None  # PNG of the whole page
    height: float = 0.0


def _errors(events: list[dict]) -> list[dict]:
    return [
        event
        for event in events
        if event["method"] == "Runtime.exceptionThrown"
        or (event["method"] == "Log.entryAdded" and event["params"]["entry"]["level"] == "error")
        or (event["method"] == "Runtime.consoleAPICalled" and event["params"]["type"] == "error")
    ]


def open_page(
    page: Path,
    profile: Path,
    expression: str | None = None,
    screenshot: bool = False,
    viewport: tuple[int, int] | None = None,
) -> Page:
    """Load `page` in a fresh headless Chromium and report what it showed; `viewport`
    (width, height in CSS pixels) sets the window the page is laid out in."""
    browser = DevTools(require_command("chromium"), profile)
    shot, height, value = None, 0.0, None
    try:
        target = browser.send("Target.createTarget", url="about:blank")["targetId"]
        session = browser.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page.enable", "Runtime.enable", "Log.enable"):
            browser.send(domain, session)
        if viewport is not None:
            width, height_px = viewport
            browser.send("Emulation.setDeviceMetricsOverride", session, width=width,
                         height=height_px, deviceScaleFactor=1, mobile=False)  # fmt: skip
        browser.send("Page.navigate", session, url=page.as_uri())
        browser.wait(lambda m: m.get("method") == "Page.loadEventFired")

        def evaluate(js: str) -> Any:
            reply = browser.send("Runtime.evaluate", session, expression=js, returnByValue=True)
            return reply["result"]["value"]

        images = evaluate(
            "JSON.stringify([...document.images].map("
            "i => [i.complete, i.naturalWidth, i.naturalHeight]))"
        )
        if expression is not None:
            value = evaluate(expression)
        if screenshot:
            metrics = browser.send("Page.getLayoutMetrics", session)["cssContentSize"]
            height = metrics["height"]
            shot = base64.b64decode(
                browser.send(
                    "Page.captureScreenshot",
                    session,
                    format="png",
                    captureBeyondViewport=True,
                    clip={"x": 0, "y": 0, "width": metrics["width"], "height": height,
                          "scale": 1},
                )["data"]
            )  # fmt: skip
    finally:
        browser.close()
    shown = [tuple(image) for image in json.loads(images)]
    return Page(shown, _errors(browser.events), value, screenshot=shot, height=height)
