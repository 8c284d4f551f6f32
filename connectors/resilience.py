"""Retries, a circuit breaker, and the vendor-neutral half of error translation.

Every vendor connector drives its requests through `resilient_stream`:

    resilient_stream(attempt, provider=..., retry=RetryPolicy(), breaker=CircuitBreaker())
      ├── breaker.before_call()        raises CircuitOpen while the breaker is open
      ├── attempt()                    one HTTP request, streamed, errors already ModelErrors
      ├── on a retryable ModelError    back off (Retry-After honoured, capped) and try again,
      │                                but only while nothing has been streamed to the caller;
      │                                a ModelRetryNotice says so before each wait, and the
      │                                error after the last attempt says how long it tried
      ├── on "still loading the model" keep asking, backing off up to `LOADING_MAX_DELAY_S`,
      │                                for up to `loading_patience_s` (the model timeout)
      └── success / failure            reported to the breaker

The vendor modules translate their SDK's exceptions with a small `map_errors` context manager
that calls `error_for_status` here, so 401/404/429/5xx mean the same thing for every vendor.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping
from contextlib import aclosing
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from enum import StrEnum

from connectors.log_text import loggable
from gui_agent.exceptions import (
    CircuitOpen,
    ConfigError,
    ModelAuthError,
    ModelConnectionError,
    ModelError,
    ModelNotFound,
    ModelRateLimited,
    ModelResponseError,
    ModelServerError,
    ModelTimeout,
)
from gui_agent.retry_words import SAID_BY_NOTICE
from schema import ModelResponse, ModelRetryNotice, ModelStreamPart

logger = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]
"""How to wait between attempts; tests inject one that records the delay and returns."""

MAX_SERVER_MESSAGE_CHARS = 500
"""How much of a server's error text is repeated in our error messages."""

STILL_LOADING = "the server is still loading the model"
"""What the error of a server that answers while it loads its weights says (llama.cpp's
503 ``{"error": {"message": "Loading model", ...}}``); `still_loading` looks for it."""

LOADING_WORDS = ("loading model", "is currently loading")
"""A 503's words for a model being loaded: llama.cpp's server ("Loading model"), Hugging
Face's inference servers ("Model ... is currently loading")."""

LOADING_MAX_DELAY_S = 5.0
"""The longest wait between two requests to a server that is loading its model."""

QUOTA_CODES = frozenset({"insufficient_quota"})
"""Error codes of a 429 that is no rate limit but an account out of credit (OpenAI's
``insufficient_quota``): waiting does not help, so it is not retried."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Exponential backoff with jitter for transient model failures.

    Retried: rate limits, 5xx, timeouts, connection failures (`ModelError.retryable`).
    Never retried: auth, unknown model, bad request, garbage. A `Retry-After` the server sent
    is waited exactly; one longer than `max_delay_s` is not waited at all: the error surfaces
    at once (with its `retry_after`) instead of blocking the turn. `max_attempts` counts the
    first try.

    `max_timeout_attempts` caps the attempts that end in a timeout (a server silent for the
    whole timeout), None leaving them to `max_attempts`: the vendor providers' own policy
    asks a silent server once more, not three times more, since the person hears nothing
    meanwhile and a slow local server starts the long prompt over each time.
    """

    max_attempts: int = 4
    base_delay_s: float = 0.5
    max_delay_s: float = 20.0
    jitter: bool = True
    sleep: Sleep = field(default=asyncio.sleep, compare=False, repr=False)
    rng: random.Random | None = field(default=None, compare=False, repr=False)
    max_timeout_attempts: int | None = None

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ConfigError("RetryPolicy.max_attempts must be at least 1")
        if self.max_timeout_attempts is not None and self.max_timeout_attempts < 1:
            raise ConfigError("RetryPolicy.max_timeout_attempts must be at least 1")
        if self.base_delay_s < 0 or self.max_delay_s < 0:
            raise ConfigError("RetryPolicy delays must not be negative")

    def should_retry(self, error: BaseException, attempt: int) -> bool:
        """Whether to try again after `attempt` (1-based) failed with `error`."""
        if attempt >= self.max_attempts:
            return False
        if not isinstance(error, ModelError) or not error.retryable:
            return False
        if isinstance(error, ModelTimeout) and self.max_timeout_attempts is not None:
            return attempt < self.max_timeout_attempts
        if error.retry_after is not None:
            return error.retry_after <= self.max_delay_s
        return True

    def attempts_for(self, error: BaseException) -> int:
        """The most attempts a request failing with `error` gets (`max_timeout_attempts`
        for a timeout, when it caps them), as the person is told (`ModelRetryNotice`)."""
        cap = self.max_timeout_attempts
        if cap is not None and isinstance(error, ModelTimeout):
            return min(cap, self.max_attempts)
        return self.max_attempts

    def loading_delay_s(self, error: BaseException, attempt: int) -> float:
        """Seconds to wait after the `attempt`-th (1-based) answer that the server is still
        loading the model: the ordinary backoff, at most `LOADING_MAX_DELAY_S`."""
        return min(self.delay_s(error, attempt), LOADING_MAX_DELAY_S)

    def delay_s(self, error: BaseException, attempt: int) -> float:
        """Seconds to wait after `attempt` (1-based) failed with `error`."""
        if isinstance(error, ModelError) and error.retry_after is not None:
            return max(0.0, min(error.retry_after, self.max_delay_s))
        backoff = min(self.max_delay_s, self.base_delay_s * 2.0 ** (attempt - 1))
        if self.jitter:
            uniform = self.rng.uniform if self.rng is not None else random.uniform
            backoff = uniform(backoff / 2.0, backoff)
        return backoff


class BreakerState(StrEnum):
    """What a circuit breaker lets through: everything, nothing, or one trial request."""

    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class CircuitBreaker:
    """Stops calling a failing model for a while.

    Opens after `failure_threshold` consecutive failures; while open every call raises
    `CircuitOpen` without touching the network. After `reset_after_s` one trial call goes
    through (half-open): success closes the breaker, failure opens it for another period.
    Use one breaker per provider instance. Not thread-safe; meant for one event loop.

    `resilient_stream` records one failure per request, its retries included: a request
    that fails is already tried `RetryPolicy.max_attempts` times, and the breaker is shared
    by every chat on the provider, so counting attempts let one message that the server
    answers with errors pause every chat (every person's, in a team) at its second try.
    """

    def __init__(
        self,
        failure_threshold: int = 5,
        reset_after_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if failure_threshold < 1:
            raise ConfigError("CircuitBreaker.failure_threshold must be at least 1")
        self.failure_threshold = failure_threshold
        self.reset_after_s = reset_after_s
        self._clock = clock
        self._failures = 0
        self._opened_at: float | None = None
        self._trial_running = False
        self._last_failure = ""

    @property
    def state(self) -> BreakerState:
        if self._opened_at is None:
            return BreakerState.CLOSED
        if self._trial_running or self.retry_in_s() <= 0:
            return BreakerState.HALF_OPEN
        return BreakerState.OPEN

    @property
    def consecutive_failures(self) -> int:
        return self._failures

    @property
    def trial_running(self) -> bool:
        """The half-open trial call is under way (it gets one attempt: no retry)."""
        return self._trial_running

    def retry_in_s(self) -> float:
        """Seconds until a trial call is allowed (0 when closed or already due)."""
        if self._opened_at is None:
            return 0.0
        return max(0.0, self._opened_at + self.reset_after_s - self._clock())

    def before_call(self, provider: str = "") -> None:
        """Let a call through, or raise `CircuitOpen` saying when calls resume."""
        state = self.state
        if state is BreakerState.CLOSED:
            return
        if state is BreakerState.HALF_OPEN and not self._trial_running:
            self._trial_running = True
            logger.info(
                "%s: circuit half-open, sending one trial request", loggable(provider or "model")
            )
            return
        raise self.open_error(provider)

    def open_error(self, provider: str = "") -> CircuitOpen:
        """The error for a call refused while open, saying when calls resume."""
        prefix = f"{provider}: " if provider else ""
        if self._trial_running:
            detail = "a trial request is under way; try again in a moment"
        else:
            detail = f"will try again in {math.ceil(self.retry_in_s())} s"
        times = "a request" if self._failures == 1 else f"{self._failures} requests in a row"
        last = self._last_failure
        if prefix and last.startswith(prefix):
            last = last[len(prefix) :]
        why = f" (the last failure: {shorten(last)})" if last else ""
        return CircuitOpen(
            f"{prefix}the model failed {times}, so calls are paused; {detail}{why}",
            provider=provider,
        )

    def record_success(self) -> None:
        if self._opened_at is not None:
            logger.info("circuit closed again after a successful call")
        self._failures = 0
        self._opened_at = None
        self._trial_running = False

    def record_failure(self, error: BaseException | None = None) -> None:
        """Count a failure; `error`, when given, is named by `open_error` (why calls stop)."""
        self._failures += 1
        if error is not None:
            self._last_failure = str(error)
        if self._trial_running or self._failures >= self.failure_threshold:
            if self._opened_at is None or self._trial_running:
                logger.warning(
                    "circuit open after %d consecutive failures; pausing %.0f s",
                    self._failures,
                    self.reset_after_s,
                )
            self._opened_at = self._clock()
        self._trial_running = False

    def record_abandoned(self) -> None:
        """The call ended without a verdict (cancelled): free the trial slot, change nothing."""
        self._trial_running = False


def counts_as_failure(error: ModelError) -> bool:
    """Whether an error says the server is unhealthy (as opposed to: we asked wrongly)."""
    if isinstance(error, CircuitOpen):
        return False
    return error.retryable or isinstance(error, ModelResponseError)


def still_loading(error: BaseException) -> bool:
    """Whether `error` says the server is still loading the model (see `error_for_status`)."""
    return (
        isinstance(error, ModelServerError) and error.status == 503 and STILL_LOADING in str(error)
    )


def _gave_up_loading(error: ModelError, waited_s: float, setting: str) -> ModelServerError:
    longer = f"; set {setting} to the seconds to wait" if setting else ""
    return ModelServerError(
        f"{error}; waited {wait_text(waited_s)} for it to finish loading (a large model can "
        f"take longer{longer})",
        status=error.status,
        provider=error.provider,
        retry_after=error.retry_after,
    )


async def resilient_stream(
    attempt: Callable[[], AsyncGenerator[ModelStreamPart, None]],
    *,
    provider: str,
    retry: RetryPolicy,
    breaker: CircuitBreaker,
    loading_patience_s: float | None = None,
    patience_setting: str = "",
) -> AsyncGenerator[ModelStreamPart, None]:
    """Run `attempt` until it succeeds, retrying only while nothing has been streamed yet.

    Once a text or reasoning delta reached the caller, a failure is raised as is: retrying
    would show the reply twice. Closing this generator closes the running attempt.

    Before each wait it yields a `ModelRetryNotice` (the attempt about to be made, the wait,
    `retry_reason`), so the person sees why the reply has not begun (the retry's log record
    is marked `SAID_BY_NOTICE`, for a front end that shows both); the error raised after the
    last of several attempts says how many there were, over how long.

    A server that answers that it is still loading the model (`still_loading`) is asked
    again, backing off (`RetryPolicy.loading_delay_s`), until the waits add up to
    `loading_patience_s` (None, or a policy of one attempt: retried as any server error):
    those answers count neither as attempts nor as failures of the breaker. Past that,
    the error says how long it waited and names `patience_setting`, the setting that gives
    it longer.
    """
    patience_s = loading_patience_s if retry.max_attempts > 1 else None
    number = 0
    loading_answers = 0
    loading_waited_s = 0.0
    waited_s = 0.0
    started = time.monotonic()
    while True:
        number += 1
        breaker.before_call(provider)
        emitted = False
        try:
            async with aclosing(attempt()) as parts:
                async for part in parts:
                    if not isinstance(part, ModelResponse):
                        emitted = True
                    yield part
        except ModelError as error:
            if patience_s is not None and not emitted and still_loading(error):
                if loading_waited_s >= patience_s:
                    gave_up = _gave_up_loading(error, loading_waited_s, patience_setting)
                    breaker.record_failure(gave_up)
                    raise gave_up from error
                breaker.record_abandoned()  # no verdict: the server is getting ready
                loading_answers += 1
                delay = min(
                    retry.loading_delay_s(error, loading_answers),
                    patience_s - loading_waited_s,
                )
                loading_waited_s += delay
                number -= 1  # (not an attempt: the same one is made again)
                logger.info(
                    "%s; asking again in %.2f s",
                    loggable(error),
                    delay,
                    extra={SAID_BY_NOTICE: True},  # (the notice below says it too)
                )
            else:
                # The breaker hears one verdict per request: a failure when it gives up (the
                # retries are this request's own), or that the server answered sanely.
                gives_up = emitted or breaker.trial_running or not retry.should_retry(error, number)
                if gives_up and not emitted and number > 1:
                    spent_s = max(time.monotonic() - started, waited_s + loading_waited_s)
                    _say_how_long(error, number, spent_s)
                if not counts_as_failure(error):
                    breaker.record_success()
                elif gives_up:
                    breaker.record_failure(error)
                if gives_up and emitted and isinstance(error, ModelTimeout) and error.mid_reply:
                    # It did answer: it stopped sending (not a model still loading).
                    stalled = ModelTimeout(error.mid_reply, provider=error.provider)
                    raise stalled from error
                if gives_up:
                    raise
                if breaker.state is BreakerState.OPEN:  # other requests opened it meanwhile
                    raise breaker.open_error(provider) from error
                delay = retry.delay_s(error, number)
                waited_s += delay
                logger.warning(
                    "%s; retrying in %.2f s (attempt %d of %d)",
                    loggable(error),
                    delay,
                    number + 1,
                    retry.max_attempts,
                    extra={SAID_BY_NOTICE: True},
                )
            notice = ModelRetryNotice(
                attempt=number + 1,
                max_attempts=retry.attempts_for(error),
                wait_s=delay,
                reason=retry_reason(error, loading_patience_s),
            )
        except BaseException:
            breaker.record_abandoned()
            raise
        else:
            breaker.record_success()
            return
        # Said before the wait, outside the handler (a Stop during it is not this error's).
        yield notice
        await retry.sleep(delay)


def retry_reason(error: ModelError, timeout_s: float | None = None) -> str:
    """Why a request is made again, in the words a person reads beside the reply being
    written ("rate limited (HTTP 429)"). `timeout_s`: how long the server may stay silent,
    said of a timeout."""
    if still_loading(error):
        return STILL_LOADING
    status = f" (HTTP {error.status})" if error.status is not None else ""
    if isinstance(error, ModelRateLimited):
        return f"rate limited{status}"
    if isinstance(error, ModelServerError):
        return f"server error{status}"
    if isinstance(error, ModelTimeout):
        if error.status is not None:
            return f"the server timed out{status}"
        return f"no answer within {wait_text(timeout_s)}" if timeout_s else "no answer in time"
    if isinstance(error, ModelConnectionError):
        return "the connection to the server failed"
    return f"the request failed{status}"


def _say_how_long(error: ModelError, attempts: int, spent_s: float) -> None:
    """Add to the error of a request given up after `attempts` how long it was tried: a
    person who waited a minute for "retry after 20 s" was not told it was asked 4 times.
    (In place, so the error keeps its type, fields and traceback.)"""
    error.args = (f"{error} (asked {attempts} times over {wait_text(spent_s)})",)


def parse_retry_after(headers: Mapping[str, str], *, now: datetime | None = None) -> float | None:
    """Seconds the server asked us to wait: `retry-after-ms`, or `retry-after` (secs or date).

    None when it says nothing usable, which includes a date already past: a server whose
    clock is behind ours has not asked for no wait at all, and taken as 0 s every retry
    would go out at once; it gets the ordinary backoff instead."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms is not None:
        try:
            value = float(raw_ms) / 1000.0
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value >= 0:
            return value
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        try:
            when = parsedate_to_datetime(raw)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        wait = (when - (now or datetime.now(UTC))).total_seconds()
        return wait if wait >= 0 else None
    return value if math.isfinite(value) and value >= 0 else None


def shorten(text: str, limit: int = MAX_SERVER_MESSAGE_CHARS) -> str:
    """A server message cut to a readable length."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def wait_text(seconds: float) -> str:
    """A wait as a person reads it: ``1.5 s``, ``45 s``, ``12 min``, ``3 h``, ``4 days``."""
    if seconds < 120:
        return f"{seconds:.3g} s" if seconds < 10 else f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.0f} days"


_UNKNOWN_MODEL_WORDS = ("not found", "does not exist", "not exist", "unknown", "no such")


def _names_an_unknown_model(detail: str) -> bool:
    """The server's words say the model is what it lacks ("model "x" not found", "The
    model `x` does not exist"): then the base URL is not to blame."""
    words = detail.lower()
    return "model" in words and any(said in words for said in _UNKNOWN_MODEL_WORDS)


def error_for_status(
    status: int,
    detail: str,
    *,
    provider: str,
    model: str,
    key_env: str,
    retry_after: float | None = None,
    hint: str = "",
    codes: Iterable[object] = (),
) -> ModelError:
    """The ModelError for an HTTP error status, with a message a person can act on.

    `hint` is added to the unknown-model message (e.g. "check the base URL"). `codes` are
    the error's code and type when the server gave them: a 429 for a quota used up
    (`QUOTA_CODES`) is not retried and says to check the key's plan and billing.
    """
    said = f" (server said: {shorten(detail)})" if detail else ""
    if status == 429 and any(isinstance(c, str) and c.lower() in QUOTA_CODES for c in codes):
        return ModelError(
            f"{provider}: the quota of the key in {key_env} is used up (HTTP 429); check its "
            f"plan and billing, or set {key_env} to another key{said}",
            status=status,
            provider=provider,
        )
    if status in (401, 403):
        return ModelAuthError(
            f"{provider}: the server refused the API key (HTTP {status}). "
            f"Set {key_env} to a valid key{said}",
            status=status,
            provider=provider,
        )
    if status == 404:
        if _names_an_unknown_model(detail):  # the server said so: the URL is right
            hint = "; pick a model the server has"
        return ModelNotFound(
            f"{provider}: the server does not know the model {model!r} (HTTP 404){hint}{said}",
            status=status,
            provider=provider,
        )
    if status == 429:
        wait = f"; retry after {wait_text(retry_after)}" if retry_after is not None else ""
        return ModelRateLimited(
            f"{provider}: rate limited (HTTP 429){wait}{said}",
            status=status,
            provider=provider,
            retry_after=retry_after,
        )
    if status == 408:
        return ModelTimeout(
            f"{provider}: the server timed out (HTTP 408){said}", status=status, provider=provider
        )
    if status == 503 and any(words in detail.lower() for words in LOADING_WORDS):
        return ModelServerError(
            f"{provider}: {STILL_LOADING} (HTTP 503){said}",
            status=status,
            provider=provider,
            retry_after=retry_after,
        )
    if status >= 500:  # 503 and Anthropic's 529 (overloaded) often say when to come back
        wait = f"; retry after {wait_text(retry_after)}" if retry_after is not None else ""
        return ModelServerError(
            f"{provider}: server error (HTTP {status}){wait}{said}",
            status=status,
            provider=provider,
            retry_after=retry_after,
        )
    return ModelError(
        f"{provider}: the request was refused (HTTP {status}){said}",
        status=status,
        provider=provider,
    )
