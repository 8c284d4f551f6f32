"""Offline models for tests, demos and users testing their own agents.

`ScriptedModel` plays back a queue of replies and records every request it was sent.
`EchoModel` answers by echoing; it is the last-resort default when nothing else is configured.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import deque
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from gui_agent.exceptions import ModelError, ModelResponseError
from schema import (
    Message,
    ModelReasoningDelta,
    ModelResponse,
    ModelSettings,
    ModelStreamPart,
    ModelTextDelta,
    Role,
    ToolCall,
    ToolSchema,
    Usage,
    new_id,
)

_TOKEN_RE = re.compile(r"\S+\s*|\s+")

ScriptedReply = str | ModelResponse | BaseException


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """What a scripted or function model was asked: the messages, tools and settings."""

    messages: tuple[Message, ...]
    tools: tuple[ToolSchema, ...]
    settings: ModelSettings | None


def call(name: str, /, _id: str | None = None, **arguments: Any) -> ModelResponse:
    """A reply that calls one tool: ``call("run_python", code="print(1)")``."""
    return calls((name, arguments, _id))


def calls(
    *specs: tuple[str, dict[str, Any]] | tuple[str, dict[str, Any], str | None],
) -> ModelResponse:
    """A reply that calls several tools at once (parallel tool calls)."""
    tool_calls = []
    for spec in specs:
        name, arguments = spec[0], spec[1]
        call_id = spec[2] if len(spec) > 2 and spec[2] else "call_" + new_id()[:12]
        tool_calls.append(ToolCall(id=str(call_id), name=name, arguments=json.dumps(arguments)))
    return ModelResponse(tool_calls=tuple(tool_calls), finish_reason="tool_calls")


def split_tokens(text: str) -> list[str]:
    """Split text into word-sized pieces, the way a model streams it (whitespace kept)."""
    return _TOKEN_RE.findall(text) or ([text] if text else [])


def estimate_usage(
    messages: Sequence[Message], output: str, tool_calls: Sequence[ToolCall]
) -> Usage:
    prompt_chars = sum(len(m.content) for m in messages)
    out_chars = len(output) + sum(len(c.name) + len(c.arguments) for c in tool_calls)
    return Usage(
        input_tokens=max(1, prompt_chars // 4),
        output_tokens=max(1, out_chars // 4) if out_chars else 0,
        requests=1,
        estimated=True,
    )


async def stream_response(
    response: ModelResponse, *, delay_s: float = 0.0
) -> AsyncIterator[ModelStreamPart]:
    """Stream a whole response as a real model does: its reasoning as word-sized reasoning
    deltas, then its text as word-sized text deltas, then the response itself."""
    for piece in split_tokens(response.reasoning or ""):
        if delay_s:
            await asyncio.sleep(delay_s)
        yield ModelReasoningDelta(text=piece)
    for piece in split_tokens(response.text):
        if delay_s:
            await asyncio.sleep(delay_s)
        yield ModelTextDelta(text=piece)
    yield response


class ScriptedModel:
    """Replies from a queue: a string (text), a ModelResponse (e.g. from `call(...)`), or an
    exception instance (raised, to simulate a failing provider). `delay_s` paces the stream.

    When the queue is empty the model answers `default` if given, else raises
    ModelResponseError. Every request is recorded in `requests`.
    """

    def __init__(
        self,
        replies: Iterable[ScriptedReply] = (),
        *,
        name: str = "scripted",
        default: str | None = None,
        delay_s: float = 0.0,
    ) -> None:
        self._name = name
        self._replies: deque[ScriptedReply] = deque(replies)
        self.default = default
        self.delay_s = delay_s
        self.requests: list[ModelRequest] = []

    @property
    def name(self) -> str:
        return self._name

    @property
    def remaining(self) -> int:
        return len(self._replies)

    def push(self, *replies: ScriptedReply) -> None:
        self._replies.extend(replies)

    def _next(self, messages: Sequence[Message], tools: Sequence[ToolSchema]) -> ModelResponse:
        if self._replies:
            reply = self._replies.popleft()
        elif self.default is not None:
            reply = self.default
        else:
            raise ModelResponseError("the scripted model has no more replies", provider=self._name)
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, str):
            reply = ModelResponse(text=reply, finish_reason="stop")
        if reply.usage == Usage():
            usage = estimate_usage(messages, reply.text, reply.tool_calls)
            reply = reply.model_copy(update={"usage": usage, "model": self._name})
        return reply

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] = (),
        settings: ModelSettings | None = None,
    ) -> ModelResponse:
        self.requests.append(ModelRequest(tuple(messages), tuple(tools), settings))
        return self._next(messages, tools)

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] = (),
        settings: ModelSettings | None = None,
    ) -> AsyncIterator[ModelStreamPart]:
        self.requests.append(ModelRequest(tuple(messages), tuple(tools), settings))
        response = self._next(messages, tools)
        async for part in stream_response(response, delay_s=self.delay_s):
            yield part


class EchoModel:
    """Answers every message by echoing it back: the app still works with nothing configured."""

    def __init__(self, *, name: str = "scripted:echo", delay_s: float = 0.01) -> None:
        self._name = name
        self.delay_s = delay_s

    @property
    def name(self) -> str:
        return self._name

    def _reply(self, messages: Sequence[Message]) -> ModelResponse:
        last = next((m for m in reversed(messages) if m.role is Role.USER), None)
        said = last.content if last else ""
        text = (
            "I am the built-in echo model: I repeat your message and call no tools. You said:\n\n"
            + said
        )
        return ModelResponse(
            text=text,
            finish_reason="stop",
            usage=estimate_usage(messages, text, ()),
            model=self._name,
        )

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] = (),
        settings: ModelSettings | None = None,
    ) -> ModelResponse:
        return self._reply(messages)

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] = (),
        settings: ModelSettings | None = None,
    ) -> AsyncIterator[ModelStreamPart]:
        async for part in stream_response(self._reply(messages), delay_s=self.delay_s):
            yield part


def error_reply(message: str) -> ModelError:
    """An exception instance to queue in a ScriptedModel, simulating a provider failure."""
    return ModelError(message, provider="scripted")
