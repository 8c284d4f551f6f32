"""The LLM provider protocol: what a connector implements so agents can call a model."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Protocol, runtime_checkable

from schema import Message, ModelResponse, ModelSettings, ModelStreamPart, ToolSchema


@runtime_checkable
class LLMProvider(Protocol):
    """A chat model. `stream` yields text/reasoning deltas and ends with one ModelResponse.

    Before its first delta it may yield `ModelRetryNotice`s (a failed request about to be
    made again, and why); a provider of one's own need not, and a consumer that only wants
    the reply skips them (`generate_from_stream` does).

    Cancelling the consumer of `stream` must end the underlying request (close the HTTP
    stream, stop the generation thread).
    """

    @property
    def name(self) -> str:
        """A stable identifier such as ``openai:gpt-4o-mini`` or ``scripted``."""
        ...

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] = (),
        settings: ModelSettings | None = None,
    ) -> ModelResponse: ...

    def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] = (),
        settings: ModelSettings | None = None,
    ) -> AsyncIterator[ModelStreamPart]: ...


async def generate_from_stream(stream: AsyncIterator[ModelStreamPart]) -> ModelResponse:
    """Consume a provider stream and return its final response (for `generate` fallbacks)."""
    final: ModelResponse | None = None
    async for part in stream:
        if isinstance(part, ModelResponse):
            final = part
    if final is None:
        from gui_agent.exceptions import ModelResponseError

        raise ModelResponseError("the model stream ended without a response")
    return final


@runtime_checkable
class ModelCatalog(Protocol):
    """The configured models a session can pick from (see connectors.registry)."""

    @property
    def default(self) -> str: ...

    def names(self) -> list[str]: ...

    def get(self, name: str) -> LLMProvider: ...


class StaticCatalog:
    """A catalog over providers you already built; the first is the default."""

    def __init__(self, *providers: LLMProvider) -> None:
        if not providers:
            from gui_agent.exceptions import ConfigError

            raise ConfigError("a model catalog needs at least one model")
        self._providers = {provider.name: provider for provider in providers}
        self._default = providers[0].name

    @property
    def default(self) -> str:
        return self._default

    def names(self) -> list[str]:
        return list(self._providers)

    def get(self, name: str) -> LLMProvider:
        return self._providers[name]
