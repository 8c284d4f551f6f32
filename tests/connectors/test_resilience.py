"""Retry policy, circuit breaker and the retry driver, with fake attempts (no sockets)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncGenerator
from datetime import UTC, datetime

import pytest

from connectors.resilience import (
    BreakerState,
    CircuitBreaker,
    RetryPolicy,
    error_for_status,
    parse_retry_after,
    resilient_stream,
)
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
from schema import ModelResponse, ModelStreamPart, ModelTextDelta
from tests.connectors.peers import FakeClock, Sleeps, consume

# --- RetryPolicy ------------------------------------------------------------------------


def test_backoff_doubles_up_to_the_cap_without_jitter() -> None:
    policy = RetryPolicy(base_delay_s=0.5, max_delay_s=3.0, jitter=False)
    error = ModelServerError("503")
    assert [policy.delay_s(error, n) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_jitter_stays_between_half_and_the_full_backoff() -> None:
    policy = RetryPolicy(base_delay_s=1.0, rng=random.Random(7))
    delays = [policy.delay_s(ModelTimeout("slow"), 3) for _ in range(50)]
    assert all(2.0 <= d <= 4.0 for d in delays)
    assert len(set(delays)) > 1


@pytest.mark.parametrize(
    "error",
    [
        ModelRateLimited("429"),
        ModelServerError("500"),
        ModelTimeout("slow"),
        ModelConnectionError("refused"),
    ],
)
def test_transient_errors_are_retried_until_attempts_run_out(error: ModelError) -> None:
    policy = RetryPolicy(max_attempts=3)
    assert policy.should_retry(error, 1)
    assert policy.should_retry(error, 2)
    assert not policy.should_retry(error, 3)


@pytest.mark.parametrize(
    "error",
    [
        ModelAuthError("401"),
        ModelNotFound("404"),
        ModelError("400 bad request"),
        ModelResponseError("garbage"),
        CircuitOpen("open"),
        ValueError("a bug"),
    ],
)
def test_misuse_and_garbage_are_never_retried(error: Exception) -> None:
    assert not RetryPolicy().should_retry(error, 1)


def test_retry_after_is_waited_exactly_and_a_too_long_one_is_not_waited_at_all() -> None:
    policy = RetryPolicy(max_delay_s=20.0)
    short = ModelRateLimited("429", retry_after=3.0)
    assert policy.should_retry(short, 1)
    assert policy.delay_s(short, 1) == 3.0
    long = ModelRateLimited("429", retry_after=120.0)
    assert not policy.should_retry(long, 1)
    overloaded = ModelServerError("503", retry_after=7.0)
    assert policy.should_retry(overloaded, 1)
    assert policy.delay_s(overloaded, 1) == 7.0


def test_a_policy_that_cannot_try_is_refused() -> None:
    with pytest.raises(ConfigError):
        RetryPolicy(max_attempts=0)


# --- CircuitBreaker ---------------------------------------------------------------------


def test_breaker_opens_after_consecutive_failures_and_says_when_it_retries(
    clock: FakeClock,
) -> None:
    breaker = CircuitBreaker(failure_threshold=3, reset_after_s=30.0, clock=clock)
    for _ in range(2):
        breaker.before_call()
        breaker.record_failure()
    assert breaker.state is BreakerState.CLOSED
    breaker.before_call()
    breaker.record_failure()
    assert breaker.state is BreakerState.OPEN
    clock.advance(10)
    with pytest.raises(CircuitOpen, match="try again in 20 s") as caught:
        breaker.before_call("openai:gpt-x")
    assert caught.value.provider == "openai:gpt-x"
    assert "openai:gpt-x" in str(caught.value)


def test_a_success_resets_the_failure_count(clock: FakeClock) -> None:
    breaker = CircuitBreaker(failure_threshold=2, clock=clock)
    breaker.record_failure()
    breaker.record_success()
    breaker.record_failure()
    assert breaker.state is BreakerState.CLOSED


def test_half_open_lets_one_trial_through_and_success_closes(clock: FakeClock) -> None:
    breaker = CircuitBreaker(failure_threshold=1, reset_after_s=5.0, clock=clock)
    breaker.record_failure()
    clock.advance(5)
    assert breaker.state is BreakerState.HALF_OPEN
    breaker.before_call()  # the trial
    with pytest.raises(CircuitOpen, match="trial"):
        breaker.before_call()  # a second caller meanwhile
    breaker.record_success()
    assert breaker.state is BreakerState.CLOSED
    breaker.before_call()


def test_a_failed_trial_opens_the_breaker_for_another_period(clock: FakeClock) -> None:
    breaker = CircuitBreaker(failure_threshold=1, reset_after_s=5.0, clock=clock)
    breaker.record_failure()
    clock.advance(6)
    breaker.before_call()
    breaker.record_failure()
    assert breaker.state is BreakerState.OPEN
    assert breaker.retry_in_s() == 5.0


def test_an_abandoned_trial_frees_the_slot(clock: FakeClock) -> None:
    breaker = CircuitBreaker(failure_threshold=1, reset_after_s=5.0, clock=clock)
    breaker.record_failure()
    clock.advance(5)
    breaker.before_call()
    breaker.record_abandoned()  # the caller was cancelled
    breaker.before_call()  # a new trial is allowed
    assert breaker.state is BreakerState.HALF_OPEN


# --- resilient_stream -------------------------------------------------------------------


class Attempts:
    """Scripted attempts: each entry is (texts to yield, error to raise after them or None)."""

    def __init__(self, *script: tuple[list[str], Exception | None]) -> None:
        self.script = list(script)
        self.started = 0
        self.closed = 0

    async def __call__(self) -> AsyncGenerator[ModelStreamPart, None]:
        texts, error = self.script[self.started]
        self.started += 1
        try:
            for text in texts:
                yield ModelTextDelta(text=text)
            if error is not None:
                raise error
            yield ModelResponse(text="".join(texts))
        finally:
            self.closed += 1


def driver(
    attempts: Attempts, sleeps: Sleeps, breaker: CircuitBreaker | None = None
) -> AsyncGenerator[ModelStreamPart, None]:
    return resilient_stream(
        attempts,
        provider="test:model",
        retry=RetryPolicy(max_attempts=3, base_delay_s=1.0, jitter=False, sleep=sleeps),
        breaker=breaker or CircuitBreaker(),
    )


async def test_failures_before_any_output_are_retried_with_backoff(sleeps: Sleeps) -> None:
    attempts = Attempts(
        ([], ModelServerError("502")),
        ([], ModelRateLimited("429", retry_after=4.0)),
        (["fine"], None),
    )
    breaker = CircuitBreaker()
    outcome = await consume(driver(attempts, sleeps, breaker))
    assert outcome.response.text == "fine"
    assert sleeps.delays == [1.0, 4.0]
    assert attempts.closed == 3
    assert breaker.consecutive_failures == 0


async def test_a_failure_after_output_surfaces_instead_of_repeating_text(sleeps: Sleeps) -> None:
    attempts = Attempts((["Hel"], ModelConnectionError("reset")), (["Hello"], None))
    outcome = await consume(driver(attempts, sleeps))
    assert outcome.texts == ["Hel"]
    assert isinstance(outcome.error, ModelConnectionError)
    assert attempts.started == 1
    assert sleeps.delays == []


async def test_the_last_error_surfaces_when_attempts_run_out(sleeps: Sleeps) -> None:
    attempts = Attempts(*[([], ModelTimeout(f"slow {n}")) for n in range(3)])
    outcome = await consume(driver(attempts, sleeps))
    assert isinstance(outcome.error, ModelTimeout)
    assert str(outcome.error) == "slow 2 (asked 3 times over 3 s)"  # (the waits: 1 + 2 s)
    assert attempts.started == 3


async def test_misuse_is_raised_at_once_and_does_not_trip_the_breaker(sleeps: Sleeps) -> None:
    breaker = CircuitBreaker(failure_threshold=1)
    outcome = await consume(
        driver(
            Attempts(
                ([], ModelAuthError("401")),
            ),
            sleeps,
            breaker,
        )
    )
    assert isinstance(outcome.error, ModelAuthError)
    assert breaker.state is BreakerState.CLOSED


async def test_a_request_is_one_failure_of_the_breaker_its_retries_included(
    sleeps: Sleeps, clock: FakeClock
) -> None:
    breaker = CircuitBreaker(failure_threshold=2, clock=clock)
    attempts = Attempts(*[([], ModelServerError("500")) for _ in range(3)])
    outcome = await consume(driver(attempts, sleeps, breaker))
    assert isinstance(outcome.error, ModelServerError)
    assert attempts.started == 3  # all its attempts: its own failures do not stop it
    assert breaker.consecutive_failures == 1 and breaker.state is BreakerState.CLOSED


async def test_a_breaker_opened_by_other_requests_stops_a_request_retrying(
    clock: FakeClock,
) -> None:
    breaker = CircuitBreaker(failure_threshold=2, clock=clock)

    async def others_fail_meanwhile(delay: float) -> None:  # other chats' requests
        breaker.record_failure(ModelServerError("503"))

    attempts = Attempts(*[([], ModelServerError("500")) for _ in range(3)])
    stream = resilient_stream(
        attempts,
        provider="test:model",
        retry=RetryPolicy(max_attempts=3, jitter=False, sleep=others_fail_meanwhile),
        breaker=breaker,
    )
    outcome = await consume(stream)
    assert isinstance(outcome.error, CircuitOpen)
    assert attempts.started == 2  # no attempt once the breaker is open
    assert "failed 2 requests in a row" in str(outcome.error)


async def test_closing_the_stream_closes_the_running_attempt(sleeps: Sleeps) -> None:
    attempts = Attempts((["a", "b", "c"], None))
    breaker = CircuitBreaker(failure_threshold=1)
    stream = driver(attempts, sleeps, breaker)
    assert await anext(stream) == ModelTextDelta(text="a")
    await stream.aclose()
    assert attempts.closed == 1
    assert breaker.state is BreakerState.CLOSED


async def test_cancelling_a_waiting_consumer_closes_the_attempt(sleeps: Sleeps) -> None:
    release = asyncio.Event()
    closed = asyncio.Event()

    async def hanging() -> AsyncGenerator[ModelStreamPart, None]:
        try:
            yield ModelTextDelta(text="first")
            await release.wait()
            yield ModelResponse(text="never")
        finally:
            closed.set()

    stream = resilient_stream(
        hanging, provider="p", retry=RetryPolicy(sleep=sleeps), breaker=CircuitBreaker()
    )
    got_first = asyncio.Event()

    async def consumer() -> None:
        async for _ in stream:
            got_first.set()

    task = asyncio.create_task(consumer())
    await got_first.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await stream.aclose()
    assert closed.is_set()


# --- error translation helpers ----------------------------------------------------------


def test_retry_after_forms() -> None:
    now = datetime(2026, 11, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert parse_retry_after({"retry-after": "Sun, 01 Nov 2026 12:00:30 GMT"}, now=now) == 30.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({"retry-after": "-3"}) is None
    assert parse_retry_after({}) is None


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (401, ModelAuthError),
        (403, ModelAuthError),
        (404, ModelNotFound),
        (408, ModelTimeout),
        (429, ModelRateLimited),
        (500, ModelServerError),
        (529, ModelServerError),
        (400, ModelError),
    ],
)
def test_statuses_map_to_the_error_tree(status: int, kind: type[ModelError]) -> None:
    error = error_for_status(
        status, "nope", provider="p:m", model="m", key_env="SOME_KEY", retry_after=2.0
    )
    assert type(error) is kind
    assert error.status == status
    assert error.provider == "p:m"


def test_auth_and_not_found_messages_say_what_to_fix() -> None:
    auth = error_for_status(401, "bad key", provider="p", model="m", key_env="OPENAI_API_KEY")
    assert "OPENAI_API_KEY" in str(auth) and "bad key" in str(auth)
    missing = error_for_status(404, "", provider="p", model="gpt-9", key_env="K")
    assert "'gpt-9'" in str(missing)
    limited = error_for_status(429, "", provider="p", model="m", key_env="K", retry_after=3.0)
    assert isinstance(limited, ModelRateLimited) and limited.retry_after == 3.0
    busy = error_for_status(529, "", provider="p", model="m", key_env="K", retry_after=7.0)
    assert isinstance(busy, ModelServerError) and busy.retry_after == 7.0
    assert "retry after 7 s" in str(busy)


@pytest.mark.parametrize(
    ("seconds", "said"),
    [(1.5, "1.5 s"), (45.0, "45 s"), (720.0, "12 min"), (3 * 3600.0, "3 h"), (2.3e9, "26620 days")],
)
def test_a_rate_limit_says_how_long_to_wait_in_words_a_person_reads(
    seconds: float, said: str
) -> None:
    limited = error_for_status(429, "", provider="p", model="m", key_env="K", retry_after=seconds)
    assert f"retry after {said}" in str(limited)
    assert "e+" not in str(limited)
