"""What an LLM provider streams back: text and reasoning deltas, then one final response;
before that, maybe notices that a failed request is about to be tried again."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from schema.messages import ToolCall, Usage


class ModelSettings(BaseModel):
    """Per-request knobs a provider honours where it can."""

    model_config = ConfigDict(frozen=True)

    temperature: float | None = None
    max_tokens: int | None = None
    tool_choice: Literal["auto", "required", "none"] | str = "auto"
    timeout_s: float | None = None


class ModelTextDelta(BaseModel):
    """A piece of the visible reply."""

    model_config = ConfigDict(frozen=True)

    type: Literal["text"] = "text"
    text: str


class ModelReasoningDelta(BaseModel):
    """A piece of the model's reasoning (thinking), shown apart from the reply."""

    model_config = ConfigDict(frozen=True)

    type: Literal["reasoning"] = "reasoning"
    text: str


class ModelResponse(BaseModel):
    """The whole reply of one model call: always the last item of a stream."""

    model_config = ConfigDict(frozen=True)

    type: Literal["response"] = "response"
    text: str = ""
    reasoning: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()
    finish_reason: str | None = None
    model: str | None = None
    provider_data: dict[str, Any] = Field(default_factory=dict)
    """Opaque data the provider needs back on later requests, keyed by provider (Anthropic's
    signed thinking blocks). The agent keeps it in the reply's ``metadata["provider_data"]``."""


class ModelRetryNotice(BaseModel):
    """The request failed before the model said a word and will be made again after
    `wait_s`: yielded before the wait, so the person hears why the reply is slow instead of
    watching it stand still (a rate limit's `Retry-After` can be a minute of silence).

    Only the connectors' retry loop yields it (`connectors.resilience.resilient_stream`); a
    provider of one's own never has to. It is no part of the reply: consumers that only
    want the reply skip it."""

    model_config = ConfigDict(frozen=True)

    type: Literal["retry"] = "retry"
    attempt: int
    """The attempt about to be made, 1-based (the first request was attempt 1)."""
    max_attempts: int
    """The most attempts the provider makes for this request."""
    wait_s: float
    """Seconds it waits before that attempt."""
    reason: str
    """Why, in plain words: "rate limited (HTTP 429)", "no answer within 60 s"."""


ModelStreamPart = Annotated[
    ModelTextDelta | ModelReasoningDelta | ModelResponse | ModelRetryNotice,
    Field(discriminator="type"),
]
