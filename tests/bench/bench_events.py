"""What the server spends answering one event of the Gradio chat page, outside the handler.

    python tests/bench/bench_events.py [--runs N]

Builds the chat page (`create_app`, no server, no browser) and times, for its widest event
(a chat opened: every one of its 74 components is an output), the work Gradio does on what
the handler returned (`postprocess_data`), as the page does it (`PageBlocks`) and as Gradio's
own `Blocks` does it, in the same process, interleaved:

1. one output changed (the title box), the other 73 left alone, as most events do;
2. every output left alone (`gr.skip()`), as a stream's steps often are for all but a few;
3. the chats list and the chat changed, as after a chat is opened.

Reports the median and p90 in milliseconds of CPU time (`time.process_time`) per event,
and the speed-up. Prints a table, and as the very last line one JSON object with the
figures. Not a pytest module (pytest collects test_*.py only).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # (before Gradio is imported)

import gradio as gr
from gradio.block_function import BlockFunction
from gradio.state_holder import SessionState

from backends.gradio import create_app
from connectors.scripted import ScriptedModel
from gui_agent.llm import StaticCatalog
from gui_agent.manager import SessionManager
from gui_agent.store import MemoryStore


def _output(fn: BlockFunction, elem_id: str) -> Any:
    return next(block for block in fn.outputs if getattr(block, "elem_id", None) == elem_id)


def _cases(fn: BlockFunction) -> dict[str, Callable[[], Any]]:
    """Each case's handler answer (made afresh for every event: Gradio changes the
    updates it reads)."""
    title, listed, chat = (
        _output(fn, name) for name in ("rename-input", "session-list", "chatbot")
    )
    messages = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]
    return {
        "one_changed": lambda: {title: gr.update(value="A title")},
        "all_skipped": gr.skip,
        "chat_opened": lambda: {
            listed: gr.update(choices=[("A chat", "a")], value="a"),
            chat: list(messages),
        },
    }


async def _cpu_ms(process: Callable[[Any], Awaitable[Any]], answer: Any) -> float:
    start = time.process_time()
    await process(answer)
    return (time.process_time() - start) * 1000


async def measure(runs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-events-") as folder:
        manager = SessionManager(
            models=StaticCatalog(ScriptedModel(default="hi")),
            store=MemoryStore(),
            workspace_root=Path(folder),
        )
        try:
            demo = create_app(manager)
            fn = max(demo.fns.values(), key=lambda each: len(each.outputs))
            state = SessionState(demo)
            results: dict[str, Any] = {"outputs": len(fn.outputs), "runs": runs}

            async def pages(answer: Any) -> Any:
                return await demo.postprocess_data(fn, answer, state)

            async def gradios_own(answer: Any) -> Any:
                return await gr.Blocks.postprocess_data(demo, fn, answer, state)

            for name, answer in _cases(fn).items():
                ours: list[float] = []
                gradios: list[float] = []
                for _ in range(runs):  # (interleaved: both see the same machine state)
                    ours.append(await _cpu_ms(pages, answer()))
                    gradios.append(await _cpu_ms(gradios_own, answer()))
                results[name] = {
                    "page_ms_p50": statistics.median(ours),
                    "page_ms_p90": _p90(ours),
                    "gradio_ms_p50": statistics.median(gradios),
                    "gradio_ms_p90": _p90(gradios),
                    "speedup": statistics.median(gradios) / max(statistics.median(ours), 1e-6),
                }
            return results
        finally:
            await manager.close()


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]


def table(results: dict[str, Any]) -> str:
    lines = [
        f"the page's widest event ({results['outputs']} outputs): CPU ms per event, "
        f"{results['runs']} runs",
        f"{'case':<14}{'page p50':>11}{'page p90':>11}{'Gradio p50':>12}{'Gradio p90':>12}"
        f"{'speed-up':>10}",
    ]
    for name in ("one_changed", "all_skipped", "chat_opened"):
        row = results[name]
        lines.append(
            f"{name:<14}{row['page_ms_p50']:>11.3f}{row['page_ms_p90']:>11.3f}"
            f"{row['gradio_ms_p50']:>12.3f}{row['gradio_ms_p90']:>12.3f}{row['speedup']:>9.0f}x"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200, help="events per case and way")
    args = parser.parse_args()
    results = asyncio.run(measure(args.runs))
    print(table(results))
    print(json.dumps(results, sort_keys=True))


if __name__ == "__main__":
    main()
