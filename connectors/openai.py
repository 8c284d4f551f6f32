"""OpenAI and OpenAI-compatible servers as an `LLMProvider` (the only module importing `openai`).

Requests go out as streamed Chat Completions through `openai.AsyncOpenAI` with the SDK's own
retries off: `connectors.resilience` retries (before anything was streamed) and trips a
circuit breaker. The request and stream mapping lives in `connectors.openai_mapping`.

A stream that ends without a finish reason is treated as cut off (`ModelConnectionError`):
the SDK hides whether ``[DONE]`` arrived, and a truncated reply must not look complete. Once
the finish reason came, a server that goes silent or drops the connection instead of ending
the stream has still sent the whole reply (see `connectors.base.next_item`).

A server that answers with a JSON document instead of the stream is understood: an error
object is raised as the error its ``code`` or ``type`` stands for, with the server's message
(`body_error`); a whole chat completion is taken as the reply.

Only the OpenAI service itself (api.openai.com) gets system messages after the history as
they are; any other server gets them folded into user turns (`OpenAIProvider.system_anywhere`).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import openai
from openai import AsyncStream
from openai.types.chat import ChatCompletionChunk

from connectors.base import (
    ReadItems,
    StreamingProvider,
    event_stream_data,
    map_transport_errors,
    next_item,
    read_json_body,
)
from connectors.openai_mapping import (
    RequestOptions,
    StreamAccumulator,
    body_as_chunk,
    build_request,
    error_message,
    error_status,
)
from connectors.resilience import (
    CircuitBreaker,
    RetryPolicy,
    error_for_status,
    parse_retry_after,
    shorten,
)
from gui_agent.exceptions import (
    ConfigError,
    ModelConnectionError,
    ModelError,
    ModelRateLimited,
    ModelResponseError,
    ModelServerError,
    ModelTimeout,
)
from schema import Message, ModelSettings, ModelStreamPart, ToolSchema

logger = logging.getLogger(__name__)

KEY_ENV = "OPENAI_API_KEY"
NO_KEY = "no-key-needed"
"""Sent to OpenAI-compatible servers when no key is configured (most local ones ignore it)."""

OPENAI_HOST = "api.openai.com"


def _server_detail(error: openai.APIError) -> str:
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
        return json.dumps(body)[:500]
    if isinstance(body, str):
        return body
    return error.message


@contextmanager
def map_errors(provider: str, *, model: str = "", hint: str = "") -> Iterator[None]:
    """Translate `openai` SDK (and transport) exceptions into our `ModelError` tree."""
    try:
        with map_transport_errors(provider):
            yield
    except ModelError:
        raise
    except openai.APIStatusError as error:
        raise error_for_status(
            error.status_code,
            _server_detail(error),
            provider=provider,
            model=model,
            key_env=KEY_ENV,
            retry_after=parse_retry_after(error.response.headers),
            hint=hint,
        ) from error
    except openai.APITimeoutError as error:
        raise ModelTimeout(f"{provider}: no answer from the server in time") from error
    except openai.APIConnectionError as error:
        cause = error.__cause__
        raise ModelConnectionError(
            f"{provider}: the connection to the server failed"
            + (f" ({type(cause).__name__}: {cause})" if cause else ""),
            provider=provider,
        ) from error
    except openai.APIResponseValidationError as error:
        raise ModelResponseError(
            f"{provider}: the server's answer did not match the API: {error.message}",
            provider=provider,
        ) from error
    except openai.APIError as error:
        # An error object inside an otherwise successful stream.
        detail = _server_detail(error)
        kind = f"{getattr(error, 'type', '')} {getattr(error, 'code', '')}".lower()
        if "rate" in kind:
            raise ModelRateLimited(
                f"{provider}: rate limited mid-stream: {shorten(detail)}", provider=provider
            ) from error
        raise ModelServerError(
            f"{provider}: the server reported an error mid-stream: {shorten(detail)}",
            provider=provider,
        ) from error
    except openai.OpenAIError as error:
        raise ModelError(f"{provider}: {error}", provider=provider) from error


def body_error(
    error: object,
    *,
    provider: str,
    model: str,
    retry_after: float | None = None,
    hint: str = "",
) -> ModelError:
    """The ModelError for an error object a server sent, status 200, instead of a stream:
    the error of the HTTP status it stands for (`error_status`), else a server error."""
    detail = error_message(error)
    status = error_status(error)
    if status is None:
        return ModelServerError(
            f"{provider}: the server answered with an error instead of a stream: {shorten(detail)}",
            provider=provider,
            retry_after=retry_after,
        )
    return error_for_status(
        status,
        detail,
        provider=provider,
        model=model,
        key_env=KEY_ENV,
        retry_after=retry_after,
        hint=hint,
    )


def _as_dict(item: object) -> object:
    """An SDK chunk as the plain dict the server sent (anything else is left for the mapper)."""
    to_dict = getattr(item, "to_dict", None)
    return to_dict(warnings=False) if callable(to_dict) else item


class OpenAIProvider(StreamingProvider):
    """A Chat Completions model: OpenAI itself, or any OpenAI-compatible server via `base_url`.

    ``max_retries`` sets the default retry policy (``max_retries + 1`` attempts); pass
    ``retry`` to control backoff fully. ``timeout_s`` is how long the server may stay silent
    (before the first byte and between chunks). The OpenAI service needs a key (argument or
    ``OPENAI_API_KEY``); a compatible server gets a placeholder when none is set.

    `system_anywhere` is true only for api.openai.com: other servers get a system message
    that follows the history (the planner's and supervisor's instructions) as a user turn,
    since many chat templates refuse a system message that is not first. Set it to true for
    a server known to take them anywhere.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        name_prefix: str = "openai",
        retry: RetryPolicy | None = None,
        breaker: CircuitBreaker | None = None,
        max_response_chars: int = 2_000_000,
    ) -> None:
        if not model:
            raise ConfigError("OpenAIProvider needs a model name, e.g. 'gpt-4o-mini'")
        key = api_key or os.environ.get(KEY_ENV)
        if not key:
            if base_url is None:
                raise ConfigError(
                    f"no OpenAI API key: set {KEY_ENV}, or pass base_url for a local "
                    "OpenAI-compatible server"
                )
            key = NO_KEY
        self.model = model
        self.base_url = base_url
        if base_url is None:
            self._name = f"{name_prefix}:{model}"
        else:
            prefix = "openai-compatible" if name_prefix == "openai" else name_prefix
            self._name = f"{prefix}:{base_url}#{model}"
        self.retry = retry if retry is not None else RetryPolicy(max_attempts=max_retries + 1)
        self.breaker = breaker if breaker is not None else CircuitBreaker()
        self.timeout_s = timeout_s
        self.max_response_chars = max_response_chars
        self._temperature = temperature
        self._max_tokens = max_tokens
        self._stream_usage = True
        self._client = openai.AsyncOpenAI(
            api_key=key, base_url=base_url, timeout=timeout_s, max_retries=0
        )
        self.system_anywhere = self._client.base_url.host == OPENAI_HOST

    def _options(self) -> RequestOptions:
        return RequestOptions(
            model=self.model,
            temperature=self._temperature,
            max_tokens=self._max_tokens,
            max_tokens_field="max_completion_tokens" if self.base_url is None else "max_tokens",
            stream_usage=self._stream_usage,
            system_anywhere=self.system_anywhere,
        )

    @property
    def _hint(self) -> str:
        return "; check that the base URL ends in /v1" if self.base_url else ""

    def _map_errors(self) -> AbstractContextManager[None]:
        return map_errors(self._name, model=self.model, hint=self._hint)

    async def _chunks(self, sdk_stream: AsyncStream[ChatCompletionChunk]) -> AsyncIterator[Any]:
        """The stream's chunks; read whole when the server answered with JSON instead (an
        event stream under a JSON label, or one document), and raised if one is an error."""
        response = sdk_stream.response
        with self._map_errors():
            text = await read_json_body(
                response, max_chars=self.max_response_chars, provider=self._name
            )
            if text is None:
                return sdk_stream
            chunks = event_stream_data(text)
            if chunks is None:
                chunks = [body_as_chunk(text, provider=self._name)]
        for chunk in chunks:
            if isinstance(chunk, Mapping) and chunk.get("error"):
                raise body_error(
                    chunk["error"],
                    provider=self._name,
                    model=self.model,
                    retry_after=parse_retry_after(response.headers),
                    hint=self._hint,
                )
        return ReadItems(chunks)

    async def _create(
        self, body: dict[str, Any], silence_s: float
    ) -> AsyncStream[ChatCompletionChunk]:
        create = self._client.chat.completions.create
        with self._map_errors():
            opened: AsyncStream[ChatCompletionChunk] = await create(
                stream=True, timeout=silence_s, **body
            )
        return opened

    async def _open(
        self, request: dict[str, Any], silence_s: float
    ) -> AsyncStream[ChatCompletionChunk]:
        body = {k: v for k, v in request.items() if k != "stream"}
        try:
            return await self._create(body, silence_s)
        except ModelError as error:
            if "stream_options" not in body or error.status not in (400, 422):
                raise
            # Some compatible servers reject `stream_options`: retry once without it, and
            # if that works, stop sending it (usage is then not streamed).
            body.pop("stream_options")
            opened = await self._create(body, silence_s)
            logger.info("%s: the server refused stream_options; streaming without it", self._name)
            self._stream_usage = False
            return opened

    async def _attempt(
        self,
        messages: tuple[Message, ...],
        tools: tuple[ToolSchema, ...],
        settings: ModelSettings | None,
    ) -> AsyncGenerator[ModelStreamPart, None]:
        request = build_request(messages, tools, settings, self._options())
        silence_s = settings.timeout_s if settings and settings.timeout_s else self.timeout_s
        sdk_stream = await self._open(request, silence_s)
        accumulator = StreamAccumulator(max_chars=self.max_response_chars, provider=self._name)
        try:
            chunks = await self._chunks(sdk_stream)
            while True:
                chunk = await next_item(
                    chunks,
                    errors=self._map_errors,
                    after_finish_s=self._after_finish_s(accumulator.finish_reason is not None),
                    provider=self._name,
                )
                if chunk is None:
                    break
                with self._map_errors():
                    deltas = accumulator.feed(_as_dict(chunk))
                for delta in deltas:
                    yield delta
        finally:
            await sdk_stream.close()
        if accumulator.chunks == 0:
            raise ModelResponseError(
                f"{self._name}: the server answered without any stream data", provider=self._name
            )
        if accumulator.finish_reason is None:
            # The SDK hides whether `[DONE]` came; a reply without a finish reason was cut off.
            raise ModelConnectionError(
                f"{self._name}: the stream ended before the model finished", provider=self._name
            )
        yield accumulator.response(model=self.model)
