"""What the server itself costs: the real `gui-agent serve` process, idle and per page load.

    python tests/bench/bench_server.py [--seconds S] [--loads N]

Starts `gui-agent serve` (the built-in offline model, a data folder of its own, loopback)
and reads its CPU time from /proc (utime+stime, the server process only, not the browser):

1. idle: cores used (1.0 is one core kept busy) over S seconds with no page open, from
   `--settle` seconds after the server answered (past the event queue's busy spell);
2. page loads: server CPU seconds per page load, each in a new browser context (nothing
   cached), median of N, and the seconds until the page shows its first state;
3. reloads: the same for a reload in the same context (the browser's cache in use), and how
   many of Gradio's build files the browser asked the server for again;
4. idle with a page open: cores over S seconds with one tab open and doing nothing, from
   `--settle` seconds after it loaded (past the event queue's busy spell: quiet_queue.py).

Debian's Chromium through Playwright, as in the browser tests. Prints a table, and as the
very last line one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import httpx  # noqa: E402
from playwright.sync_api import expect, sync_playwright  # noqa: E402

from backends.gradio.quiet_queue import BUSY_S  # noqa: E402
from tests.backends.gradio.kit import ready  # noqa: E402
from tests.bench.bench_page import launch  # noqa: E402

GUI_AGENT = Path(sys.executable).with_name("gui-agent")
WAIT_MS = 60_000


def cpu_s(pid: int) -> float:
    """CPU seconds the process has used so far (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def serving(folder: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """`gui-agent serve` on a free loopback port, until the block ends."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GUI_AGENT_", "OPENAI_"))}
    env.update(GRADIO_ANALYTICS_ENABLED="False", HF_HUB_OFFLINE="1")
    args = [str(GUI_AGENT), "serve", "--port", str(port), "--data-dir", str(folder / "data")]
    with (folder / "server.log").open("wb") as log:
        process = subprocess.Popen(
            [*args, "--model", "scripted:echo", "--no-probe"], stdout=log, stderr=log, env=env
        )
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 90
        while True:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError((folder / "server.log").read_text(errors="replace"))
            try:
                httpx.get(url, timeout=2.0)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        yield process, url
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)


def idle_cores(pid: int, seconds: float) -> float:
    before, started = cpu_s(pid), time.monotonic()
    time.sleep(seconds)
    return (cpu_s(pid) - before) / (time.monotonic() - started)


def load(page: Any, pid: int, url: str, *, again: bool = False) -> tuple[float, float, int]:
    """One page load (a reload when `again`): the server's CPU seconds for it (taken a
    moment after the page is up, for what the load set going), the seconds until the page
    is up, and the build files fetched from the server rather than the browser's cache."""
    before, started = cpu_s(pid), time.monotonic()
    if again:
        page.reload(wait_until="load")
    else:
        page.goto(url, wait_until="load")
    ready(page)
    up = time.monotonic() - started
    page.wait_for_timeout(500)
    fetched = page.evaluate(
        """() => performance.getEntriesByType('resource')
            .filter(e => e.name.includes('/assets/') && e.transferSize > 0).length"""
    )
    return cpu_s(pid) - before, up, int(fetched)


def measure(seconds: float, loads: int, settle: float) -> dict[str, float]:
    expect.set_options(timeout=WAIT_MS)
    with (
        tempfile.TemporaryDirectory(prefix="bench-server-") as folder,
        serving(Path(folder)) as (process, url),
        sync_playwright() as playwright,
    ):
        time.sleep(settle)  # past the event queue's busy spell after starting
        idle = idle_cores(process.pid, seconds)
        browser = launch(playwright)
        try:
            fresh: list[tuple[float, float, int]] = []
            again: list[tuple[float, float, int]] = []
            for _ in range(max(1, loads)):
                context = browser.new_context()
                page = context.new_page()
                page.set_default_timeout(WAIT_MS)
                fresh.append(load(page, process.pid, url))
                again.append(load(page, process.pid, url, again=True))
                context.close()
            context = browser.new_context()
            page = context.new_page()
            page.set_default_timeout(WAIT_MS)
            load(page, process.pid, url)
            time.sleep(settle)  # past the queue's busy spell after the page's events
            open_idle = idle_cores(process.pid, seconds)
            context.close()
        finally:
            browser.close()
    return {
        "idle_cores": round(idle, 4),
        "load_cpu_s": round(statistics.median(f[0] for f in fresh), 3),
        "load_s": round(statistics.median(f[1] for f in fresh), 2),
        "load_assets_fetched": statistics.median(f[2] for f in fresh),
        "reload_cpu_s": round(statistics.median(a[0] for a in again), 3),
        "reload_s": round(statistics.median(a[1] for a in again), 2),
        "reload_assets_fetched": statistics.median(a[2] for a in again),
        "idle_with_page_cores": round(open_idle, 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--loads", type=int, default=7)
    parser.add_argument(
        "--settle",
        type=float,
        default=BUSY_S + 0.5,
        help="seconds from the start and from a page's load to an idle measure (quiet_queue.py)",
    )
    args = parser.parse_args()
    figures = measure(args.seconds, args.loads, args.settle)
    print("gui-agent serve: the server process's own CPU (cores: 1.0 is one core kept busy)")
    print(f"  idle, no page open      {figures['idle_cores']:>8.4f} cores")
    print(f"  idle, one page open     {figures['idle_with_page_cores']:>8.4f} cores")
    print(
        f"  page load (new context) {figures['load_cpu_s']:>8.3f} CPU s, up in "
        f"{figures['load_s']} s, {figures['load_assets_fetched']:g} build files fetched"
    )
    print(
        f"  reload (cache in use)   {figures['reload_cpu_s']:>8.3f} CPU s, up in "
        f"{figures['reload_s']} s, {figures['reload_assets_fetched']:g} build files fetched"
    )
    print(f"  (medians of {args.loads} loads; idle over {args.seconds:g} s)")
    print(json.dumps({"bench": "server", **figures}))


if __name__ == "__main__":
    main()
