"""Headless chromium driven over the DevTools protocol, for tests that use a page as a person does:
open it, hover, click, read the DOM, take a screenshot (a test helper; no dependency beyond the
system's chromium, found as tests/browser.py finds it, and skipped without one).

The protocol runs over a pipe (`--remote-debugging-pipe`: chromium reads commands on fd 3 and
writes replies and events on fd 4, each a JSON message ended by a NUL byte), so no port is opened
and nothing else on the machine can talk to the browser. Every wait has a deadline.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import signal
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from browser import SCREENSHOTS_ENV, chromium


class DevToolsError(RuntimeError):
    pass


class Chromium:
    """One headless chromium with one tab; `with Chromium(tmp_path) as page: page.open(url)`."""

    def __init__(self, tmp_path: Path, *, width: int = 1280, height: int = 900) -> None:
        exe = chromium()  # skips the test when there is none
        to_child, self._w = os.pipe()
        self._r, from_child = os.pipe()

        def fds() -> None:  # in the child: the pipe ends at fds 3 and 4, where chromium looks
            a = fcntl.fcntl(to_child, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(from_child, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [
                exe,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
                "--remote-debugging-pipe",
                f"--user-data-dir={tmp_path / 'chromium-devtools'}",
                "about:blank",
            ],
            pass_fds=(3, 4),
            preexec_fn=fds,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: stopped as one below
        )
        os.close(to_child)
        os.close(from_child)
        self._buf = b""
        self._id = 0
        self.events: list[dict[str, Any]] = []
        self.width, self.height = width, height
        self.session = ""
        self._target = ""
        self._new_tab("about:blank")

    # ---------------------------------------------------------------- protocol
    def _recv(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._r], [], [], left)[0]:
                raise DevToolsError("chromium did not answer in time")
            chunk = os.read(self._r, 1 << 20)
            if not chunk:
                raise DevToolsError("chromium closed the DevTools pipe")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\0", 1)
        message: dict[str, Any] = json.loads(line)
        return message

    def send(self, method: str, params: dict[str, Any] | None = None, *, timeout: float = 30, tab: bool = True) -> Any:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if tab and self.session:
            msg["sessionId"] = self.session
        os.write(self._w, json.dumps(msg).encode("utf-8") + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._recv(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise DevToolsError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def _new_tab(self, url: str) -> None:
        """A fresh tab at `url` (as a person opens a shared link), the previous one closed."""
        old = self.session and self._target
        target = self.send("Target.createTarget", {"url": "about:blank"}, tab=False)["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True}, tab=False)["sessionId"]
        self._target = target
        if old:
            self.send("Target.closeTarget", {"targetId": old}, tab=False)
        self.send("Runtime.enable")
        self.send("Page.enable")
        # the page's main-thread time in CPU time, not wall time: a shared machine's load does not count
        self.send("Performance.enable", {"timeDomain": "threadTicks"})
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False},
        )
        if url != "about:blank":
            self.send("Page.navigate", {"url": url})

    # ---------------------------------------------------------------- what a test uses
    def open(self, url: str, *, ready: str = "document.readyState === 'complete'", timeout: float = 20) -> None:
        """Open `url` in a new tab and wait until `ready` is true there (the page may rewrite the
        fragment as it loads: the document is what must match)."""
        self.events.clear()
        self._new_tab(url)
        doc = json.dumps(url.split("#")[0])
        self.wait_for(f"location.href.split('#')[0] === {doc} && ({ready})", timeout=timeout)

    def evaluate(self, expression: str) -> Any:
        res = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in res:
            raise DevToolsError(f"{expression[:80]}: {res['exceptionDetails'].get('exception', {}).get('description')}")
        return res["result"].get("value")

    def wait_for(self, expression: str, *, timeout: float = 10) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            try:
                value = self.evaluate(expression)
            except DevToolsError:
                value = None  # the page is between documents
            if value:
                return value
            if time.monotonic() > deadline:
                raise DevToolsError(f"timed out waiting for {expression}")
            time.sleep(0.05)

    def centre(self, selector: str) -> tuple[float, float]:
        """The middle of the first element `selector` matches, scrolled into view."""
        box = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return null;"
            " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
            " return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        )
        if box is None:
            raise DevToolsError(f"no element matches {selector}")
        return float(box[0]), float(box[1])

    def move(self, x: float, y: float) -> None:
        """The mouse to (x, y) of the viewport, as a person moves it."""
        self.send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})

    def click_at(self, x: float, y: float) -> None:
        self.move(x, y)
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})

    def hover(self, selector: str) -> None:
        self.move(*self.centre(selector))

    def click(self, selector: str) -> None:
        self.click_at(*self.centre(selector))

    def metrics(self) -> dict[str, float]:
        """Chromium's counters of the tab since it was opened (durations: seconds of the main
        thread's CPU time), e.g. TaskDuration, ScriptDuration, LayoutDuration, Nodes."""
        return {m["name"]: float(m["value"]) for m in self.send("Performance.getMetrics")["metrics"]}

    def errors(self) -> list[str]:
        """Script errors and console errors the page raised since it was opened."""
        out = []
        for e in self.events:
            if e.get("method") == "Runtime.exceptionThrown":
                details = e["params"]["exceptionDetails"]
                out.append(str(details.get("exception", {}).get("description") or details.get("text")))
            elif e.get("method") == "Runtime.consoleAPICalled" and e["params"].get("type") == "error":
                out.append(" ".join(str(a.get("value", a.get("description"))) for a in e["params"]["args"]))
        return out

    def screenshot(self, name: str, tmp_path: Path, *, full_page: bool = True) -> Path:
        """A PNG of the page at the tab's width, saved as tests/browser.py saves one (under
        TRAJBENCH_SCREENSHOTS when set, else the test's tmp folder) and its path printed."""
        folder = Path(os.environ[SCREENSHOTS_ENV]) if os.environ.get(SCREENSHOTS_ENV) else tmp_path
        folder.mkdir(parents=True, exist_ok=True)
        height = self.height
        if full_page:
            height = int(self.evaluate("Math.ceil(document.documentElement.scrollHeight)"))
            self.send(
                "Emulation.setDeviceMetricsOverride",
                {"width": self.width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            )
        self.evaluate("window.scrollTo(0, 0)")
        data = self.send("Page.captureScreenshot", {"format": "png"})["data"]
        if full_page:
            self.send(
                "Emulation.setDeviceMetricsOverride",
                {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False},
            )
        shot = folder / f"{name}.png"
        shot.write_bytes(base64.b64decode(data))
        print(f"screenshot {self.width}x{height}: {shot}")
        return shot

    # ---------------------------------------------------------------- lifetime
    def close(self) -> None:
        try:
            self.send("Browser.close", tab=False, timeout=5)
        except (DevToolsError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        for fd in (self._r, self._w):
            try:
                os.close(fd)
            except OSError:
                pass

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
