"""The embedded SmolLM2 model end to end through the interpreter and the executor agent.

A person asks for the weather with one tool on offer: the model calls the tool (grammar-
constrained), the tool runs, the model answers from its result, the turn completes with
exact token counts. And Stop in the middle of a long reply keeps what was written and
leaves the model free for the next message.

The tests share one loaded model (module-scoped fixture) and skip, with the reason, when
llama-cpp-python or the weights are missing. Assertions are about structure, not wording:
a 135M model's phrasing is not a contract. Sampling is greedy (temperature 0): at 0.2 the
model took the tool for only 8 of 12 seeds, greedy took it for all of them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import aclosing
from pathlib import Path

import pytest
import pytest_asyncio

from connectors.llama_local import LlamaLocalProvider
from gui_agent import tool
from gui_agent.events import Subscription
from gui_agent.interpreter import Interpreter
from gui_agent.quick import create_interpreter
from schema import (
    Event,
    InterpreterState,
    Message,
    MessageCompleted,
    MessageStatus,
    Role,
    RunFinished,
    RunOutcome,
    StateChanged,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    UsageReported,
)
from tests.connectors.llama_kit import loaded_model

pytestmark = pytest.mark.llama
module_loop = pytest.mark.asyncio(loop_scope="module")

FORECAST = "Sunny, 21 °C, light wind from the west."
TURN_TIMEOUT_S = 120  # a hang (say, a generation lock never released) fails instead of blocking


@tool
def get_weather(city: str) -> str:
    """Get the current weather forecast for a city."""
    return FORECAST


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def provider() -> LlamaLocalProvider:
    return await loaded_model(max_tokens=64, seed=7, temperature=0.0)


def weather_interpreter(provider: LlamaLocalProvider, workdir: Path) -> Interpreter:
    return create_interpreter(provider, tools=[get_weather], builtin_tools=False, workdir=workdir)


async def chat(interpreter: Interpreter, text: str) -> list[Event]:
    async with asyncio.timeout(TURN_TIMEOUT_S):
        return [event async for event in interpreter.chat(text)]


async def set_max_tokens(interpreter: Interpreter, max_tokens: int) -> None:
    settings = interpreter.session.settings.model_copy(update={"max_tokens": max_tokens})
    await interpreter.update(settings=settings)


def completed_messages(events: list[Event]) -> list[Message]:
    return [event.message for event in events if isinstance(event, MessageCompleted)]


def final_reply(events: list[Event]) -> Message:
    """The last assistant message of the turn."""
    replies = [m for m in completed_messages(events) if m.role is Role.ASSISTANT]
    assert replies, "the turn ended without an assistant message"
    return replies[-1]


def run_outcome(events: list[Event]) -> RunOutcome:
    (finished,) = [event for event in events if isinstance(event, RunFinished)]
    return finished.outcome


async def first_text_delta(subscription: Subscription) -> TextDelta:
    events: AsyncIterator[Event] = aiter(subscription)
    async with aclosing(events):  # type: ignore[type-var]
        async for event in events:
            if isinstance(event, TextDelta) and event.delta:
                return event
    raise AssertionError("the subscription closed before any text arrived")


# --- a tool call, its result, an answer ---------------------------------------------------


@module_loop
async def test_the_model_calls_the_tool_then_answers_from_its_result(
    provider: LlamaLocalProvider, tmp_path: Path
) -> None:
    interpreter = weather_interpreter(provider, tmp_path)
    events = await chat(interpreter, "What is the weather in Paris? Use the get_weather tool.")

    started = [e for e in events if isinstance(e, ToolCallStarted)]
    assert [e.call.name for e in started] == ["get_weather"], completed_messages(events)
    call = started[0].call
    arguments = call.parsed_arguments()
    assert isinstance(arguments, dict) and isinstance(arguments.get("city"), str)
    assert arguments["city"].strip()

    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert [e.result.call_id for e in finished] == [call.id]
    assert finished[0].result.content == FORECAST and not finished[0].result.is_error

    reply = final_reply(events)
    assert reply.content.strip() and not reply.tool_calls
    assert reply.status is MessageStatus.COMPLETE
    # In that order: the call, its result, then the answer.
    position = {id(event): index for index, event in enumerate(events)}
    answer_at = next(
        i
        for i, e in enumerate(events)
        if isinstance(e, MessageCompleted) and e.message.id == reply.id
    )
    assert position[id(started[0])] < position[id(finished[0])] < answer_at

    assert run_outcome(events) is RunOutcome.COMPLETED
    assert interpreter.state is InterpreterState.STOP
    last_state = [e for e in events if isinstance(e, StateChanged)][-1]
    assert last_state.to_state is InterpreterState.STOP

    usage = [e for e in events if isinstance(e, UsageReported)][-1].turn
    assert usage.estimated is False  # counted with the model's own tokenizer
    assert usage.requests == 2  # the call, then the answer
    assert usage.input_tokens > 0 and usage.output_tokens > 0


# --- Stop ---------------------------------------------------------------------------------


@module_loop
async def test_stop_keeps_the_partial_reply_and_the_next_message_gets_an_answer(
    provider: LlamaLocalProvider, tmp_path: Path
) -> None:
    interpreter = create_interpreter(provider, builtin_tools=False, workdir=tmp_path)
    await set_max_tokens(interpreter, 400)

    async with interpreter.subscribe() as subscription:
        await interpreter.send("Write a long story about a dragon who learns to sing.")
        async with asyncio.timeout(TURN_TIMEOUT_S):
            first = await first_text_delta(subscription)
        stop_pressed = time.perf_counter()
        assert await interpreter.stop()
        stop_seconds = time.perf_counter() - stop_pressed
        after = subscription.pending()

    assert stop_seconds < 2.0  # the worker thread notices within a token
    assert run_outcome(after) is RunOutcome.INTERRUPTED
    assert interpreter.state is InterpreterState.STOP and not interpreter.busy
    partial = final_reply(after)
    assert partial.id == first.message_id
    assert partial.status is MessageStatus.INTERRUPTED
    assert partial.content.startswith(first.delta)
    shown = first.delta + "".join(
        e.delta for e in after if isinstance(e, TextDelta) and e.message_id == partial.id
    )
    assert partial.content == shown  # exactly what the person saw is kept
    assert interpreter.session.history[-1].id == partial.id

    # The generation lock was released: the next message runs to its end.
    await set_max_tokens(interpreter, 32)
    events = await chat(interpreter, "Say hi.")
    assert run_outcome(events) is RunOutcome.COMPLETED
    reply = final_reply(events)
    assert reply.content.strip() and reply.status is MessageStatus.COMPLETE
    assert interpreter.state is InterpreterState.STOP
