"""A headless Chromium driven through its own DevTools protocol over a pipe
(``--remote-debugging-pipe``: JSON messages ending in NUL on file
descriptors 3 and 4), with the standard library only: open a page from disk,
collect console errors, uncaught exceptions, log errors and network
requests, evaluate JavaScript, take screenshots.

Used by the report tests and by ``bench_report.py``; ``find_chromium()``
is None where no Chromium is installed (Debian: ``apt-get install chromium``).
"""
from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> str | None:
    env = os.environ.get("CHROMIUM")
    if env:
        return env if shutil.which(env) else None
    return next((p for p in map(shutil.which, NAMES) if p), None)


class BrowserError(RuntimeError):
    pass


class Chromium:
    """``with Chromium() as b: b.open(path); b.evaluate("1 + 1")``."""

    def __init__(self, binary: str | None = None, width: int = 1400, height: int = 1000, timeout: float = 60.0):
        self.binary = binary or find_chromium()
        if not self.binary:
            raise BrowserError("no Chromium found (apt-get install chromium)")
        self.width, self.height, self.timeout = width, height, timeout
        self.events: list[dict] = []
        self._next_id = 0
        self._buffer = b""

    def __enter__(self) -> "Chromium":
        self._profile = tempfile.mkdtemp(prefix="report-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def wire():  # in the child: the pipe ends on fds 3 and 4 (inheritable), as --remote-debugging-pipe expects
            a, b = os.dup(to_child_r), os.dup(from_child_w)  # first out of the way: either may be 3 or 4 already
            os.dup2(a, 3)
            os.dup2(b, 4)

        args = [self.binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--no-default-browser-check", "--disable-extensions", "--disable-dev-shm-usage",
                "--remote-debugging-pipe", f"--user-data-dir={self._profile}", "about:blank"]
        self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, preexec_fn=wire, close_fds=False)
        os.close(to_child_r)
        os.close(from_child_w)
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable", session=True)
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False}, session=True)
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.send("Browser.close", timeout=5)
        except Exception:  # noqa: BLE001 - closing anyway
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self._profile, ignore_errors=True)

    # -- protocol --------------------------------------------------------------
    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise BrowserError("Chromium did not answer in time")
            import select

            ready, _, _ = select.select([self._from_child], [], [], 0.2)
            if ready:
                chunk = os.read(self._from_child, 1 << 20)
                if not chunk:
                    raise BrowserError("Chromium closed the pipe")
                self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(raw)

    def send(self, method: str, params: dict | None = None, session: bool = False, timeout: float | None = None) -> dict:
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def wait_for(self, method: str, timeout: float | None = None) -> dict:
        deadline = time.monotonic() + (timeout or self.timeout)
        for i, ev in enumerate(self.events):
            if ev["method"] == method:
                return self.events.pop(i)
        while True:
            reply = self._read_message(deadline)
            if reply.get("method") == method:
                return reply
            if "method" in reply:
                self.events.append(reply)

    # -- pages -----------------------------------------------------------------
    def open(self, path: str | os.PathLike) -> None:
        self.events.clear()
        self.send("Page.navigate", {"url": Path(path).resolve().as_uri()}, session=True)
        self.wait_for("Page.loadEventFired")
        self.evaluate("1")  # let queued events arrive

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True}, session=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"evaluating {expression[:60]!r}: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def problems(self) -> list[str]:
        """Console errors and warnings, uncaught exceptions and log errors
        (blocked or failed loads, content-security-policy violations)."""
        out = []
        for ev in self.events:
            p = ev.get("params", {})
            if ev["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
                out.append(f"console.{p['type']}: " + " ".join(str(a.get("value", a.get("description"))) for a in p.get("args", [])))
            elif ev["method"] == "Runtime.exceptionThrown":
                out.append(f"exception: {p.get('exceptionDetails', {}).get('text')}")
            elif ev["method"] == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
                out.append(f"log {p['entry'].get('source')}: {p['entry'].get('text')}")
        return out

    def requests(self) -> list[str]:
        return [ev["params"]["request"]["url"] for ev in self.events if ev["method"] == "Network.requestWillBeSent"]

    def screenshot(self, path: str | os.PathLike, full_height: int | None = None) -> Path:
        if full_height:
            self.send("Emulation.setDeviceMetricsOverride",
                      {"width": self.width, "height": full_height, "deviceScaleFactor": 1, "mobile": False}, session=True)
        data = self.send("Page.captureScreenshot", {"format": "png"}, session=True)["data"]
        path = Path(path)
        path.write_bytes(base64.b64decode(data))
        return path
