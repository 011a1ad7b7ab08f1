"""A tiny Chrome DevTools Protocol client over ``--remote-debugging-pipe`` for headless Chromium.

No Python dependency and no port: Chromium reads commands from fd 3 and writes replies and events to fd 4
(NUL-separated JSON). Used by the browser tests and ``benchmarks/bench_report.py``; it drives the system
Chromium and downloads nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any


def find_chromium() -> str | None:
    """Path of a Chromium/Chrome binary on PATH (``TUTORMETRICS_CHROMIUM`` overrides), or ``None``."""
    explicit = os.environ.get("TUTORMETRICS_CHROMIUM")
    if explicit:
        return explicit if Path(explicit).exists() else None
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _high_fd(fd: int) -> int:
    import fcntl

    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


class CDPError(RuntimeError):
    pass


class Chromium:
    """One headless Chromium with one page target; events are kept in ``self.events``."""

    def __init__(self, binary: str, width: int = 1280, height: int = 900) -> None:
        self._profile = tempfile.mkdtemp(prefix="tm-chromium-")
        to_r, self._to_w = os.pipe()
        self._from_r, from_w = os.pipe()
        to_r, from_w = _high_fd(to_r), _high_fd(from_w)  # never 3 or 4 themselves
        args = [
            binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
            "--disable-extensions", "--disable-background-networking", "--disable-sync", "--disable-dev-shm-usage",
            "--remote-debugging-pipe", f"--user-data-dir={self._profile}", f"--window-size={width},{height}", "about:blank",
        ]
        # bash (not sh: dash cannot name fds above 9) moves our pipe ends onto fds 3 and 4, where
        # --remote-debugging-pipe expects them, then becomes Chromium.
        script = f'exec "$@" 3<&{to_r} 4>&{from_w} {to_r}<&- {from_w}>&-'
        self.proc = subprocess.Popen(
            [shutil.which("bash") or "/bin/bash", "-c", script, "bash", *args], pass_fds=(to_r, from_w),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        os.close(to_r)
        os.close(from_w)
        self._id = 0
        self._lock = threading.Lock()
        self._replies: dict[int, dict[str, Any]] = {}
        self._cv = threading.Condition()
        self.events: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next((t for t in targets if t["type"] == "page"), None)
        target_id = page["targetId"] if page else self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target_id, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Network", "Log"):
            self.send(f"{domain}.enable")
        self.send("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)

    # ---- transport ----
    def _read(self) -> None:
        buf = b""
        while True:
            try:
                chunk = os.read(self._from_r, 1 << 20)
            except OSError:
                chunk = b""
            if not chunk:
                with self._cv:
                    self._cv.notify_all()
                return
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                with self._cv:
                    if "id" in msg:
                        self._replies[msg["id"]] = msg
                    else:
                        self.events.append(msg)
                    self._cv.notify_all()

    def call(self, method: str, *, session: str | None = None, timeout: float = 30.0, **params: Any) -> dict[str, Any]:
        with self._lock:
            self._id += 1
            msg_id = self._id
        msg: dict[str, Any] = {"id": msg_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self._to_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with self._cv:
            while msg_id not in self._replies:
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise CDPError(f"{method}: no reply")
                self._cv.wait(left)
            reply = self._replies.pop(msg_id)
        if "error" in reply:
            raise CDPError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        """A command to the page target."""
        return self.call(method, session=self.session, **params)

    # ---- page helpers ----
    def navigate(self, url: str, ready: str = "document.documentElement.dataset.ready === '1'", timeout: float = 30.0) -> float:
        """Load ``url`` and wait until ``ready`` is true; returns wall seconds from the command to ready."""
        start = time.monotonic()
        self.send("Page.navigate", url=url)
        deadline = start + timeout
        while time.monotonic() < deadline:
            try:
                if self.evaluate(ready):
                    return time.monotonic() - start
            except CDPError:
                pass
            time.sleep(0.02)
        raise CDPError(f"page not ready within {timeout}s: {url}")

    def evaluate(self, expression: str) -> Any:
        res = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in res:
            raise CDPError(f"evaluate failed: {res['exceptionDetails'].get('text')}: {expression[:80]}")
        return res.get("result", {}).get("value")

    def screenshot(self, path: Path, full_height: int | None = None) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_height:
            params.update(captureBeyondViewport=True, clip={"x": 0, "y": 0, "width": 1280, "height": full_height, "scale": 1})
        data = self.send("Page.captureScreenshot", **params)["data"]
        import base64

        path.write_bytes(base64.b64decode(data))
        return path

    def console_errors(self) -> list[str]:
        """Console errors, uncaught exceptions and log errors (CSP violations included) seen so far."""
        out = []
        for ev in self.events:
            method, params = ev.get("method"), ev.get("params", {})
            if method == "Runtime.exceptionThrown":
                out.append(json.dumps(params.get("exceptionDetails", {}))[:500])
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                out.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                out.append(params["entry"].get("text", ""))
        return out

    def requests(self) -> list[str]:
        """URLs of every network request the page made."""
        return [ev["params"]["request"]["url"] for ev in self.events if ev.get("method") == "Network.requestWillBeSent"]

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=5)
        except (CDPError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_w, self._from_r):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
