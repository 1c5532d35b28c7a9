"""A small Chrome DevTools Protocol client driving Debian's headless ``chromium``.

:func:`chromium_page` starts the browser on a free debugging port, opens one
tab and yields a :class:`Page` that navigates, types, evaluates JavaScript and
takes screenshots.  The browser is stopped and its profile removed on exit.
"""

from __future__ import annotations

import base64
import itertools
import json
import re
import shutil
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
import websockets
from websockets.asyncio.client import ClientConnection

__all__ = ["CHROMIUM_FLAGS", "Page", "chromium_or_skip", "chromium_page"]

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",  # the tests run as root, where the sandbox cannot start
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
]
_LISTENING = re.compile(r"DevTools listening on (ws://\S+)")


def chromium_or_skip() -> str:
    """The chromium executable, or skip the test with the reason."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium; .ci/run does it)")
    return found


class Page:
    """One tab, attached over a flat CDP session."""

    def __init__(self, ws: ClientConnection, session: str) -> None:
        self._ws = ws
        self._session = session
        self._ids = itertools.count(1)
        self._waiting: dict[int, tuple[anyio.Event, list[dict[str, Any]]]] = {}

    async def _read(self) -> None:
        async for raw in self._ws:
            message = json.loads(raw)
            waiter = self._waiting.pop(message.get("id", -1), None)
            if waiter is not None:
                waiter[1].append(message)
                waiter[0].set()

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one command to the tab; its result (raises on a protocol error)."""
        ident = next(self._ids)
        done, box = anyio.Event(), list[Any]()
        self._waiting[ident] = (done, box)
        payload = {"id": ident, "method": method, "params": params, "sessionId": self._session}
        await self._ws.send(json.dumps(payload))
        with anyio.fail_after(30):
            await done.wait()
        if "error" in box[0]:
            raise RuntimeError(f"{method}: {box[0]['error']}")
        result: dict[str, Any] = box[0].get("result", {})
        return result

    async def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression (promises awaited)."""
        result = await self.send(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression!r}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def wait_for(self, expression: str, timeout: float = 30.0) -> Any:
        """Poll ``expression`` until it is truthy; its value."""
        with anyio.fail_after(timeout):
            while not (value := await self.evaluate(expression)):
                await anyio.sleep(0.05)
        return value

    async def goto(self, url: str) -> None:
        """Navigate and wait for the load event."""
        await self.send("Page.navigate", url=url)
        await anyio.sleep(0.05)
        await self.wait_for(
            f"location.href === {json.dumps(url)} && document.readyState === 'complete'"
        )

    async def type_text(self, selector: str, text: str) -> None:
        """Focus ``selector`` and type ``text`` as keyboard input."""
        await self.evaluate(f"document.querySelector({json.dumps(selector)}).focus()")
        await self.send("Input.insertText", text=text)

    async def capture(self, x: float, y: float, width: float, height: float) -> bytes:
        """A PNG of the page region at CSS pixels ``(x, y, width, height)``, at twice the scale."""
        clip = {"x": x, "y": y, "width": width, "height": height, "scale": 2}
        shot = await self.send("Page.captureScreenshot", format="png", clip=clip)
        return base64.b64decode(shot["data"])

    async def screenshot(self, path: Path) -> None:
        """Write a PNG of the viewport to ``path``."""
        shot = await self.send("Page.captureScreenshot", format="png")
        path.parent.mkdir(parents=True, exist_ok=True)
        await anyio.Path(path).write_bytes(base64.b64decode(shot["data"]))


async def _devtools_url(process: anyio.abc.Process) -> str:
    assert process.stderr is not None
    seen = b""
    with anyio.move_on_after(30):
        async for chunk in process.stderr:
            seen += chunk
            found = _LISTENING.search(seen.decode("utf-8", "replace"))
            if found:
                return found.group(1)
    pytest.skip(f"chromium did not start: {seen.decode('utf-8', 'replace')[-500:]}")


@asynccontextmanager
async def chromium_page(width: int = 1200, height: int = 900) -> AsyncIterator[Page]:
    """A headless chromium tab; the browser ends with the block."""
    exe = chromium_or_skip()
    profile = tempfile.mkdtemp(prefix="zerda-chromium-")
    args = [
        exe,
        *CHROMIUM_FLAGS,
        f"--user-data-dir={profile}",
        "--remote-debugging-port=0",
        f"--window-size={width},{height}",
        "about:blank",
    ]
    try:
        async with await anyio.open_process(args) as process:
            try:
                url = await _devtools_url(process)
                async with (
                    websockets.connect(url, max_size=64 << 20) as ws,
                    anyio.create_task_group() as tg,
                ):
                    browser = Page(ws, "")
                    tg.start_soon(browser._read)
                    target = await _browser_call(
                        ws, browser, "Target.createTarget", url="about:blank"
                    )
                    attached = await _browser_call(
                        ws,
                        browser,
                        "Target.attachToTarget",
                        targetId=target["targetId"],
                        flatten=True,
                    )
                    page = Page(ws, attached["sessionId"])
                    page._ids, page._waiting = browser._ids, browser._waiting  # one reader
                    await page.send("Page.enable")
                    yield page
                    tg.cancel_scope.cancel()
            finally:
                if process.returncode is None:
                    process.terminate()
                with anyio.move_on_after(10):
                    await process.wait()
                if process.returncode is None:
                    process.kill()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


async def _browser_call(
    ws: ClientConnection, browser: Page, method: str, **params: Any
) -> dict[str, Any]:
    # Browser-level commands go without a session id.
    ident = next(browser._ids)
    done, box = anyio.Event(), list[Any]()
    browser._waiting[ident] = (done, box)
    await ws.send(json.dumps({"id": ident, "method": method, "params": params}))
    with anyio.fail_after(30):
        await done.wait()
    if "error" in box[0]:
        raise RuntimeError(f"{method}: {box[0]['error']}")
    result: dict[str, Any] = box[0]["result"]
    return result
