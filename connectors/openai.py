"""OpenAI and OpenAI-compatible servers as an `LLMProvider`.

Requests go out as streamed Chat Completions through the `openai` SDK's client
(`connectors.openai_client`, the SDK's own retries off): `connectors.resilience` retries
(before anything was streamed) and trips a circuit breaker. The request and stream mapping
lives in `connectors.openai_mapping` and `connectors.openai_stream`; the SDK's exceptions
become our errors in `connectors.openai_sdk_errors`. This module, `openai_client` and
`openai_sdk_errors` are the only ones importing `openai`.

A stream that ends without a finish reason is treated as cut off (`ModelConnectionError`):
the SDK hides whether ``[DONE]`` arrived, and a truncated reply must not look complete; so is
one whose finish reason is ``error`` (`ModelServerError`). Once
the finish reason came, a server that goes silent or drops the connection instead of ending
the stream has still sent the whole reply (see `connectors.base.next_item`).

A server that answers with a JSON document instead of the stream is understood: an error
object is raised as the error its ``code`` or ``type`` stands for, with the server's message
(`body_error`); a whole chat completion is taken as the reply. An event stream under another
label is read all the same, and an HTML page or other text is reported as such, with the
URL it came from and the advice to check the base URL (`connectors.stream_bodies`). So is
an answer whose words say the path is not served, whatever its status (LM Studio's 200
``{"error": "Unexpected endpoint or method. ..."}``, Ollama's 404 ``404 page not found``):
at once, not retried (`stream_bodies.wrong_endpoint`).

Which server the requests go to decides their dialect, by one check of the host of the base
URL the client uses (`openai_mapping.is_openai_service`; so ``OPENAI_BASE_URL`` counts as
much as ``base_url``), and so does whether a key is required: only the OpenAI
service itself (api.openai.com) gets ``max_completion_tokens``, system messages after the
history as they are, and user messages in a row; any other server gets ``max_tokens``, and
system messages folded into user turns and consecutive user turns merged
(`OpenAIProvider.system_anywhere`, `OpenAIProvider.consecutive_user_turns`).

What a server's refusal says it cannot take (tools, images, a temperature, call ids other
than Mistral's 9 characters, replies with neither text nor tool calls:
`connectors.openai_errors`) is left out or rewritten, and what
it says it lacks (a thinking model's reasoning with its tool calls) is added: the request
is sent again at once, and the provider remembers (`ServerDialect.learn` in
`connectors.openai_dialect`). So is a
request without tools whose history holds tool calls and results, to a server that refuses
that (a gateway in front of Anthropic or Bedrock: "The toolConfig field must be defined
when using toolUse and toolResult content blocks"): it goes again with them told in words
(`connectors.tool_history`), as every such request to it does from then on. So it
does when a model's chat template turns out to open ``<think>`` itself
(`OpenAIProvider.template_opens_think`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import AbstractContextManager
from typing import Any, overload

import httpx2
from openai import AsyncStream
from openai.types.chat import ChatCompletionChunk

from connectors.base import (
    DEFAULT_TIMEOUT_S,
    TIMEOUT_ATTEMPTS,
    StreamingProvider,
    next_item,
)
from connectors.log_text import loggable
from connectors.openai_client import KEY_ENV, NO_KEY, openai_client, provider_name
from connectors.openai_dialect import ServerDialect
from connectors.openai_errors import error_message
from connectors.openai_mapping import RequestOptions, build_request
from connectors.openai_sdk_errors import BASE_URL_HINT, body_error, map_errors
from connectors.openai_stream import StreamAccumulator, body_as_chunk
from connectors.resilience import CircuitBreaker, RetryPolicy, parse_retry_after
from connectors.stream_bodies import (
    ReadItems,
    close_items,
    json_content,
    not_a_stream,
    read_non_stream_body,
    wrong_endpoint,
)
from gui_agent.exceptions import (
    ConfigError,
    ModelConnectionError,
    ModelError,
    ModelResponseError,
    ModelServerError,
)
from schema import Message, ModelSettings, ModelStreamPart, ToolSchema

__all__ = [
    "BASE_URL_HINT",  # re-exported
    "ERROR_FINISH",
    "KEY_ENV",  # re-exported
    "NO_KEY",  # re-exported
    "OpenAIProvider",
    "body_error",  # re-exported
    "map_errors",  # re-exported
]

logger = logging.getLogger(__name__)

ERROR_FINISH = "error"
"""The finish reason of a reply that failed partway (Mistral, OpenRouter): raised as a
server error, not taken as a whole reply."""


def _as_dict(item: object) -> object:
    """An SDK chunk as the plain dict the server sent (anything else is left for the mapper)."""
    to_dict = getattr(item, "to_dict", None)
    return to_dict(warnings=False) if callable(to_dict) else item


class _DialectFlag:
    """A flag of the provider's `ServerDialect`, read and set as the provider's own
    attribute (its meaning: the field of the same name in `connectors.openai_dialect`)."""

    def __set_name__(self, owner: type[object], name: str) -> None:
        self._field = name

    @overload
    def __get__(self, provider: None, owner: type[object] | None = None) -> _DialectFlag: ...

    @overload
    def __get__(self, provider: OpenAIProvider, owner: type[object] | None = None) -> bool: ...

    def __get__(
        self, provider: OpenAIProvider | None, owner: type[object] | None = None
    ) -> _DialectFlag | bool:
        if provider is None:
            return self
        flag: bool = getattr(provider._dialect, self._field)
        return flag

    def __set__(self, provider: OpenAIProvider, value: bool) -> None:
        setattr(provider._dialect, self._field, value)


class OpenAIProvider(StreamingProvider):
    """A Chat Completions model: OpenAI itself, or any OpenAI-compatible server via `base_url`.

    ``max_retries`` sets the default retry policy (``max_retries + 1`` attempts, of which
    at most `TIMEOUT_ATTEMPTS` end in a timeout); pass ``retry`` to control backoff fully.
    ``timeout_s`` is how long the server may stay silent (before the first byte and between
    chunks); ``timeout_setting``, what sets it, is named when it fires. The OpenAI service
    needs a key (argument or the variable ``key_env``, ``OPENAI_API_KEY`` unless told); a
    compatible server gets a placeholder when none is set. A refused key names ``key_env``
    as the one to set.

    `system_anywhere` and `consecutive_user_turns` are true only for api.openai.com: other
    servers get a system message that follows the history (the planner's and supervisor's
    instructions) as a user turn, and user messages in a row as one, since many chat
    templates refuse a system message that is not first or two user turns in a row. Set
    them to true for a server known to take either.

    What the server has shown it refuses (or its model's chat template does) is kept in
    its `ServerDialect` and shown here as flags of the same names: `tools_refused`,
    `images_refused`, `temperature_refused`, `reasoning_back`, `nine_char_call_ids`,
    `empty_replies_refused`, `tool_history_refused` and `template_opens_think`.
    """

    system_anywhere = _DialectFlag()
    consecutive_user_turns = _DialectFlag()
    tools_refused = _DialectFlag()
    images_refused = _DialectFlag()
    temperature_refused = _DialectFlag()
    reasoning_back = _DialectFlag()
    nine_char_call_ids = _DialectFlag()
    empty_replies_refused = _DialectFlag()
    tool_history_refused = _DialectFlag()
    template_opens_think = _DialectFlag()

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_retries: int = 3,
        name_prefix: str = "openai",
        retry: RetryPolicy | None = None,
        breaker: CircuitBreaker | None = None,
        max_response_chars: int = 2_000_000,
        timeout_setting: str = "",
        key_env: str = KEY_ENV,
    ) -> None:
        if not model:
            raise ConfigError("OpenAIProvider needs a model name, e.g. 'gpt-4o-mini'")
        self._client, openai_service = openai_client(
            api_key=api_key, base_url=base_url, timeout_s=timeout_s, key_env=key_env
        )
        self._dialect = ServerDialect.for_server(openai_service=openai_service)
        self._hint = "" if openai_service else f"; {BASE_URL_HINT}"
        self.model = model
        self.base_url = base_url
        self._name = provider_name(model, base_url=base_url, name_prefix=name_prefix)
        self.retry = (
            retry
            if retry is not None
            else RetryPolicy(max_attempts=max_retries + 1, max_timeout_attempts=TIMEOUT_ATTEMPTS)
        )
        self.breaker = breaker if breaker is not None else CircuitBreaker()
        self.timeout_s = timeout_s
        self.timeout_setting = timeout_setting
        self.max_response_chars = max_response_chars
        self._temperature = temperature
        self._max_tokens = max_tokens
        self.key_env = key_env

    def _options(self) -> RequestOptions:
        return self._dialect.options(
            self.model, temperature=self._temperature, max_tokens=self._max_tokens
        )

    def _map_errors(self, silence_s: float | None = None) -> AbstractContextManager[None]:
        """`map_errors` for this provider; `silence_s`: the request's timeout, if not ours."""
        return map_errors(
            self._name,
            model=self.model,
            hint=self._hint,
            key_env=self.key_env,
            timeout_s=silence_s or self.timeout_s,
            timeout_setting=self.timeout_setting,
        )

    async def _chunks(
        self, sdk_stream: AsyncStream[ChatCompletionChunk], silence_s: float
    ) -> AsyncIterator[Any]:
        """The stream's chunks: the SDK's for an event stream; else what the server sent
        under another label, read here: an event stream all the same (chunk by chunk), one
        JSON document (an error object, or a whole reply, as one chunk), or `not_a_stream`
        (an HTML page: a wrong base URL). `_attempt` raises the error objects among them."""
        response = sdk_stream.response
        with self._map_errors(silence_s):
            body = await read_non_stream_body(
                response, max_chars=self.max_response_chars, provider=self._name
            )
        if body is None:
            return sdk_stream
        if not isinstance(body, str):
            return body
        if not json_content(response.headers):
            raise not_a_stream(body, response, provider=self._name, hint=BASE_URL_HINT)
        return ReadItems([body_as_chunk(body, provider=self._name)])

    def _sent_error(self, chunk: object, response: httpx2.Response) -> ModelError | None:
        """The error an error object the server sent in place of a chunk stands for (the SDK
        raises those of an event stream it reads itself)."""
        if not isinstance(chunk, Mapping) or not chunk.get("error"):
            return None
        detail = error_message(chunk["error"])
        if wrong := wrong_endpoint(
            detail, response.request.url, provider=self._name, hint=BASE_URL_HINT
        ):
            return wrong
        return body_error(
            chunk["error"],
            provider=self._name,
            model=self.model,
            retry_after=parse_retry_after(response.headers),
            hint=self._hint,
            key_env=self.key_env,
        )

    async def _create(
        self, body: dict[str, Any], silence_s: float
    ) -> AsyncStream[ChatCompletionChunk]:
        create = self._client.chat.completions.create
        with self._map_errors(silence_s):
            opened: AsyncStream[ChatCompletionChunk] = await create(
                stream=True, timeout=silence_s, **body
            )
        return opened

    async def _open(
        self, request: dict[str, Any], silence_s: float, history: tuple[Message, ...]
    ) -> AsyncStream[ChatCompletionChunk]:
        """Open the stream. A server that refuses what some servers lack is asked again,
        at once, without it, and never sent it again (`ServerDialect.learn`); one that refuses
        ``stream_options`` on a 400 or 422 likewise (if that works, usage is no longer
        asked for)."""
        body = {k: v for k, v in request.items() if k != "stream"}
        self._dialect.as_learned(body)
        dropped_usage = False
        while True:
            try:
                opened = await self._create(body, silence_s)
            except ModelError as error:
                if change := self._dialect.learn(body, str(error), history, model=self.model):
                    logger.warning("%s: %s (%s)", loggable(self._name), change, loggable(error))
                    continue
                if "stream_options" in body and error.status in (400, 422):
                    body.pop("stream_options")
                    dropped_usage = True
                    continue
                raise
            if dropped_usage:
                # Some compatible servers reject `stream_options`: stop sending it (usage is
                # then not streamed, and counted here: see `_counted`).
                logger.info(
                    "%s: the server refused stream_options; streaming without it",
                    loggable(self._name),
                )
                self._dialect.stream_usage = False
            return opened

    async def _attempt(
        self,
        messages: tuple[Message, ...],
        tools: tuple[ToolSchema, ...],
        settings: ModelSettings | None,
    ) -> AsyncGenerator[ModelStreamPart, None]:
        wire = self._dialect.history(messages, with_tools=bool(tools) and not self.tools_refused)
        request = build_request(wire, tools, settings, self._options())
        silence_s = settings.timeout_s if settings and settings.timeout_s else self.timeout_s
        sdk_stream = await self._open(request, silence_s, messages)
        accumulator = StreamAccumulator(
            max_chars=self.max_response_chars,
            provider=self._name,
            think_opened=self.template_opens_think,
        )
        chunks: AsyncIterator[Any] = sdk_stream
        try:
            chunks = await self._chunks(sdk_stream, silence_s)
            while True:
                chunk = await next_item(
                    chunks,
                    errors=lambda: self._map_errors(silence_s),
                    after_finish_s=self._after_finish_s(accumulator.finish_reason is not None),
                    provider=self._name,
                )
                if chunk is None:
                    break
                if error := self._sent_error(chunk, sdk_stream.response):
                    raise error
                with self._map_errors():
                    deltas = accumulator.feed(_as_dict(chunk))
                for delta in deltas:
                    yield delta
        finally:
            await close_items(chunks)
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
        if accumulator.finish_reason == ERROR_FINISH:
            # Mistral's and OpenRouter's word for a reply that failed partway: not complete.
            raise ModelServerError(
                f"{self._name}: the server ended the reply with an error (finish reason "
                f"{ERROR_FINISH!r}); what came before it may be incomplete",
                provider=self._name,
            )
        for delta in accumulator.finish():
            yield delta
        final = accumulator.response(model=self.model)
        if accumulator.template_opened_think is not None:
            if accumulator.template_opened_think != self.template_opens_think:
                logger.info(
                    "%s: the chat template %s the model's <think> itself",
                    loggable(self._name),
                    "opens" if accumulator.template_opened_think else "no longer opens",
                )
            self.template_opens_think = accumulator.template_opened_think
        if accumulator.usage is None or not accumulator.usage.total_tokens:
            # The server sent none, or only zeros (a placeholder some servers put in every
            # chunk): count, off the event loop, as for Claude-compatible servers.
            final = await self._counted(messages, final)
        yield final
