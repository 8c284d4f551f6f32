"""`FunctionModel`: your function plays the LLM. For testing agents without a model.

The function receives the messages and a `FunctionInfo` (tools, settings, call number) and
returns a string, a ModelResponse, or an (async) iterator of strings / stream parts for
streaming. It may be sync or async.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from connectors.scripted import estimate_usage, stream_response
from gui_agent.exceptions import ModelResponseError
from schema import (
    Message,
    ModelReasoningDelta,
    ModelResponse,
    ModelRetryNotice,
    ModelSettings,
    ModelStreamPart,
    ModelTextDelta,
    ToolSchema,
)


@dataclass(frozen=True, slots=True)
class FunctionInfo:
    tools: tuple[ToolSchema, ...]
    settings: ModelSettings | None
    call_number: int


FunctionResult = (
    str | ModelResponse | Iterable[str | ModelStreamPart] | AsyncIterator[str | ModelStreamPart]
)
ModelFunction = Callable[[list[Message], FunctionInfo], FunctionResult | Awaitable[FunctionResult]]


class FunctionModel:
    def __init__(self, function: ModelFunction, *, name: str = "function") -> None:
        self._function = function
        self._name = name
        self.calls = 0

    @property
    def name(self) -> str:
        return self._name

    async def _invoke(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSchema],
        settings: ModelSettings | None,
    ) -> FunctionResult:
        self.calls += 1
        info = FunctionInfo(tuple(tools), settings, self.calls)
        result: Any = self._function(list(messages), info)
        if inspect.isawaitable(result):
            result = await result
        return result  # type: ignore[no-any-return]

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] = (),
        settings: ModelSettings | None = None,
    ) -> ModelResponse:
        final: ModelResponse | None = None
        async for part in self.stream(messages, tools=tools, settings=settings):
            if isinstance(part, ModelResponse):
                final = part
        assert final is not None
        return final

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] = (),
        settings: ModelSettings | None = None,
    ) -> AsyncIterator[ModelStreamPart]:
        result = await self._invoke(messages, tools, settings)
        if isinstance(result, str):
            result = ModelResponse(text=result, finish_reason="stop")
        if isinstance(result, Mapping | bytes | bytearray) or not isinstance(
            result, ModelResponse | Iterable | AsyncIterator
        ):  # (a dict or bytes iterates too, into its keys or numbers: never a reply)
            raise ModelResponseError(
                f"the model function returned {type(result).__name__}; return a str, a "
                "ModelResponse, or an (async) iterator of strings and stream parts"
            )
        if isinstance(result, ModelResponse):
            if not result.usage.requests:
                usage = estimate_usage(messages, result.text, result.tool_calls)
                result = result.model_copy(update={"usage": usage})
            async for part in stream_response(result):
                yield part
            return
        text: list[str] = []
        reasoning: list[str] = []
        final: ModelResponse | None = None
        async for raw in _aiter(result):
            item = ModelTextDelta(text=raw) if isinstance(raw, str) else raw
            if isinstance(item, ModelTextDelta):
                text.append(item.text)
            elif isinstance(item, ModelReasoningDelta):
                reasoning.append(item.text)
            elif isinstance(item, ModelResponse):
                final = item
                continue
            elif not isinstance(item, ModelRetryNotice):  # (passed on, as a vendor's are)
                raise ModelResponseError(f"function model yielded {type(item).__name__}")
            yield item
        if final is None:
            joined = "".join(text)
            final = ModelResponse(
                text=joined,
                reasoning="".join(reasoning) or None,
                finish_reason="stop",
                usage=estimate_usage(messages, joined, ()),
            )
        yield final


async def _aiter(
    source: Iterable[str | ModelStreamPart] | AsyncIterator[str | ModelStreamPart],
) -> AsyncIterator[str | ModelStreamPart]:
    if isinstance(source, AsyncIterator):
        async for item in source:
            yield item
    else:
        for item in source:
            yield item
