"""Anthropic's Messages API as an `LLMProvider` (the only module importing `anthropic`).

Requests stream raw events through `anthropic.AsyncAnthropic` with the SDK's own retries
off: `connectors.resilience` retries (before anything was streamed) and trips a circuit
breaker. The request and event mapping lives in `connectors.anthropic_mapping`. A server
that answers with a JSON document instead of the event stream has its error raised with its
own words (`anthropic_mapping.body_error`), and one that answers with an HTML page or other
text is told apart too (`connectors.base.not_a_stream`), not reported as an empty stream.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import anthropic
from anthropic import AsyncStream
from anthropic.types import RawMessageStreamEvent

from connectors.anthropic_mapping import (
    EventAccumulator,
    RequestOptions,
    body_error,
    build_request,
    error_words,
    stream_error,
)
from connectors.base import (
    DEFAULT_TIMEOUT_S,
    TIMEOUT_ATTEMPTS,
    StreamingProvider,
    answer_mismatch,
    connection_failed,
    hide_url_passwords,
    map_transport_errors,
    next_item,
    shown_url,
    timeout_error,
)
from connectors.resilience import (
    CircuitBreaker,
    RetryPolicy,
    error_for_status,
    parse_retry_after,
)
from connectors.stream_bodies import (
    close_items,
    html_page,
    json_content,
    not_a_stream,
    read_non_stream_body,
    wrong_endpoint,
    wrong_endpoint_status,
)
from gui_agent.exceptions import (
    ConfigError,
    ModelConnectionError,
    ModelError,
    ModelResponseError,
)
from schema import Message, ModelSettings, ModelStreamPart, ToolSchema

logger = logging.getLogger(__name__)

KEY_ENV = "ANTHROPIC_API_KEY"
NO_KEY = "no-key-needed"

BASE_URL_HINT = (
    "check the base URL (for Anthropic-compatible servers it usually ends before /v1: "
    "the client adds /v1/messages)"
)


def _server_detail(error: anthropic.APIStatusError) -> str:
    """What the server said: its error message, or its body (a web page by its title)."""
    if error.api_message:
        return error.api_message
    body = error.body
    if isinstance(body, str):
        return html_page(body, error.response.headers) or body
    if isinstance(body, dict):  # LM Studio's bare error words; FastAPI's "detail"
        for name in ("error", "detail"):
            if isinstance(body.get(name), str):
                return str(body[name])
    return json.dumps(body)[:500] if body is not None else error.message


@contextmanager
def map_errors(
    provider: str,
    *,
    model: str = "",
    hint: str = "",
    timeout_s: float | None = None,
    timeout_setting: str = "",
) -> Iterator[None]:
    """Translate `anthropic` SDK (and transport) exceptions into our `ModelError` tree;
    `hint` is added to an unknown-model error (what else to check), `timeout_s` is how long
    the server may stay silent."""
    try:
        with map_transport_errors(provider, timeout_s=timeout_s, timeout_setting=timeout_setting):
            yield
    except ModelError:
        raise
    except anthropic.APIStatusError as error:
        detail = _server_detail(error)
        wrong = wrong_endpoint_status(
            detail, error.body, error.response, provider=provider, hint=BASE_URL_HINT
        )
        if wrong is not None:
            raise wrong from error
        if error.status_code < 400:
            # An `error` event inside a stream that had started with 200.
            raise stream_error(str(error.type or ""), detail, provider=provider) from error
        raise error_for_status(
            error.status_code,
            detail,
            provider=provider,
            model=model,
            key_env=KEY_ENV,
            retry_after=parse_retry_after(error.response.headers),
            hint=hint,
        ) from error
    except anthropic.APITimeoutError as error:
        raise timeout_error(provider, timeout_s, timeout_setting) from error
    except anthropic.APIConnectionError as error:
        raise connection_failed(provider, error) from error
    except anthropic.APIResponseValidationError as error:
        raise answer_mismatch(provider, error.message) from error
    except anthropic.AnthropicError as error:
        raise ModelError(f"{provider}: {error}", provider=provider) from error


def _as_dict(item: object) -> object:
    """An SDK event as the plain dict the server sent (anything else is left for the mapper)."""
    to_dict = getattr(item, "to_dict", None)
    return to_dict(warnings=False) if callable(to_dict) else item


class AnthropicProvider(StreamingProvider):
    """A Claude model through the Messages API (or a server speaking it, via `base_url`).

    ``thinking_budget`` turns on extended thinking with that many tokens; thinking arrives as
    reasoning deltas. ``timeout_s`` is how long the server may stay silent (before the first
    byte and between events; a silence is asked again at most once: `TIMEOUT_ATTEMPTS`);
    ``timeout_setting``, what sets it, is named when it fires. The key comes from the
    argument or ``ANTHROPIC_API_KEY``.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        temperature: float | None = None,
        max_tokens: int = 4096,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        retry: RetryPolicy | None = None,
        breaker: CircuitBreaker | None = None,
        thinking_budget: int | None = None,
        max_response_chars: int = 2_000_000,
        timeout_setting: str = "",
    ) -> None:
        if not model:
            raise ConfigError("AnthropicProvider needs a model name, e.g. 'claude-sonnet-4-5'")
        key = api_key or os.environ.get(KEY_ENV)
        if not key:
            if base_url is None:
                raise ConfigError(f"no Anthropic API key: set {KEY_ENV}")
            key = NO_KEY
        self.model = model
        self.base_url = base_url
        where = "" if base_url is None else f"{shown_url(base_url)}#"
        self._name = f"anthropic:{where}{model}"
        self.retry = (
            retry if retry is not None else RetryPolicy(max_timeout_attempts=TIMEOUT_ATTEMPTS)
        )
        self.breaker = breaker if breaker is not None else CircuitBreaker()
        self.timeout_s = timeout_s
        self.timeout_setting = timeout_setting
        self.max_response_chars = max_response_chars
        self._options = RequestOptions(
            model=model,
            max_tokens=max_tokens,
            temperature=temperature,
            thinking_budget=thinking_budget,
        )
        hide_url_passwords()
        self._client = anthropic.AsyncAnthropic(
            api_key=key, base_url=base_url, timeout=timeout_s, max_retries=0
        )

    def _map_errors(self, silence_s: float | None = None) -> AbstractContextManager[None]:
        """`map_errors` for this provider; `silence_s`: the request's timeout, if not ours."""
        hint = f"; {BASE_URL_HINT}" if self.base_url else ""
        return map_errors(
            self._name,
            model=self.model,
            hint=hint,
            timeout_s=silence_s or self.timeout_s,
            timeout_setting=self.timeout_setting,
        )

    async def _open(
        self, request: dict[str, Any], silence_s: float
    ) -> AsyncStream[RawMessageStreamEvent]:
        with self._map_errors(silence_s):
            opened: AsyncStream[RawMessageStreamEvent] = await self._client.messages.create(
                stream=True, timeout=silence_s, **request
            )
        return opened

    async def _events(
        self, sdk_stream: AsyncStream[RawMessageStreamEvent], silence_s: float
    ) -> AsyncIterator[Any]:
        """The stream's events: the SDK's for an event stream; else what the server sent
        under another label, read here: an event stream all the same (event by event; its
        ``error`` events are the accumulator's to raise), one JSON document (raised as the
        error it stands for), or `not_a_stream` (an HTML page: a wrong base URL)."""
        response = sdk_stream.response
        with self._map_errors(silence_s):
            body = await read_non_stream_body(
                response, max_chars=self.max_response_chars, provider=self._name
            )
        if body is None:
            return sdk_stream
        if not isinstance(body, str):
            return body
        if json_content(response.headers):
            said = error_words(body)
            raise wrong_endpoint(
                said, response.request.url, provider=self._name, hint=BASE_URL_HINT
            ) or body_error(body, provider=self._name)
        raise not_a_stream(body, response, provider=self._name, hint=BASE_URL_HINT)

    async def _attempt(
        self,
        messages: tuple[Message, ...],
        tools: tuple[ToolSchema, ...],
        settings: ModelSettings | None,
    ) -> AsyncGenerator[ModelStreamPart, None]:
        request = build_request(messages, tools, settings, self._options)
        silence_s = settings.timeout_s if settings and settings.timeout_s else self.timeout_s
        sdk_stream = await self._open(request, silence_s)
        accumulator = EventAccumulator(max_chars=self.max_response_chars, provider=self._name)
        events: AsyncIterator[Any] = sdk_stream
        try:
            events = await self._events(sdk_stream, silence_s)
            while not accumulator.complete:
                event = await next_item(
                    events,
                    errors=lambda: self._map_errors(silence_s),
                    after_finish_s=self._after_finish_s(accumulator.stop_reason is not None),
                    provider=self._name,
                )
                if event is None:
                    break
                with self._map_errors():
                    deltas = accumulator.feed(_as_dict(event))
                for delta in deltas:
                    yield delta
        finally:
            await close_items(events)
            await sdk_stream.close()
        if not accumulator.complete and accumulator.stop_reason is None:
            if accumulator.events == 0:
                raise ModelResponseError(
                    f"{self._name}: the server answered without any stream events",
                    provider=self._name,
                )
            raise ModelConnectionError(
                f"{self._name}: the stream ended before the model finished", provider=self._name
            )
        final = accumulator.response(model=self.model)
        if not (accumulator.input_tokens or accumulator.output_tokens):
            # A compatible server that reports no usage: count, off the event loop.
            final = await self._counted(messages, final)
        yield final
