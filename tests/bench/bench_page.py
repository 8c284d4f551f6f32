"""What one open chat page costs the browser: Debian's Chromium, headless, through Playwright.

    python tests/bench/bench_page.py [--seconds S] [--loads N] [--settle S]

Serves the chat page (the browser tests' app, `kit.build_playing`, under uvicorn in a
thread of this process; its model streams a word every 50 ms) twice: as the server serves
it, with its early script first in the page's head (backends/gradio/early_script.py), and
without it. For each:

1. page load: seconds from opening a new tab (a browser context of its own) until the
   page shows its first state and its own script is installed (median of N);
2. idle: CPU of all the browser's processes while the tab does nothing (from `--settle`
   seconds after it loaded), in cores (1.0 is one core kept busy), and the animation frames
   the page asks for per second;
3. streaming: the same while a reply streams in at 20 words a second.

Only the browser's processes are counted (utime+stime from /proc), not the server. Prints
a table, and as the very last line one JSON object with the figures. Needs /usr/bin/chromium.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from playwright.sync_api import expect, sync_playwright  # noqa: E402

from connectors.function import FunctionInfo  # noqa: E402
from schema import Message  # noqa: E402
from tests.backends.conftest import CHROMIUM, CHROMIUM_FLAGS  # noqa: E402
from tests.backends.gradio.kit import COUNT_FRAMES, build_playing, ready, served  # noqa: E402

WAIT_MS = 60_000


async def words(_messages: list[Message], _info: FunctionInfo) -> AsyncIterator[str]:
    """A long reply, a word every 50 ms (ended when the server closes)."""
    for number in range(100_000):
        await asyncio.sleep(0.05)
        yield f"word{number} "


def browser_cpu_s() -> float:
    """CPU seconds used so far by every Chromium process on the machine."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            if b"chromium" not in (entry / "cmdline").read_bytes():
                continue
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def cost(page: Any, seconds: float) -> tuple[float, float]:
    """Browser cores used, and animation frames asked per second, over `seconds`."""
    page.evaluate("window.__framesAsked = 0")
    cpu, started = browser_cpu_s(), time.monotonic()
    page.wait_for_timeout(seconds * 1000)
    elapsed = time.monotonic() - started
    frames = page.evaluate("window.__framesAsked")
    return (browser_cpu_s() - cpu) / elapsed, frames / elapsed


def measure(browser: Any, url: str, seconds: float, loads: int, settle: float) -> dict[str, float]:
    load_s = []
    for number in range(max(1, loads)):
        context = browser.new_context()
        if number == 0:
            context.add_init_script(COUNT_FRAMES)
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        started = time.monotonic()
        page.goto(url, wait_until="load")
        ready(page)
        load_s.append(time.monotonic() - started)
        if number == 0:
            measured = page  # the first tab is the one measured
        else:
            context.close()
    page = measured
    page.wait_for_timeout(settle * 1000)  # what the load set moving ends
    idle_cores, idle_frames = cost(page, seconds)
    page.locator("#chat-input textarea").fill("stream")
    page.locator("#chat-input textarea").press("Enter")
    page.wait_for_function("() => document.querySelector('#chatbot')?.innerText.includes('word5')")
    stream_cores, stream_frames = cost(page, seconds)
    page.context.close()
    return {
        "load_s_median": round(statistics.median(load_s), 2),
        "idle_cores": round(idle_cores, 3),
        "idle_frames_per_s": round(idle_frames, 1),
        "streaming_cores": round(stream_cores, 3),
        "streaming_frames_per_s": round(stream_frames, 1),
    }


def launch(playwright: Any) -> Any:
    """Debian's Chromium, headless, with the browser tests' flags. Chromium puts a socket in
    $TMPDIR, whose path must be short (about 100 bytes): a long one is replaced by /tmp."""
    short = {"TMPDIR": "/tmp"} if len(tempfile.gettempdir()) > 50 else {}
    return playwright.chromium.launch(
        executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True, env={**os.environ, **short}
    )


def run(seconds: float, loads: int, settle: float) -> Iterator[tuple[str, dict[str, float]]]:
    expect.set_options(timeout=WAIT_MS)
    with sync_playwright() as playwright, tempfile.TemporaryDirectory() as folder:
        browser = launch(playwright)
        try:
            for name, early in (("served", True), ("without_early_script", False)):
                build = functools.partial(
                    build_playing, words, workspace=Path(folder) / name, early_script=early
                )
                with served(build) as server:
                    yield name, measure(browser, server.url, seconds, loads, settle)
        finally:
            browser.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--settle", type=float, default=5.0, help="seconds before idle")
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        sys.exit(f"this benchmark needs {CHROMIUM} (apt-get install -y chromium)")
    results = dict(run(args.seconds, args.loads, args.settle))
    print(
        f"{'page':>22} {'load s':>7} {'idle cores':>11} {'frames/s':>9} "
        f"{'streaming':>10} {'frames/s':>9}"
    )
    for name, figures in results.items():
        print(
            f"{name:>22} {figures['load_s_median']:>7} {figures['idle_cores']:>11} "
            f"{figures['idle_frames_per_s']:>9} {figures['streaming_cores']:>10} "
            f"{figures['streaming_frames_per_s']:>9}"
        )
    print("cores: CPU of the browser's processes (1.0 = one core busy); frames: asked by the page")
    print(json.dumps({"bench": "page", **results}))


if __name__ == "__main__":
    main()
