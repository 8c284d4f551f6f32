"""A request asked again is said before each wait: the real OpenAI and Anthropic SDKs over
real HTTP against the scripted peer (no waiting: the retry policy's sleep only records).

Without the notices a rate-limited reply stood still for a minute (requests at 0, 20, 40
and 60 s with nothing on screen), and the final error said "retry after 20 s" as if it had
not tried four times already.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest

from connectors.anthropic import AnthropicProvider
from connectors.openai import OpenAIProvider
from connectors.resilience import RetryPolicy
from gui_agent.exceptions import ModelRateLimited, ModelServerError, ModelTimeout
from gui_agent.quick import create_interpreter
from schema import (
    ErrorEvent,
    Event,
    Message,
    MessageStarted,
    ModelResponse,
    ModelRetrying,
    ModelRetryNotice,
    ModelStreamPart,
    Role,
    StateChanged,
    TextDelta,
)
from tests.connectors.peers import (
    Reply,
    ScriptedPeer,
    anthropic_error,
    anthropic_text_stream,
    openai_error,
    openai_text_stream,
)

RATE_LIMITED = "rate limited (HTTP 429)"


def user(text: str) -> Message:
    return Message(role=Role.USER, content=text)


def slow_down(seconds: str = "20") -> Reply:
    return Reply.json(
        429, openai_error(429, "Slow down", "rate_limit_error"), {"retry-after": seconds}
    )


class Timeline:
    """What the consumer saw and when the retry policy waited, in one order: a notice must
    come before its wait, not after it (the person would see it only once it is over)."""

    def __init__(self) -> None:
        self.seen: list[object] = []

    async def sleep(self, delay: float) -> None:
        self.seen.append(("wait", delay))

    async def read(self, stream: AsyncIterator[ModelStreamPart]) -> Exception | None:
        try:
            async for part in stream:
                self.seen.append(part)
        except Exception as error:  # the test inspects it
            return error
        return None


def policy(timeline: Timeline, *, max_timeout_attempts: int | None = None) -> RetryPolicy:
    return RetryPolicy(
        max_attempts=4,
        base_delay_s=0.5,
        jitter=False,
        sleep=timeline.sleep,
        max_timeout_attempts=max_timeout_attempts,
    )


@pytest.fixture
def timeline() -> Timeline:
    return Timeline()


@pytest.fixture
async def openai(peer: ScriptedPeer, timeline: Timeline) -> AsyncIterator[OpenAIProvider]:
    provider = OpenAIProvider(
        "gpt-test", base_url=peer.url + "/v1", api_key="sk-test", retry=policy(timeline)
    )
    yield provider
    await provider.aclose()


async def test_each_retry_of_a_rate_limit_is_announced_before_its_wait(
    openai: OpenAIProvider, peer: ScriptedPeer, timeline: Timeline
) -> None:
    peer.script(slow_down(), slow_down(), slow_down(), Reply.sse(*openai_text_stream(["at last"])))
    error = await timeline.read(openai.stream([user("hi")]))
    assert error is None
    notice = ModelRetryNotice
    assert timeline.seen[:6] == [
        notice(attempt=2, max_attempts=4, wait_s=20.0, reason=RATE_LIMITED),
        ("wait", 20.0),
        notice(attempt=3, max_attempts=4, wait_s=20.0, reason=RATE_LIMITED),
        ("wait", 20.0),
        notice(attempt=4, max_attempts=4, wait_s=20.0, reason=RATE_LIMITED),
        ("wait", 20.0),
    ]
    last = timeline.seen[-1]
    assert isinstance(last, ModelResponse) and last.text == "at last"
    assert peer.request_count == 4


async def test_the_last_rate_limit_says_how_often_and_how_long_it_was_asked(
    openai: OpenAIProvider, peer: ScriptedPeer, timeline: Timeline
) -> None:
    peer.script(*[slow_down() for _ in range(4)])
    error = await timeline.read(openai.stream([user("hi")]))
    assert isinstance(error, ModelRateLimited) and error.retry_after == 20.0
    assert str(error).endswith("(asked 4 times over 60 s)"), str(error)
    assert "retry after 20 s" in str(error)  # (what the server said is kept)
    notices = [p for p in timeline.seen if isinstance(p, ModelRetryNotice)]
    assert [n.attempt for n in notices] == [2, 3, 4]
    # A Retry-After longer than the policy waits surfaces at once: nothing to announce,
    # and the error is not said to have been asked again.
    timeline.seen.clear()
    peer.script(slow_down("600"))
    error = await timeline.read(openai.stream([user("hi")]))
    assert isinstance(error, ModelRateLimited)
    assert "asked" not in str(error) and timeline.seen == []


async def test_anthropic_server_errors_are_announced_with_their_backoff(
    peer: ScriptedPeer, timeline: Timeline
) -> None:
    provider = AnthropicProvider(
        "claude-test", base_url=peer.url, api_key="sk-ant-test", retry=policy(timeline)
    )
    overloaded = Reply.json(529, anthropic_error("overloaded_error", "Overloaded"))
    peer.script(overloaded, overloaded, Reply.sse(*anthropic_text_stream(["fine"])))
    try:
        error = await timeline.read(provider.stream([user("hi")]))
    finally:
        await provider.aclose()
    assert error is None
    reason = "server error (HTTP 529)"
    assert timeline.seen[:4] == [
        ModelRetryNotice(attempt=2, max_attempts=4, wait_s=0.5, reason=reason),
        ("wait", 0.5),
        ModelRetryNotice(attempt=3, max_attempts=4, wait_s=1.0, reason=reason),
        ("wait", 1.0),
    ]


async def test_anthropic_gives_up_saying_how_often_it_asked(
    peer: ScriptedPeer, timeline: Timeline
) -> None:
    provider = AnthropicProvider(
        "claude-test", base_url=peer.url, api_key="sk-ant-test", retry=policy(timeline)
    )
    peer.script(*[Reply.json(503, anthropic_error("api_error", "down")) for _ in range(4)])
    try:
        error = await timeline.read(provider.stream([user("hi")]))
    finally:
        await provider.aclose()
    assert isinstance(error, ModelServerError)
    # The waits asked for (0.5 + 1 + 2 s): the policy's sleep here returns at once.
    assert str(error).endswith("(asked 4 times over 3.5 s)"), str(error)
    reasons = {p.reason for p in timeline.seen if isinstance(p, ModelRetryNotice)}
    assert reasons == {"server error (HTTP 503)"}


async def test_a_silent_server_is_announced_as_no_answer_within_the_timeout(
    peer: ScriptedPeer, timeline: Timeline
) -> None:
    """The vendor providers ask a silent server twice at most: the notice says "of 2"."""
    provider = OpenAIProvider(
        "gpt-test",
        base_url=peer.url + "/v1",
        api_key="sk-test",
        timeout_s=0.3,
        retry=policy(timeline, max_timeout_attempts=2),
    )
    peer.script(Reply.silent(), Reply.silent())
    try:
        error = await timeline.read(provider.stream([user("hello?")]))
    finally:
        await provider.aclose()
    assert isinstance(error, ModelTimeout)
    assert timeline.seen == [
        ModelRetryNotice(attempt=2, max_attempts=2, wait_s=0.5, reason="no answer within 0.3 s"),
        ("wait", 0.5),
    ]
    assert re.search(r"\(asked 2 times over [\d.]+ s\)$", str(error)), str(error)


# --- in the session's events -----------------------------------------------------------------


async def events_of(provider: OpenAIProvider, tmp_path: object) -> list[Event]:
    interpreter = create_interpreter(provider, builtin_tools=False, workdir=tmp_path)  # type: ignore[arg-type]
    try:
        return [event async for event in interpreter.chat("hi")]
    finally:
        await interpreter.close()


async def test_the_session_says_model_retrying_for_the_reply_being_written(
    openai: OpenAIProvider, peer: ScriptedPeer, tmp_path: object
) -> None:
    peer.script(slow_down(), slow_down(), Reply.sse(*openai_text_stream(["made it"])))
    events = await events_of(openai, tmp_path)
    started = next(e for e in events if isinstance(e, MessageStarted) and e.role is Role.ASSISTANT)
    retrying = [e for e in events if isinstance(e, ModelRetrying)]
    assert [(e.attempt, e.max_attempts, e.wait_s, e.reason) for e in retrying] == [
        (2, 4, 20.0, RATE_LIMITED),
        (3, 4, 20.0, RATE_LIMITED),
    ]
    assert {e.message_id for e in retrying} == {started.message_id}
    assert {e.agent for e in retrying} == {started.agent}
    first_text = next(i for i, e in enumerate(events) if isinstance(e, TextDelta))
    assert all(events.index(e) < first_text for e in retrying)
    # Being asked again is no error and no change of state.
    assert not [e for e in events if isinstance(e, ErrorEvent)]
    states = [(e.from_state.value, e.to_state.value) for e in events if isinstance(e, StateChanged)]
    assert states == [("INIT", "RUNNING"), ("RUNNING", "STOP")]


async def test_the_turns_error_after_the_last_attempt_says_how_long_it_kept_trying(
    openai: OpenAIProvider, peer: ScriptedPeer, tmp_path: object
) -> None:
    peer.script(*[slow_down() for _ in range(4)])
    events = await events_of(openai, tmp_path)
    assert len([e for e in events if isinstance(e, ModelRetrying)]) == 3
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert len(errors) == 1 and "(asked 4 times over 60 s)" in errors[0].message
