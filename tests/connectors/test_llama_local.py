"""The embedded SmolLM2 model: streaming, a free event loop, Stop, tool calls, token counts.

The model tests share one loaded model (module-scoped fixture) and skip, with the reason,
when llama-cpp-python or the weights are missing. The mapping tests need neither.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from connectors.llama_local import (
    LOCAL_MODEL_NAME,
    LOCAL_MODEL_NOTICE,
    AnswerStream,
    LlamaLocalProvider,
    ToolPlan,
    output_schema,
    parse_constrained_output,
    plan_tool_use,
    to_chat_messages,
)
from gui_agent.exceptions import ConfigError, InvalidRequest, ModelResponseError
from gui_agent.llm import LLMProvider
from schema import (
    Message,
    MessageType,
    ModelResponse,
    ModelSettings,
    ModelStreamPart,
    ModelTextDelta,
    Role,
    ToolCall,
    ToolSchema,
)
from tests.connectors.llama_kit import loaded_model

pytestmark = pytest.mark.llama
module_loop = pytest.mark.asyncio(loop_scope="module")

WEATHER = ToolSchema(
    name="get_weather",
    description="Get the current weather for a city",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"],
    },
)
CALCULATOR = ToolSchema(
    name="calculator",
    description="Evaluate an arithmetic expression",
    parameters={
        "type": "object",
        "properties": {"expression": {"type": "string"}},
        "required": ["expression"],
    },
)


def user(text: str) -> Message:
    return Message(role=Role.USER, content=text)


def weather_exchange() -> list[Message]:
    call = ToolCall(id="call_1", name="get_weather", arguments='{"city": "Paris"}')
    return [
        user("What's the weather in Paris?"),
        Message(role=Role.ASSISTANT, tool_calls=(call,)),
        Message(
            role=Role.TOOL,
            tool_call_id="call_1",
            name="get_weather",
            content='{"temperature_c": 18, "sky": "sunny"}',
        ),
    ]


def assert_valid_weather_arguments(call: ToolCall) -> None:
    arguments = call.parsed_arguments()
    assert isinstance(arguments["city"], str)
    assert set(arguments) <= {"city", "days"}
    assert isinstance(arguments.get("days", 0), int)


async def collect(stream: AsyncIterator[ModelStreamPart]) -> tuple[list[str], ModelResponse]:
    deltas: list[str] = []
    final: list[ModelResponse] = []
    async for part in stream:
        assert not final, "nothing may follow the ModelResponse"
        if isinstance(part, ModelTextDelta):
            deltas.append(part.text)
        elif isinstance(part, ModelResponse):
            final.append(part)
    assert len(final) == 1
    return deltas, final[0]


# --- mapping: no model needed -----------------------------------------------------------


def test_importing_the_module_does_not_import_llama_cpp() -> None:
    code = "import sys, connectors.llama_local; print('llama_cpp' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "False"


def test_the_notice_tells_people_how_to_get_a_capable_model() -> None:
    assert "SmolLM2-135M" in LOCAL_MODEL_NOTICE
    for hint in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "--model openai-compatible:URL#model"):
        assert hint in LOCAL_MODEL_NOTICE


def test_a_user_question_about_a_tool_offers_that_tool_and_an_answer() -> None:
    plan = plan_tool_use([user("What's the weather in Paris?")], [WEATHER, CALCULATOR], "auto")
    assert plan == ToolPlan((WEATHER,), allow_answer=True)


def test_small_talk_offers_only_an_answer() -> None:
    plan = plan_tool_use([user("Hi there! Who wrote Hamlet?")], [WEATHER, CALCULATOR], "auto")
    assert plan == ToolPlan((), allow_answer=True)


def test_after_a_tool_result_the_model_answers() -> None:
    assert plan_tool_use(weather_exchange(), [WEATHER], "auto") == ToolPlan((), allow_answer=True)


def test_forced_tool_choices_drop_the_answer() -> None:
    tools = [WEATHER, CALCULATOR]
    assert plan_tool_use(weather_exchange(), tools, "required") == ToolPlan(tuple(tools), False)
    assert plan_tool_use([user("hi")], tools, "calculator") == ToolPlan((CALCULATOR,), False)
    with pytest.raises(InvalidRequest, match="not one of the tools"):
        plan_tool_use([user("hi")], tools, "send_email")


def test_no_tools_or_tool_choice_none_means_free_text() -> None:
    assert plan_tool_use([user("What's the weather?")], [], "auto") is None
    assert plan_tool_use([user("What's the weather?")], [WEATHER], "none") is None


def test_the_output_schema_has_one_branch_per_tool_and_the_answer() -> None:
    schema = output_schema(ToolPlan((WEATHER, CALCULATOR), allow_answer=True))
    branches = schema["anyOf"]
    assert [b["properties"].get("name", {}).get("const") for b in branches] == [
        "get_weather",
        "calculator",
        None,
    ]
    assert branches[0]["properties"]["arguments"] == WEATHER.parameters
    assert branches[2]["required"] == ["answer"]
    only_answer = output_schema(ToolPlan((), allow_answer=True))
    assert only_answer["required"] == ["answer"]


def test_answer_text_streams_whole_characters_however_the_json_is_split() -> None:
    answer = 'Hi "there"\n\\ é 😀 done'
    raw = json.dumps({"answer": answer})  # escapes the quotes, newline, backslash, é, emoji
    for size in (1, 2, 3, 7):
        stream = AnswerStream()
        pieces = [stream.feed(raw[i : i + size]) for i in range(0, len(raw), size)]
        assert "".join(pieces) == answer
        assert stream.kind == "answer"
        assert all("\\" not in piece or "\\" in answer for piece in pieces)


def test_a_tool_call_shows_no_text_while_streaming() -> None:
    stream = AnswerStream()
    raw = '{ "name" : "get_weather", "arguments": {"city": "Paris"}}'
    assert "".join(stream.feed(char) for char in raw) == ""
    assert stream.kind == "tool"
    text, call = parse_constrained_output(raw)
    assert text is None and call is not None
    assert call.name == "get_weather" and call.parsed_arguments() == {"city": "Paris"}


def test_a_cut_off_tool_call_is_an_error_not_a_broken_call() -> None:
    with pytest.raises(ModelResponseError, match="did not finish its call of get_weather"):
        parse_constrained_output('{"name": "get_weather", "arguments": {"ci')
    with pytest.raises(ModelResponseError, match="did not finish its structured reply"):
        parse_constrained_output('{"na')


def test_chat_messages_name_tool_results_and_skip_what_is_only_for_display() -> None:
    messages = [
        Message(role=Role.SYSTEM, content="Be brief."),
        Message(role=Role.ASSISTANT, type=MessageType.CONFIRMATION, content="Allow it?"),
        *weather_exchange(),
    ]
    chat = to_chat_messages(messages, system_extra="Tools: none.")
    assert chat[0] == {"role": "system", "content": "Be brief.\n\nTools: none."}
    assert [m["role"] for m in chat] == ["system", "user", "assistant", "user"]
    assert json.loads(chat[2]["content"]) == {"name": "get_weather", "arguments": {"city": "Paris"}}
    assert chat[3]["content"].startswith("Result of get_weather:")


async def test_missing_weights_raise_a_config_error_that_says_how_to_fix_it(
    tmp_path: Path,
) -> None:
    provider = LlamaLocalProvider(tmp_path / "absent.gguf")
    with pytest.raises(ConfigError, match=r"scripts/setup\.sh"):
        await provider.generate([user("hi")])


# --- the real model -----------------------------------------------------------------------


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def provider() -> LlamaLocalProvider:
    return await loaded_model(max_tokens=24, seed=7)


@module_loop
async def test_it_is_an_llm_provider_named_local_smollm2(provider: LlamaLocalProvider) -> None:
    assert isinstance(provider, LLMProvider)
    assert provider.name == LOCAL_MODEL_NAME


@module_loop
async def test_a_reply_streams_in_pieces_then_one_response_with_counted_usage(
    provider: LlamaLocalProvider,
) -> None:
    messages = [user("What is the capital of France?")]
    deltas, response = await collect(provider.stream(messages))
    assert len(deltas) >= 3
    assert response.text == "".join(deltas) and response.text.strip()
    assert response.finish_reason in ("stop", "length")
    counter = provider.token_counter()
    assert response.usage.estimated is False and response.usage.requests == 1
    assert response.usage.input_tokens == counter.count_messages(messages)
    assert response.usage.output_tokens == counter.count_text(response.text)


@module_loop
async def test_the_token_counter_uses_the_model_tokenizer(provider: LlamaLocalProvider) -> None:
    counter = provider.token_counter()
    assert counter.estimated is False and "SmolLM2" in counter.name
    assert counter.count_text("") == 0
    assert 0 < counter.count_text("hello world") < counter.count_text("hello world " * 10)
    assert counter.count_messages([user("hello")]) > counter.count_text("hello")


@module_loop
async def test_the_event_loop_keeps_running_while_the_model_generates(
    provider: LlamaLocalProvider,
) -> None:
    ticks: list[float] = []
    done = asyncio.Event()

    async def ticker() -> None:
        while not done.is_set():
            ticks.append(time.perf_counter())
            await asyncio.sleep(0.005)

    task = asyncio.create_task(ticker())
    started = time.perf_counter()
    deltas, _ = await collect(provider.stream([user("Tell me about the sea.")]))
    elapsed = time.perf_counter() - started
    done.set()
    await task
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    assert len(deltas) >= 3
    # A blocked loop would show one gap as long as the whole generation.
    assert max(gaps) < max(0.25, elapsed / 2), (max(gaps), elapsed)


@module_loop
async def test_cancelling_stops_generation_at_once_and_frees_the_model(
    provider: LlamaLocalProvider,
) -> None:
    first_piece = asyncio.Event()
    pieces: list[str] = []

    async def consume() -> None:
        settings = ModelSettings(max_tokens=400)
        async for part in provider.stream(
            [user("Write a long story about a dragon.")], settings=settings
        ):
            if isinstance(part, ModelTextDelta):
                pieces.append(part.text)
                first_piece.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first_piece.wait(), 30)
    cancelled_at = time.perf_counter()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.perf_counter() - cancelled_at < 1.0
    assert len(pieces) < 100
    # The generation lock is free: the next request runs to its end.
    response = await asyncio.wait_for(
        provider.generate([user("Say hi.")], settings=ModelSettings(max_tokens=4)), 30
    )
    assert response.usage.output_tokens <= 4


@module_loop
async def test_two_sessions_at_once_take_turns_and_both_get_answers(
    provider: LlamaLocalProvider,
) -> None:
    settings = ModelSettings(max_tokens=8)
    first, second = await asyncio.gather(
        provider.generate([user("Name a color.")], settings=settings),
        provider.generate([user("Name an animal.")], settings=settings),
    )
    assert first.text.strip() and second.text.strip()


@module_loop
async def test_a_required_tool_call_names_a_tool_with_arguments_that_fit_its_schema(
    provider: LlamaLocalProvider,
) -> None:
    deltas, response = await collect(
        provider.stream(
            [user("What's the weather in Paris?")],
            tools=[WEATHER, CALCULATOR],
            settings=ModelSettings(tool_choice="required", max_tokens=64),
        )
    )
    assert deltas == []  # JSON of a tool call is never shown as text
    assert response.finish_reason == "tool_calls" and response.text == ""
    (call,) = response.tool_calls
    assert call.name in ("get_weather", "calculator") and call.id
    if call.name == "get_weather":
        assert_valid_weather_arguments(call)
    else:
        assert isinstance(call.parsed_arguments()["expression"], str)


@module_loop
async def test_a_named_tool_choice_calls_that_tool(provider: LlamaLocalProvider) -> None:
    response = await provider.generate(
        [user("Paris please")],
        tools=[WEATHER, CALCULATOR],
        settings=ModelSettings(tool_choice="get_weather", max_tokens=64),
    )
    (call,) = response.tool_calls
    assert call.name == "get_weather"
    assert_valid_weather_arguments(call)


@module_loop
async def test_with_tools_on_auto_the_reply_is_a_valid_call_or_plain_text(
    provider: LlamaLocalProvider,
) -> None:
    deltas, response = await collect(
        provider.stream(
            [user("What's the weather in Paris?")],
            tools=[WEATHER],
            settings=ModelSettings(max_tokens=64),
        )
    )
    if response.tool_calls:
        assert response.tool_calls[0].name == "get_weather"
        assert_valid_weather_arguments(response.tool_calls[0])
    else:
        assert response.text.strip() and response.text == "".join(deltas)
        assert not response.text.lstrip().startswith("{")


@module_loop
async def test_after_a_tool_result_the_reply_is_text(provider: LlamaLocalProvider) -> None:
    deltas, response = await collect(
        provider.stream(weather_exchange(), tools=[WEATHER], settings=ModelSettings(max_tokens=32))
    )
    assert response.tool_calls == ()
    assert response.text.strip() and response.text == "".join(deltas)
    assert len(deltas) >= 2
