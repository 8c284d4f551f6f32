"""Local fake vendor servers for the connector tests (real HTTP on 127.0.0.1, never a vendor).

- `ScriptedPeer`: a tiny HTTP/1.1 server (asyncio, in a background thread) that answers each
  request with the next scripted `Reply`: exact status, headers and body bytes, streamed as
  chunked SSE, with `Stall` (hold the connection open until the client leaves) and `Cut`
  (drop the connection mid-body). It records every request and notices disconnects, so
  tests can check what went over the wire and that a cancelled stream was really closed.
  `refuse_when` adds a vendor's validation: a request the rule finds fault with gets the
  rule's refusal instead of the next scripted reply.
- `FakeLLMProcess`: the `fakellm` package's server (OpenAI + Anthropic APIs, YAML rules,
  multi-turn aware) in a subprocess on a free port.
- `openai_*` / `anthropic_*`: the SSE bytes each vendor sends, built from dicts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schema import ModelReasoningDelta, ModelResponse, ModelStreamPart, ModelTextDelta


@dataclass(frozen=True)
class Stall:
    """Send nothing more; keep the connection open until the client closes it."""


@dataclass(frozen=True)
class Cut:
    """Drop the connection right here, without finishing the body."""


Part = bytes | Stall | Cut


@dataclass(frozen=True)
class Reply:
    """One scripted HTTP answer. `answer=False`: read the request and never say anything."""

    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    parts: tuple[Part, ...] = ()
    chunked: bool = True
    answer: bool = True

    @classmethod
    def json(cls, status: int, body: Any, headers: Mapping[str, str] | None = None) -> Reply:
        return cls(
            status=status,
            headers={"content-type": "application/json", **(headers or {})},
            parts=(json.dumps(body).encode(),),
            chunked=False,
        )

    @classmethod
    def sse(cls, *parts: Part, headers: Mapping[str, str] | None = None) -> Reply:
        return cls(
            status=200,
            headers={"content-type": "text/event-stream", **(headers or {})},
            parts=parts,
        )

    @classmethod
    def silent(cls) -> Reply:
        return cls(answer=False)


@dataclass(frozen=True)
class Seen:
    """A request the peer received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found"}


class ScriptedPeer:
    """A scripted HTTP server; `script(...)` queues replies, answered in order."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="scripted-peer", daemon=True)
        self._ready = threading.Event()
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        self._replies: deque[Reply] = deque()
        self._rule: Callable[[Seen], Reply | None] | None = None
        self._lock = threading.Lock()
        self.requests: list[Seen] = []
        self.disconnected = threading.Event()
        """Set when a client hung up before its reply was over (mid-body, Stall, silent)."""
        self.received = threading.Event()
        """Set when a request arrived (cleared by `reset`)."""
        self.port = 0

    # lifecycle -------------------------------------------------------------------------
    def start(self) -> ScriptedPeer:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the scripted peer did not start")
        return self

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._accept, "127.0.0.1", 0)
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        self._loop.close()

    def stop(self) -> None:
        future = asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop)
        future.result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _shutdown(self) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        await self._server.wait_closed()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # scripting -------------------------------------------------------------------------
    def reset(self) -> None:
        with self._lock:
            self._replies.clear()
            self.requests.clear()
            self._rule = None
        self.disconnected.clear()
        self.received.clear()

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def refuse_when(self, rule: Callable[[Seen], Reply | None]) -> None:
        """Check every request with `rule`: its reply (a refusal) is sent instead of the next
        scripted one; None lets the request through to the script."""
        with self._lock:
            self._rule = rule

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self.requests)

    def _next(self, seen: Seen) -> Reply:
        with self._lock:
            self.requests.append(seen)
            self.received.set()
            refusal = self._rule(seen) if self._rule is not None else None
            if refusal is not None:
                return refusal
            if self._replies:
                return self._replies.popleft()
        return Reply.json(500, {"error": {"message": "the peer has no scripted reply left"}})

    # serving ---------------------------------------------------------------------------
    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            await self._serve(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            self.disconnected.set()  # the client hung up before the reply was over
        finally:
            self._handlers.discard(task)
            writer.close()
            with contextlib.suppress(ConnectionError, asyncio.CancelledError):
                await writer.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path, _ = lines[0].split(" ", 2)
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                key, value = line.split(":", 1)
                headers[key.strip().lower()] = value.strip()
        raw = await reader.readexactly(int(headers.get("content-length", "0")))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw
        reply = self._next(Seen(method, path, headers, body))
        if not reply.answer:
            await self._hold(reader)
            return
        out = [f"HTTP/1.1 {reply.status} {_REASONS.get(reply.status, 'Status')}"]
        out += [f"{k}: {v}" for k, v in reply.headers.items()]
        if reply.chunked:
            out.append("transfer-encoding: chunked")
        else:
            length = sum(len(p) for p in reply.parts if isinstance(p, bytes))
            out.append(f"content-length: {length}")
        out.append("connection: close")
        writer.write(("\r\n".join(out) + "\r\n\r\n").encode("latin-1"))
        await writer.drain()
        for part in reply.parts:
            if isinstance(part, Stall):
                await self._hold(reader)
                return
            if isinstance(part, Cut):
                writer.transport.abort()
                return
            if reply.chunked:
                writer.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
            else:
                writer.write(part)
            await writer.drain()
        if reply.chunked:
            writer.write(b"0\r\n\r\n")
            await writer.drain()

    async def _hold(self, reader: asyncio.StreamReader) -> None:
        while await reader.read(65536):
            pass
        self.disconnected.set()


# --- time, without waiting ------------------------------------------------------------


class Sleeps:
    """Stands in for `asyncio.sleep` in a RetryPolicy: records each delay, waits for none."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


class FakeClock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


# --- wire formats ----------------------------------------------------------------------------


def sse_data(payload: Any) -> bytes:
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


OPENAI_DONE = b"data: [DONE]\n\n"


def openai_chunk(
    delta: Mapping[str, Any] | None = None,
    *,
    finish_reason: str | None = None,
    usage: tuple[int, int] | None = None,
    model: str = "gpt-test",
) -> bytes:
    """One ``chat.completion.chunk`` SSE event; `usage` alone gives the final usage chunk."""
    chunk: dict[str, Any] = {
        "id": "chatcmpl-peer",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": model,
        "choices": []
        if delta is None and finish_reason is None
        else [{"index": 0, "delta": dict(delta or {}), "finish_reason": finish_reason}],
    }
    if usage is not None:
        chunk["usage"] = {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": sum(usage),
        }
    return sse_data(chunk)


def openai_text_stream(
    pieces: Iterable[str], *, usage: tuple[int, int] | None = None, done: bool = True
) -> tuple[bytes, ...]:
    parts = [openai_chunk({"role": "assistant"})]
    parts += [openai_chunk({"content": p}) for p in pieces]
    parts.append(openai_chunk({}, finish_reason="stop"))
    if usage is not None:
        parts.append(openai_chunk(usage=usage))
    if done:
        parts.append(OPENAI_DONE)
    return tuple(parts)


def openai_error(status: int, message: str, kind: str = "invalid_request_error") -> Any:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def anthropic_event(payload: Mapping[str, Any]) -> bytes:
    return f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n".encode()


def anthropic_start(input_tokens: int = 10, model: str = "claude-test") -> bytes:
    return anthropic_event(
        {
            "type": "message_start",
            "message": {
                "id": "msg_peer",
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": model,
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": input_tokens, "output_tokens": 1},
            },
        }
    )


def anthropic_block(index: int, block: Mapping[str, Any], deltas: Sequence[Any]) -> list[bytes]:
    """A content block: start, one delta event per item of `deltas`, stop."""
    events = [
        anthropic_event({"type": "content_block_start", "index": index, "content_block": block})
    ]
    events += [
        anthropic_event({"type": "content_block_delta", "index": index, "delta": d}) for d in deltas
    ]
    events.append(anthropic_event({"type": "content_block_stop", "index": index}))
    return events


def anthropic_text_block(index: int, pieces: Sequence[str]) -> list[bytes]:
    return anthropic_block(
        index, {"type": "text", "text": ""}, [{"type": "text_delta", "text": p} for p in pieces]
    )


def anthropic_end(stop_reason: str = "end_turn", output_tokens: int = 5) -> list[bytes]:
    return [
        anthropic_event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            }
        ),
        anthropic_event({"type": "message_stop"}),
    ]


def anthropic_text_stream(
    pieces: Sequence[str], *, input_tokens: int = 10, output_tokens: int = 5
) -> tuple[bytes, ...]:
    return (
        anthropic_start(input_tokens),
        *anthropic_text_block(0, pieces),
        *anthropic_end(output_tokens=output_tokens),
    )


def anthropic_error(kind: str, message: str) -> Any:
    return {"type": "error", "error": {"type": kind, "message": message}}


# --- fakellm in a subprocess ---------------------------------------------------------------

_FAKELLM_BOOT = """
import os, socket, sys
os.environ["FAKELLM_CONFIG"] = sys.argv[1]
sock = socket.socket()
sock.bind(("127.0.0.1", 0))
sock.listen(128)
print(sock.getsockname()[1], flush=True)
import uvicorn
from fakellm.server import app
uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off")).run(sockets=[sock])
"""


class FakeLLMProcess:
    """`fakellm`'s server with the given YAML rules, listening on a free loopback port.

    The socket listens before the app is imported, so the first request simply waits in the
    backlog until the server is up: no polling.
    """

    def __init__(self, config_yaml: str, folder: Path) -> None:
        self._config = folder / "fakellm.yaml"
        self._config.write_text(config_yaml)
        self._process: subprocess.Popen[str] | None = None
        self.port = 0

    def start(self) -> FakeLLMProcess:
        log = self._config.with_name("fakellm.log")
        with log.open("w") as stderr:  # the child keeps its own copy of the descriptor
            self._process = subprocess.Popen(
                [sys.executable, "-c", _FAKELLM_BOOT, str(self._config)],
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                cwd=self._config.parent,
            )
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line.strip().isdigit():
            self.stop()
            raise RuntimeError(f"fakellm did not start; see {log}")
        self.port = int(line)
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self._process is None:
            return
        self._process.terminate()
        try:
            self._process.wait(10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait(10)
        if self._process.stdout is not None:
            self._process.stdout.close()
        self._process = None


# --- consuming a provider stream -----------------------------------------------------------


@dataclass
class Outcome:
    """Everything a provider stream yielded, and the error it ended with (if any)."""

    parts: list[ModelStreamPart]
    error: Exception | None

    @property
    def texts(self) -> list[str]:
        return [p.text for p in self.parts if isinstance(p, ModelTextDelta)]

    @property
    def thoughts(self) -> list[str]:
        return [p.text for p in self.parts if isinstance(p, ModelReasoningDelta)]

    @property
    def response(self) -> ModelResponse:
        assert self.error is None, f"the stream failed: {self.error!r}"
        last = self.parts[-1]
        assert isinstance(last, ModelResponse)
        assert sum(isinstance(p, ModelResponse) for p in self.parts) == 1
        return last


async def consume(stream: AsyncIterator[ModelStreamPart]) -> Outcome:
    parts: list[ModelStreamPart] = []
    try:
        async for part in stream:
            parts.append(part)
    except Exception as error:  # the test inspects it
        return Outcome(parts, error)
    return Outcome(parts, None)
