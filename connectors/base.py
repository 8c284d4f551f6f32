"""What every HTTP provider shares: naming, closing, and one resilient streaming path.

A subclass builds its vendor client in `__init__` (setting `_name`, `retry`, `breaker` and
`_client`), and implements `_attempt`: one request, streamed. Retries, the circuit breaker
and `generate` come from here.

What a server sends for a streamed request when it is not a labelled event stream (a JSON
document, an HTML page, an event stream under another label) is read by
`connectors.stream_bodies`, before the SDK starts on it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from abc import ABC, abstractmethod
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Callable,
    Iterator,
    Sequence,
)
from contextlib import AbstractContextManager, aclosing, contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Self, TypeVar
from urllib.parse import urlsplit, urlunsplit

import httpx2

from connectors.log_text import loggable
from connectors.resilience import CircuitBreaker, RetryPolicy, resilient_stream, wait_text
from gui_agent.exceptions import (
    ModelConnectionError,
    ModelError,
    ModelResponseError,
    ModelTimeout,
)
from gui_agent.llm import generate_from_stream
from schema import Message, ModelResponse, ModelSettings, ModelStreamPart, ToolSchema, Usage

if TYPE_CHECKING:
    from gui_agent.tokens import TokenCounter

logger = logging.getLogger(__name__)

T = TypeVar("T")

AFTER_FINISH_S = 5.0
"""How long the rest of a stream may take once the model said it finished (the usage chunk,
``[DONE]``, ``message_stop``): past that, or if the connection drops, the reply is complete."""


def shown_url(url: str) -> str:
    """`url` as it may be shown, logged and kept in a chat's errors: a password in it (a
    server behind basic auth, ``http://user:secret@host/v1``) replaced by ``***``."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:  # not a URL one could reach; nothing in it is taken as a password
        return url
    if password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))


_PASSWORD_IN_URL: Final = re.compile(r"(?<=://)([^/\s:@]*):[^/\s@]+@")

HTTP_LOGGERS: Final = ("httpx2", "httpx", "openai._base_client", "anthropic._base_client")
"""The loggers of the HTTP clients and vendor SDKs, which write each request's URL."""


class _HidePasswords(logging.Filter):
    """Writes a password in a URL of a log record as ``***`` (see `shown_url`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        hidden = _PASSWORD_IN_URL.sub(r"\1:***@", message)
        if hidden != message:
            record.msg, record.args = hidden, None
        return True


def hide_url_passwords() -> None:
    """Make the HTTP clients' own log lines (``HTTP Request: POST http://user:secret@…``)
    show a password in a server's URL as ``***``, as every line of ours does. Called by
    each provider that builds a client; adds its filter once."""
    for name in HTTP_LOGGERS:
        log = logging.getLogger(name)
        if not any(isinstance(each, _HidePasswords) for each in log.filters):
            log.addFilter(_HidePasswords())


DEFAULT_TIMEOUT_S: Final = 60.0
"""How long a vendor's server may stay silent unless told (`MODEL_TIMEOUT_ENV`)."""

TIMEOUT_ATTEMPTS: Final = 2
"""How many times the vendor providers' own retry policy asks a server that stayed silent
for the whole timeout (`RetryPolicy.max_timeout_attempts`)."""

MODEL_TIMEOUT_ENV: Final = "GUI_AGENT_MODEL_TIMEOUT"
"""The setting (environment or ``.env``) of how many seconds a model's server may stay
silent, for the models the registry builds (`connectors.registry.resolve_models`)."""


def timeout_error(provider: str, timeout_s: float | None, setting: str = "") -> ModelTimeout:
    """The error for a server that stayed silent for `timeout_s` (before the first byte or
    between two), saying how long: a model still loading, or a long conversation read on
    a slow machine, can take longer; `setting` (e.g. `MODEL_TIMEOUT_ENV`) is what gives it
    longer, named when given. Its `mid_reply` says it of a server that began the reply."""
    within = f"within {wait_text(timeout_s)}" if timeout_s else "in time"
    longer = f"; set {setting} to the seconds to wait" if setting else ""
    error = ModelTimeout(
        f"{provider}: no answer from the server {within} (a model that is still loading, or "
        f"a long conversation on a slow machine, can take longer{longer})",
        provider=provider,
    )
    gap = f"for {wait_text(timeout_s)}" if timeout_s else "for too long"
    error.mid_reply = (
        f"{provider}: the server stopped sending in the middle of the reply (nothing more "
        f"{gap}); what it had sent is kept{longer}"
    )
    return error


UNUSABLE_URL_ERRORS: Final = (httpx2.UnsupportedProtocol, httpx2.InvalidURL)
"""What the transport raises for a request URL no attempt can reach (no ``http://``, another
scheme, no host, a bad port): a setting to fix, not a failing server."""


def unusable_url(provider: str, error: BaseException) -> ModelError:
    """The error for a request URL that can never work (`UNUSABLE_URL_ERRORS`): a plain
    `ModelError`, so it is neither retried nor counted by the circuit breaker."""
    return ModelError(
        f"{provider}: the request cannot be sent, its URL cannot work "
        f"({type(error).__name__}: {error}); check the base URL: it must start with http:// "
        "or https:// and name a host",
        provider=provider,
    )


def connection_failed(provider: str, error: BaseException) -> ModelError:
    """The error for a vendor SDK's failed connection, naming what failed below it (a URL
    that can never work is no failed connection: `unusable_url`)."""
    cause = error.__cause__
    if isinstance(cause, UNUSABLE_URL_ERRORS):
        return unusable_url(provider, cause)
    return ModelConnectionError(
        f"{provider}: the connection to the server failed"
        + (f" ({type(cause).__name__}: {cause})" if cause else ""),
        provider=provider,
    )


def answer_mismatch(provider: str, detail: str) -> ModelResponseError:
    """The error for an answer the vendor SDK could not read as its API's."""
    return ModelResponseError(
        f"{provider}: the server's answer did not match the API: {detail}", provider=provider
    )


@contextmanager
def map_transport_errors(
    provider: str, *, timeout_s: float | None = None, timeout_setting: str = ""
) -> Iterator[None]:
    """Failures below the vendor SDK (transport, decoding, JSON), the same for every vendor.
    Each vendor's own `map_errors` wraps this and handles the SDK's exceptions. `timeout_s`
    is how long the server may stay silent, `timeout_setting` what sets it (both said in a
    timeout's message)."""
    try:
        yield
    except httpx2.TimeoutException as error:
        raise timeout_error(provider, timeout_s, timeout_setting) from error
    except httpx2.DecodingError as error:
        raise ModelResponseError(f"{provider}: undecodable response: {error}") from error
    except UNUSABLE_URL_ERRORS as error:
        raise unusable_url(provider, error) from error
    except httpx2.RequestError as error:
        raise ModelConnectionError(
            f"{provider}: the connection to the server failed ({type(error).__name__}: {error})",
            provider=provider,
        ) from error
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ModelResponseError(
            f"{provider}: the server sent something that is not valid JSON ({error})",
            provider=provider,
        ) from error


async def next_item(
    items: AsyncIterator[T],
    *,
    errors: Callable[[], AbstractContextManager[None]],
    after_finish_s: float | None,
    provider: str,
) -> T | None:
    """The next item of a vendor stream (SDK errors mapped by `errors`), or None at its end.

    Once the model finished (its finish or stop reason arrived; pass `after_finish_s`), what
    may still come is bookkeeping: a server that then stays silent for `after_finish_s` or
    drops the connection has still given the whole reply, so that ends the stream instead
    of failing it.
    """
    try:
        with errors():
            if after_finish_s is None:
                return await anext(items)
            async with asyncio.timeout(after_finish_s):
                return await anext(items)
    except StopAsyncIteration:
        return None
    except (TimeoutError, ModelTimeout, ModelConnectionError) as error:
        if after_finish_s is None:
            raise
        logger.info(
            "%s: the stream did not end cleanly after the reply (%s)",
            loggable(provider),
            loggable(error),
        )
        return None


def estimated_usage(
    counter: TokenCounter, messages: Sequence[Message], reply: ModelResponse
) -> Usage:
    """The usage of a reply whose server reported none (no usage chunk in the stream), counted
    with `counter` and marked `estimated`: the request's messages in, the reply's text,
    reasoning and tool calls out. Without it the reply would cost nothing, and a token budget
    (AutoChat's) would never be reached."""
    output = counter.count_text(reply.text) + counter.count_text(reply.reasoning or "")
    for call in reply.tool_calls:
        output += counter.count_text(call.name) + counter.count_text(call.arguments)
    return Usage(
        input_tokens=counter.count_messages(messages),
        output_tokens=output,
        requests=1,
        estimated=True,
    )


class StreamingProvider(ABC):
    """Base of the vendor providers; implements the `LLMProvider` protocol."""

    _name: str
    _client: Any
    model: str
    timeout_s: float
    retry: RetryPolicy
    breaker: CircuitBreaker
    after_finish_s: float = AFTER_FINISH_S
    """How long the end of a stream may take once the model finished (see `next_item`)."""
    timeout_setting: str = ""
    """What sets this provider's timeout, named when it fires (the registry's
    `MODEL_TIMEOUT_ENV`); "" for a provider built in code."""

    @property
    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._name!r})"

    def _after_finish_s(self, finished: bool) -> float | None:
        return self.after_finish_s if finished else None

    async def _counted(self, messages: Sequence[Message], reply: ModelResponse) -> ModelResponse:
        """`reply` with its usage counted here (`estimated_usage`), for a server that
        reported none; off the event loop (a tokenizer may load its files first)."""
        usage = await asyncio.to_thread(self._count_usage, messages, reply)
        return reply.model_copy(update={"usage": usage})

    def _count_usage(self, messages: Sequence[Message], reply: ModelResponse) -> Usage:
        from gui_agent.tokens import counter_for_model

        return estimated_usage(counter_for_model(self.model), messages, reply)

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._client.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] = (),
        settings: ModelSettings | None = None,
    ) -> ModelResponse:
        async with aclosing(self.stream(messages, tools=tools, settings=settings)) as parts:
            return await generate_from_stream(parts)

    def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSchema] = (),
        settings: ModelSettings | None = None,
    ) -> AsyncGenerator[ModelStreamPart, None]:
        """Stream one reply; retried (before any output) and guarded by the breaker. A
        server still loading its model is waited for as long as it may stay silent
        (`timeout_s`; the request's own timeout when its settings give one)."""
        history, tool_list = tuple(messages), tuple(tools)
        patience_s = settings.timeout_s if settings and settings.timeout_s else self.timeout_s
        return resilient_stream(
            lambda: self._attempt(history, tool_list, settings),
            provider=self._name,
            retry=self.retry,
            breaker=self.breaker,
            loading_patience_s=patience_s,
            patience_setting=self.timeout_setting,
        )

    @abstractmethod
    def _attempt(
        self,
        messages: tuple[Message, ...],
        tools: tuple[ToolSchema, ...],
        settings: ModelSettings | None,
    ) -> AsyncGenerator[ModelStreamPart, None]:
        """One request to the vendor, streamed to its final ModelResponse."""
