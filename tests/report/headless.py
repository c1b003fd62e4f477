"""A page as a person sees it: Debian's headless Chromium driven over the DevTools protocol on a pipe.

``--remote-debugging-pipe`` speaks NUL-terminated JSON on file descriptors 3 (to the browser) and 4
(from it), so no websocket library and no open port are needed. Used by the browser tests only.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-pipe",
]


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


#: Each plot's figure: its box on the page and whether it holds an SVG (a blank or missing plot fails).
PLOT_BOXES = """Array.from(document.querySelectorAll('figure.plot')).map(f => {
  const svg = f.querySelector('svg'); const r = (svg || f).getBoundingClientRect();
  return {id: f.id, has_svg: !!svg, x: r.x + window.scrollX, y: r.y + window.scrollY,
          width: r.width, height: r.height};
})"""


def table_rows(table_id: str) -> str:
    """A script returning the text of each cell of each body row of ``#table_id``."""
    return f"""Array.from(document.querySelectorAll('#{table_id} tbody tr')).map(tr =>
  Array.from(tr.cells).map(td => td.textContent.trim()))"""


def require_chromium() -> str:
    """Chromium's path, or skip the test that needs it (saying how to get it)."""
    binary = find_chromium()
    if binary is None:
        pytest.skip("chromium is not installed (Debian: apt-get install chromium; .ci/run installs it as root)")
    return binary


@dataclass
class Page:
    """What a loaded page showed: console errors, element boxes, a PNG screenshot of the full page."""

    errors: list[str] = field(default_factory=list)
    png: bytes = b""
    width: int = 0
    height: int = 0


class Chromium:
    def __init__(self, binary: str, timeout_s: float = 60.0) -> None:
        self.timeout_s = timeout_s
        self.profile = tempfile.mkdtemp(prefix="llmbench-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # fd 3 / fd 4 in the child, whatever numbers the pipes have here
        self.proc = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            pass_fds=(3, 4),
            preexec_fn=_dup_to(to_browser_r, from_browser_w),
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict[str, Any]] = []

    # --- protocol ---------------------------------------------------------------------------------------
    def send(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self._to_browser, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            reply = self._read()
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)
        raise TimeoutError(f"{method}: no reply in {self.timeout_s} s")

    def _read(self) -> dict[str, Any]:
        while b"\0" not in self._buf:
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                err = self.proc.stderr.read().decode(errors="replace")[-2000:] if self.proc.stderr else ""
                raise RuntimeError(f"chromium closed the DevTools pipe: {err}")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def wait_event(self, method: str, session: str) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            for i, ev in enumerate(self.events):
                if ev.get("method") == method and ev.get("sessionId") == session:
                    return self.events.pop(i)
            self.events.append(self._read())
        raise TimeoutError(f"no {method} in {self.timeout_s} s")

    # --- one page ---------------------------------------------------------------------------------------
    def load(self, url: str, width: int = 1280, height: int = 900) -> tuple[str, Page]:
        target = self.send("Target.createTarget", url="about:blank")["targetId"]
        session = self.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable", session)
        self.send(
            "Emulation.setDeviceMetricsOverride", session, width=width, height=height, deviceScaleFactor=1, mobile=False
        )
        self.send("Page.navigate", session, url=url)
        self.wait_event("Page.loadEventFired", session)
        page = Page()
        metrics = self.send("Page.getLayoutMetrics", session)["cssContentSize"]
        page.width, page.height = int(metrics["width"]), int(metrics["height"])
        self.send(
            "Emulation.setDeviceMetricsOverride",
            session,
            width=width,
            height=page.height,
            deviceScaleFactor=1,
            mobile=False,
        )
        shot = self.send("Page.captureScreenshot", session, format="png", captureBeyondViewport=True)
        page.png = base64.b64decode(shot["data"])
        for ev in self.events:
            if ev.get("sessionId") != session:
                continue
            if ev.get("method") == "Runtime.exceptionThrown":
                page.errors.append(json.dumps(ev["params"]["exceptionDetails"])[:500])
            elif ev.get("method") == "Runtime.consoleAPICalled" and ev["params"].get("type") in ("error", "assert"):
                page.errors.append(json.dumps(ev["params"].get("args"))[:500])
            elif ev.get("method") == "Log.entryAdded" and ev["params"]["entry"].get("level") == "error":
                page.errors.append(
                    f"{ev['params']['entry'].get('source')}: {ev['params']['entry'].get('text')}"
                    f" {ev['params']['entry'].get('url', '')}"
                )
        return session, page

    def evaluate(self, session: str, expression: str) -> Any:
        got = self.send("Runtime.evaluate", session, expression=expression, returnByValue=True)
        if "exceptionDetails" in got:
            raise RuntimeError(f"script failed: {got['exceptionDetails']}")
        return got["result"].get("value")

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)


def _dup_to(read_end: int, write_end: int):
    def child() -> None:
        os.dup2(read_end, 3)
        os.dup2(write_end, 4)

    return child


def blank_fraction(png: bytes, box: dict[str, float]) -> tuple[float, int]:
    """(fraction of near-white pixels, number of distinct colours) inside ``box`` of a screenshot."""
    import io

    import numpy as np
    from PIL import Image

    img = Image.open(io.BytesIO(png)).convert("RGB")
    crop = np.asarray(
        img.crop((int(box["x"]), int(box["y"]), int(box["x"] + box["width"]), int(box["y"] + box["height"])))
    )
    pixels = crop.reshape(-1, 3)
    if not len(pixels):
        return 1.0, 0
    white = int(np.all(pixels > 245, axis=1).sum())
    return white / len(pixels), len(np.unique(pixels, axis=0))
