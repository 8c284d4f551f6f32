"""OpenAI and OpenAI-compatible servers as an `LLMProvider` (the only module importing `openai`).

Requests go out as streamed Chat Completions through `openai.AsyncOpenAI` with the SDK's own
retries off: `connectors.resilience` retries (before anything was streamed) and trips a
circuit breaker. The request and stream mapping lives in `connectors.openai_mapping`.

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
is sent again at once, and the provider remembers (`OpenAIProvider._learn`). So is a
request without tools whose history holds tool calls and results, to a server that refuses
that (a gateway in front of Anthropic or Bedrock: "The toolConfig field must be defined
when using toolUse and toolResult content blocks"): it goes again with them told in words
(`connectors.tool_history`), as every such request to it does from then on. So it
does when a model's chat template turns out to open ``<think>`` itself
(`OpenAIProvider.template_opens_think`).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import httpx2
import openai
from openai import AsyncStream
from openai.types.chat import ChatCompletionChunk

from connectors.base import (
    DEFAULT_TIMEOUT_S,
    TIMEOUT_ATTEMPTS,
    StreamingProvider,
    map_transport_errors,
    next_item,
    shown_url,
    timeout_error,
)
from connectors.openai_errors import (
    error_codes,
    error_message,
    error_status,
    refuses_call_ids,
    refuses_empty_reply,
    refuses_images,
    refuses_missing_reasoning,
    refuses_temperature,
    refuses_tools,
    with_nine_char_ids,
    without_images,
)
from connectors.openai_mapping import (
    MaxTokensField,
    RequestOptions,
    StreamAccumulator,
    body_as_chunk,
    build_request,
    is_openai_service,
)
from connectors.resilience import (
    CircuitBreaker,
    RetryPolicy,
    error_for_status,
    parse_retry_after,
    shorten,
)
from connectors.stream_bodies import (
    ReadItems,
    close_items,
    html_page,
    json_content,
    not_a_stream,
    read_non_stream_body,
    wrong_endpoint,
    wrong_endpoint_status,
)
from connectors.tool_history import has_tool_history, tool_history_as_text, tool_refusal
from gui_agent.exceptions import (
    ConfigError,
    ModelConnectionError,
    ModelError,
    ModelRateLimited,
    ModelResponseError,
    ModelServerError,
)
from schema import Message, ModelSettings, ModelStreamPart, ToolSchema

logger = logging.getLogger(__name__)

KEY_ENV = "OPENAI_API_KEY"
NO_KEY = "no-key-needed"
"""Sent to OpenAI-compatible servers when no key is configured (most local ones ignore it)."""

BASE_URL_HINT = "check the base URL (for OpenAI-compatible servers it usually ends in /v1)"
ERROR_FINISH = "error"
"""The finish reason of a reply that failed partway (Mistral, OpenRouter): raised as a
server error, not taken as a whole reply."""


def _server_detail(error: openai.APIError) -> str:
    """What the server said: its error message, or its body (a web page by its title)."""
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
        if isinstance(body.get("detail"), str):  # FastAPI's own answers (vLLM: "Not Found")
            return str(body["detail"])
        return json.dumps(body)[:500]
    if isinstance(body, str):
        response = getattr(error, "response", None)
        headers = response.headers if isinstance(response, httpx2.Response) else {}
        return html_page(body, headers) or body
    return error.message


@contextmanager
def map_errors(
    provider: str,
    *,
    model: str = "",
    hint: str = "",
    key_env: str = KEY_ENV,
    timeout_s: float | None = None,
    timeout_setting: str = "",
) -> Iterator[None]:
    """Translate `openai` SDK (and transport) exceptions into our `ModelError` tree;
    `key_env` is the variable a refused key is set in, `timeout_s` how long the server may
    stay silent."""
    try:
        with map_transport_errors(provider, timeout_s=timeout_s, timeout_setting=timeout_setting):
            yield
    except ModelError:
        raise
    except openai.APIStatusError as error:
        detail = _server_detail(error)
        wrong = wrong_endpoint_status(
            detail, error.body, error.response, provider=provider, hint=BASE_URL_HINT
        )
        if wrong is not None:
            raise wrong from error
        raise error_for_status(
            error.status_code,
            detail,
            provider=provider,
            model=model,
            key_env=key_env,
            retry_after=parse_retry_after(error.response.headers),
            hint=hint,
            codes=(error.code, error.type),
        ) from error
    except openai.APITimeoutError as error:
        raise timeout_error(provider, timeout_s, timeout_setting) from error
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
        # An error object inside an otherwise successful stream: the error of the HTTP
        # status it names (`error_status`: a 400 is not retried, a 401 names the key).
        detail = _server_detail(error)
        if wrong := wrong_endpoint(
            detail, error.request.url, provider=provider, hint=BASE_URL_HINT
        ):
            raise wrong from error
        status = error_status(error.body)
        if status is not None:  # what it stands for, as when it comes under another label
            raise error_for_status(
                status,
                detail,
                provider=provider,
                model=model,
                key_env=key_env,
                hint=hint,
                codes=(error.code, error.type),
            ) from error
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
    key_env: str = KEY_ENV,
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
        key_env=key_env,
        retry_after=retry_after,
        hint=hint,
        codes=error_codes(error),
    )


def _as_dict(item: object) -> object:
    """An SDK chunk as the plain dict the server sent (anything else is left for the mapper)."""
    to_dict = getattr(item, "to_dict", None)
    return to_dict(warnings=False) if callable(to_dict) else item


def _without_tools(body: dict[str, Any]) -> None:
    body.pop("tools", None)
    body.pop("tool_choice", None)


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
    """

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
        key = api_key or os.environ.get(key_env)
        self._client = openai.AsyncOpenAI(
            api_key=key or NO_KEY, base_url=base_url, timeout=timeout_s, max_retries=0
        )
        openai_service = is_openai_service(str(self._client.base_url))
        if not key and openai_service:
            raise ConfigError(
                f"no OpenAI API key: set {key_env}, or pass base_url for a local "
                "OpenAI-compatible server"
            )
        self.system_anywhere = openai_service
        self.consecutive_user_turns = openai_service
        self._hint = "" if openai_service else f"; {BASE_URL_HINT}"
        self.model = model
        self.base_url = base_url
        if base_url is None:
            self._name = f"{name_prefix}:{model}"
        else:
            prefix = "openai-compatible" if name_prefix == "openai" else name_prefix
            self._name = f"{prefix}:{shown_url(base_url)}#{model}"
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
        self._max_tokens_field: MaxTokensField = (
            "max_completion_tokens" if openai_service else "max_tokens"
        )
        self._stream_usage = True
        self.key_env = key_env
        self.tools_refused = False
        """True once the server said the model cannot take tools (Ollama's "does not support
        tools", llama.cpp without --jinja): its requests go without them from then on."""
        self.images_refused = False
        """True once the server said the model cannot take images (llama.cpp without
        --mmproj, a text model): its requests carry a note in their place from then on
        (a history holding one image would otherwise be refused at every message)."""
        self.temperature_refused = False
        """True once the server said the model takes no temperature but its default (o3,
        o4-mini, gpt-5): the session's temperature is not sent to it from then on."""
        self.reasoning_back = False
        """True once the server said the history's tool-call messages must carry their
        reasoning (Kimi, DeepSeek and GLM thinking models in a tool loop): they carry it
        as ``reasoning_content`` from then on."""
        self.nine_char_call_ids = False
        """True once the server said it takes only call ids of 9 letters or digits (Mistral's
        API, vLLM serving a Mistral model): every call id goes rewritten to fit from then
        on (`openai_errors.with_nine_char_ids`; the history keeps them as they were)."""
        self.empty_replies_refused = False
        """True once the server refused an assistant message with neither text nor tool
        calls (Mistral's API, vLLM serving a Mistral model; the history holds one after a
        reply stopped before its first word, or a thinking model's reply that ran out of
        tokens while thinking): such messages are left out from then on."""
        self.tool_history_refused = False
        """True once the server refused a request without tools whose history held tool
        calls and results (a gateway in front of Anthropic or Bedrock): such requests go
        with them told in words from then on (`connectors.tool_history`)."""
        self.template_opens_think = False
        """True while the model's replies show that its chat template opens ``<think>``
        itself (content that starts inside the reasoning and ends it with ``</think>``):
        its next replies stream their reasoning as reasoning from the first word. A reply
        with text and no ``</think>`` sets it back."""

    def _options(self) -> RequestOptions:
        return RequestOptions(
            model=self.model,
            temperature=self._temperature,
            max_tokens=self._max_tokens,
            max_tokens_field=self._max_tokens_field,
            stream_usage=self._stream_usage,
            system_anywhere=self.system_anywhere,
            consecutive_user_turns=self.consecutive_user_turns,
            reasoning_back=self.reasoning_back,
            empty_replies=not self.empty_replies_refused,
        )

    def _history(self, history: tuple[Message, ...], *, with_tools: bool) -> tuple[Message, ...]:
        """`history` as this server takes it: for a request without tools, to a server that
        refused tool calls and results in one, with them told in words."""
        if with_tools or not self.tool_history_refused:
            return history
        return tool_history_as_text(history)

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
        at once, without it, and never sent it again (`_learn`); one that refuses
        ``stream_options`` on a 400 or 422 likewise (if that works, usage is no longer
        asked for)."""
        body = {k: v for k, v in request.items() if k != "stream"}
        self._as_learned(body)
        dropped_usage = False
        while True:
            try:
                opened = await self._create(body, silence_s)
            except ModelError as error:
                if change := self._learn(body, str(error), history):
                    logger.warning("%s: %s (%s)", self._name, change, error)
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
                    "%s: the server refused stream_options; streaming without it", self._name
                )
                self._stream_usage = False
            return opened

    def _as_learned(self, body: dict[str, Any]) -> None:
        """`body` changed as this server's refusals taught (see `_learn`)."""
        if self.tools_refused:
            _without_tools(body)
        if self.images_refused:
            body["messages"] = without_images(body["messages"]) or body["messages"]
        if self.temperature_refused:
            body.pop("temperature", None)
        if self.nine_char_call_ids:
            body["messages"] = with_nine_char_ids(body["messages"])

    def _learn(self, body: dict[str, Any], said: str, history: tuple[Message, ...]) -> str:
        """Change `body` as a refusal in the words `said` asks, and remember it for every
        later request; what was changed, or "" when `said` refuses nothing of the kinds a
        server may lack: tools, when its words say the model or server cannot take them
        (`tools_refused`); images, each replaced by a note saying so (`images_refused`); a
        temperature, when the model takes only its default (`temperature_refused`:
        OpenAI's reasoning models); call ids other than 9 letters or digits, rewritten
        (`nine_char_call_ids`: Mistral's validator); the reasoning of the `history`'s
        tool-call messages, when a thinking model wants it back (`reasoning_back`); the
        `history`'s tool calls and results, told in words, when the request has no tools
        and the server takes none without them (`tool_history_refused`); the `history`'s
        empty replies, when the server refuses them (`empty_replies_refused`)."""
        if "tools" in body and refuses_tools(said):
            _without_tools(body)
            self.tools_refused = True
            return "the server refused tools; chatting without them"
        if refuses_images(said) and (textual := without_images(body["messages"])):
            body["messages"] = textual
            self.images_refused = True
            return "the model cannot take images; sending a note in their place"
        if "temperature" in body and refuses_temperature(said):
            body.pop("temperature")
            self.temperature_refused = True
            return "the model takes no temperature; asking without it"
        if not self.nine_char_call_ids and refuses_call_ids(said):
            body["messages"] = with_nine_char_ids(body["messages"])
            self.nine_char_call_ids = True
            return "the server takes only call ids of 9 letters or digits; sending them so"
        if not self.reasoning_back and refuses_missing_reasoning(said):
            self.reasoning_back = True
            self._rebuild_messages(body, history)
            return "the model wants its reasoning back with its tool calls; sending it"
        if not self.empty_replies_refused and refuses_empty_reply(said):
            self.empty_replies_refused = True
            self._rebuild_messages(body, history)
            return "the server takes no empty replies in the history; leaving them out"
        if (
            "tools" not in body
            and not self.tool_history_refused
            and tool_refusal(said)
            and has_tool_history(history)
        ):
            self.tool_history_refused = True
            self._rebuild_messages(body, history)
            return "the server takes no tool calls in a request without tools; telling them"
        return ""

    def _rebuild_messages(self, body: dict[str, Any], history: tuple[Message, ...]) -> None:
        """`body`'s messages made again from `history`, as this server now takes them."""
        wire = self._history(history, with_tools="tools" in body)
        body["messages"] = build_request(wire, (), None, self._options())["messages"]
        self._as_learned(body)

    async def _attempt(
        self,
        messages: tuple[Message, ...],
        tools: tuple[ToolSchema, ...],
        settings: ModelSettings | None,
    ) -> AsyncGenerator[ModelStreamPart, None]:
        wire = self._history(messages, with_tools=bool(tools) and not self.tools_refused)
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
                    self._name,
                    "opens" if accumulator.template_opened_think else "no longer opens",
                )
            self.template_opens_think = accumulator.template_opened_think
        if accumulator.usage is None or not accumulator.usage.total_tokens:
            # The server sent none, or only zeros (a placeholder some servers put in every
            # chunk): count, off the event loop, as for Claude-compatible servers.
            final = await self._counted(messages, final)
        yield final
