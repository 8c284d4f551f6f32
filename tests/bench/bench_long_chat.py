"""What a long chat costs the page while a reply streams: Debian's Chromium, headless.

    python tests/bench/bench_long_chat.py [--seconds S] [--sizes 2,102,202,402]
                                          [--paces paced,unpaced]

Serves the chat page (the browser tests' app, `kit.build`, under uvicorn in a thread of this
process). For each chat length (messages already in the chat), a tab opens such a chat and
a reply streams into it at 20 words a second for S seconds, then ends. Measured:

1. open: seconds from opening a new tab until it shows the whole chat;
2. streaming: CPU of all the browser's processes while the reply streams, in cores (1.0
   is one core);
3. lag: seconds from the reply's end on the server until the page shows the turn over,
   that is how far the page had fallen behind the stream;
4. changes: how many times a second the page changed the chat (once or more for each
   update it received).

With each pacing (`--paces`): paced, as the app paces a long chat (`Coalescer.pace` in
backends/gradio/coalesce.py), and unpaced, ten updates a second whatever the chat's length
(as before that pacing). Gradio's page redoes work for every message of the chat on every
update, so an unpaced long chat costs more per update than the page can keep up with.

Prints a table, and as the very last line one JSON object with the figures. Needs
/usr/bin/chromium.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from playwright.sync_api import expect, sync_playwright  # noqa: E402

from backends.gradio import coalesce  # noqa: E402
from schema import Message, Role  # noqa: E402
from tests.backends.conftest import CHROMIUM, LiveServer  # noqa: E402
from tests.backends.gradio.kit import (  # noqa: E402
    badge,
    bot_messages,
    build,
    let_go,
    ready,
    send,
    served,
    session_starting,
)
from tests.bench.bench_page import browser_cpu_s, launch  # noqa: E402

WAIT_MS = 120_000

COUNT_CHANGES = """() => {
  window.__changes = 0;
  new MutationObserver(() => { window.__changes += 1; })
    .observe(document.querySelector('#chatbot'), {subtree: true, characterData: true,
                                                   childList: true});
}"""
"""Counts the page's changes to the chat: each batch of changes the page makes to it (an
update received may be made in more than one)."""


def earlier_exchanges(exchanges: int) -> Iterator[Message]:
    """This many questions and answers of 30 words each, as if they had been said."""
    for number in range(exchanges):
        words = " ".join(f"earlier{number}x{index}" for index in range(30))
        yield Message(role=Role.USER, content=f"Question {number}: {words}?")
        yield Message(role=Role.ASSISTANT, content=f"Answer {number}: **{words}** `done`.")


def grow(server: LiveServer, first: str, exchanges: int) -> None:
    """Give the chat that starts with `first` this many more questions and answers."""
    interpreter = session_starting(server, first)

    async def add() -> None:
        interpreter.session.history.extend(earlier_exchanges(exchanges))

    server.call(add())


def open_chat(browser: Any, server: LiveServer, messages: int) -> tuple[Any, float]:
    """A tab showing a chat of this many messages, and the seconds it took to show them:
    the chat is started in a first tab, grown on the server, then opened in a second one
    (the chat the first tab remembers)."""
    first_tab = browser.new_context().new_page()
    first_tab.set_default_timeout(WAIT_MS)
    first_tab.goto(server.url, wait_until="load")
    ready(first_tab)
    first = f"a chat of {messages} messages {uuid.uuid4().hex[:8]}"
    send(first_tab, first)
    expect(badge(first_tab)).to_have_text("Your turn")
    exchanges = max(0, messages - 2) // 2
    grow(server, first, exchanges)
    remembered = first_tab.context.storage_state()
    first_tab.context.close()
    context = browser.new_context(viewport={"width": 1280, "height": 900}, storage_state=remembered)
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    started = time.monotonic()
    page.goto(server.url, wait_until="load")
    expect(bot_messages(page)).to_have_count(exchanges + 1)
    expect(badge(page)).to_have_text("Your turn")
    return page, time.monotonic() - started


def measure(browser: Any, server: LiveServer, messages: int, seconds: float) -> dict[str, float]:
    page, open_s = open_chat(browser, server, messages)
    try:
        page.wait_for_timeout(1000)  # what opening the chat set moving ends
        page.evaluate(COUNT_CHANGES)
        key = uuid.uuid4().hex[:8]
        cpu, started = browser_cpu_s(), time.monotonic()
        send(page, f"hold {key}")
        page.wait_for_timeout(seconds * 1000)
        cores = (browser_cpu_s() - cpu) / (time.monotonic() - started)
        changes = page.evaluate("window.__changes") / (time.monotonic() - started)
        ended = time.monotonic()
        let_go(server, key)
        expect(badge(page)).to_have_text("Your turn")
        lag = time.monotonic() - ended
    finally:
        page.context.close()
    return {
        "open_s": round(open_s, 2),
        "cores": round(cores, 3),
        "lag_s": round(lag, 2),
        "changes_per_s": round(changes, 1),
    }


PACES = {"paced": coalesce.MAX_INTERVAL_S, "unpaced": 0.0}
"""Each way of pacing measured, by the longest interval between two updates it allows
(unpaced: none longer than the base one, whatever the chat's length)."""


def run(
    sizes: list[int], seconds: float, paces: list[str]
) -> Iterator[tuple[str, dict[str, dict[str, float]]]]:
    expect.set_options(timeout=WAIT_MS)
    with sync_playwright() as playwright, tempfile.TemporaryDirectory() as folder:
        browser = launch(playwright)
        try:
            with served(functools.partial(build, workspace=Path(folder))) as server:
                for name in paces:
                    with mock.patch.object(coalesce, "MAX_INTERVAL_S", PACES[name]):
                        yield name, {str(n): measure(browser, server, n, seconds) for n in sizes}
        finally:
            browser.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--sizes", default="2,102,202,402", help="messages in the chat")
    parser.add_argument("--paces", default="paced,unpaced", help=f"of {', '.join(PACES)}")
    args = parser.parse_args()
    paces = args.paces.split(",")
    if unknown := set(paces) - set(PACES):
        parser.error(f"unknown paces: {', '.join(sorted(unknown))}")
    if not Path(CHROMIUM).exists():
        sys.exit(f"this benchmark needs {CHROMIUM} (apt-get install -y chromium)")
    sizes = [int(size) for size in args.sizes.split(",")]
    results = dict(run(sizes, args.seconds, paces))
    print(f"{'messages':>9} {'':>8} {'open s':>7} {'cores':>6} {'lag s':>6} {'changes/s':>10}")
    for size in sizes:
        for name, figures in results.items():
            row = figures[str(size)]
            print(
                f"{size:>9} {name:>8} {row['open_s']:>7} {row['cores']:>6} {row['lag_s']:>6} "
                f"{row['changes_per_s']:>10}"
            )
    print(
        "open: a new tab until it shows the chat; cores: CPU of the browser's processes while "
        "a reply streams at 20 words a second; lag: how long after the reply ended the page "
        "showed it"
    )
    print(json.dumps({"bench": "long_chat", "seconds": args.seconds, **results}))


if __name__ == "__main__":
    main()
