"""Pure OpenAI mapping: our messages to the wire, streamed chunks back to our deltas."""

from __future__ import annotations

from typing import Any

import pytest

from connectors.openai_mapping import (
    RequestOptions,
    StreamAccumulator,
    build_request,
    messages_to_openai,
    tools_to_openai,
)
from gui_agent.exceptions import ModelResponseError
from schema import (
    ImagePart,
    Message,
    MessageType,
    ModelReasoningDelta,
    ModelSettings,
    ModelTextDelta,
    Role,
    ToolCall,
    ToolSchema,
)


def chunk(delta: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, **extra}]
    return {"id": "c1", "model": "m-1", "choices": choices}


# --- messages ---------------------------------------------------------------------------


def test_roles_map_to_chat_messages_and_display_only_messages_are_left_out() -> None:
    history = [
        Message(role=Role.SYSTEM, content="be brief"),
        Message(role=Role.USER, content="hi"),
        Message(role=Role.ASSISTANT, type=MessageType.CONFIRMATION, content="Run it? [y/n]"),
        Message(role=Role.ASSISTANT, content="noted", metadata={"display_only": True}),
        Message(role=Role.ASSISTANT, content="hello"),
    ]
    assert messages_to_openai(history) == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]


def test_assistant_tool_calls_carry_empty_content_and_raw_arguments() -> None:
    call = ToolCall(id="call_1", name="run", arguments='{"code": "print(1)"')  # malformed
    wire = messages_to_openai([Message(role=Role.ASSISTANT, tool_calls=(call,))])
    assert wire == [
        {
            "role": "assistant",
            "content": "",  # llama.cpp answers 500 when it is missing
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "run", "arguments": '{"code": "print(1)"'},
                }
            ],
        }
    ]


@pytest.mark.parametrize("kind", [MessageType.CODE, MessageType.CONSOLE, MessageType.FUNCTION])
def test_code_console_and_function_messages_go_as_plain_text(kind: MessageType) -> None:
    tool = Message(role=Role.TOOL, type=kind, content="out: 1", tool_call_id="call_1", name="run")
    user = Message(role=Role.USER, type=kind, content="x = 1")
    assert messages_to_openai([tool, user]) == [
        {"role": "tool", "tool_call_id": "call_1", "content": "out: 1"},
        {"role": "user", "content": "x = 1"},
    ]


def test_user_images_become_image_url_parts_with_data_urls_for_base64() -> None:
    message = Message(
        role=Role.USER,
        content="what is this?",
        images=(
            ImagePart(media_type="image/jpeg", data="QUJD"),
            ImagePart(url="https://example.org/cat.png"),
        ),
    )
    assert messages_to_openai([message]) == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,QUJD"}},
                {"type": "image_url", "image_url": {"url": "https://example.org/cat.png"}},
            ],
        }
    ]


def test_images_a_tool_returned_follow_as_a_user_message() -> None:
    message = Message(
        role=Role.TOOL,
        content="plotted",
        tool_call_id="call_9",
        name="plot",
        images=(ImagePart(data="UE5H"),),
    )
    tool, user = messages_to_openai([message])
    assert tool == {"role": "tool", "tool_call_id": "call_9", "content": "plotted"}
    assert user["role"] == "user"
    assert user["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,UE5H"},
    }


def test_tools_become_function_tools() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    tools = [ToolSchema(name="weather", description="Weather now", parameters=schema)]
    assert tools_to_openai(tools) == [
        {
            "type": "function",
            "function": {"name": "weather", "description": "Weather now", "parameters": schema},
        }
    ]


def test_request_settings_override_provider_defaults() -> None:
    options = RequestOptions(model="m", temperature=0.2, max_tokens=100)
    tools = [ToolSchema(name="weather")]
    request = build_request(
        [Message(role=Role.USER, content="hi")],
        tools,
        ModelSettings(temperature=0.9, tool_choice="weather"),
        options,
    )
    assert request["temperature"] == 0.9
    assert request["max_tokens"] == 100
    assert request["stream"] is True
    assert request["stream_options"] == {"include_usage": True}
    assert request["tool_choice"] == {"type": "function", "function": {"name": "weather"}}


def test_request_without_tools_sends_no_tool_choice_and_auto_is_left_to_the_server() -> None:
    options = RequestOptions(model="m", max_tokens_field="max_completion_tokens", max_tokens=5)
    plain = build_request([], (), ModelSettings(tool_choice="required"), options)
    assert "tools" not in plain and "tool_choice" not in plain
    assert plain["max_completion_tokens"] == 5
    auto = build_request([], [ToolSchema(name="t")], None, options)
    assert "tool_choice" not in auto


# --- stream accumulation ----------------------------------------------------------------


def test_text_deltas_are_returned_and_joined_into_the_response() -> None:
    acc = StreamAccumulator()
    out = []
    for piece in ("Hel", "lo", "!"):
        out += acc.feed(chunk({"content": piece}))
    acc.feed(chunk({}, finish_reason="stop"))
    acc.feed({"id": "c1", "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 3}})
    assert out == [ModelTextDelta(text="Hel"), ModelTextDelta(text="lo"), ModelTextDelta(text="!")]
    response = acc.response()
    assert response.text == "Hello!"
    assert response.finish_reason == "stop"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (9, 3)
    assert response.usage.requests == 1
    assert response.model == "m-1"


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_reasoning_fields_become_reasoning_deltas(field: str) -> None:
    acc = StreamAccumulator()
    parts = acc.feed(chunk({field: "think"})) + acc.feed(chunk({"content": "answer"}))
    assert parts == [ModelReasoningDelta(text="think"), ModelTextDelta(text="answer")]
    assert acc.response().reasoning == "think"


def test_content_sent_as_parts_shows_its_text_and_its_thinking() -> None:
    # Mistral's API streams a reasoning model's content as a list of parts.
    acc = StreamAccumulator()
    thinking = {"type": "thinking", "thinking": [{"type": "text", "text": "A greeting; "}]}
    out = acc.feed(chunk({"content": [thinking]}))
    out += acc.feed(chunk({"content": [{"type": "thinking", "thinking": "reply in kind."}]}))
    out += acc.feed(chunk({"content": [{"type": "text", "text": "Hello"}]}))
    out += acc.feed(chunk({"content": "!"}, finish_reason="stop"))
    assert out == [
        ModelReasoningDelta(text="A greeting; "),
        ModelReasoningDelta(text="reply in kind."),
        ModelTextDelta(text="Hello"),
        ModelTextDelta(text="!"),
    ]
    response = acc.response()
    assert (response.text, response.reasoning) == ("Hello!", "A greeting; reply in kind.")


def test_a_server_sending_both_reasoning_fields_is_not_shown_twice() -> None:
    acc = StreamAccumulator()
    parts = acc.feed(chunk({"reasoning_content": "hm", "reasoning": "hm"}))
    assert parts == [ModelReasoningDelta(text="hm")]


def test_parallel_tool_calls_are_assembled_by_index() -> None:
    acc = StreamAccumulator()
    acc.feed(
        chunk(
            {
                "tool_calls": [
                    {"index": 0, "id": "a", "function": {"name": "weather", "arguments": ""}},
                    {"index": 1, "id": "b", "function": {"name": "time", "arguments": '{"tz'}},
                ]
            }
        )
    )
    acc.feed(chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": '}}]}))
    acc.feed(chunk({"tool_calls": [{"index": 1, "function": {"arguments": '": "CET"}'}}]}))
    acc.feed(chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Paris"}'}}]}))
    acc.feed(chunk({}, finish_reason="tool_calls"))
    calls = acc.response().tool_calls
    assert [(c.id, c.name) for c in calls] == [("a", "weather"), ("b", "time")]
    assert calls[0].parsed_arguments() == {"city": "Paris"}
    assert calls[1].parsed_arguments() == {"tz": "CET"}


def piece(index: int, arguments: str, **call: Any) -> dict[str, Any]:
    """A delta with one tool-call piece (`call` may give an id and a name)."""
    function = {"arguments": arguments}
    if "name" in call:
        function["name"] = call.pop("name")
    return chunk({"tool_calls": [{"index": index, **call, "function": function}]})


def test_parallel_calls_a_server_gives_one_index_stay_apart() -> None:
    # Ollama (and some proxies) stream every call of a parallel batch under index 0.
    acc = StreamAccumulator()
    acc.feed(piece(0, '{"city": "Oslo"}', id="call_a", name="get_weather"))
    acc.feed(piece(0, '{"city"', id="call_b", name="get_weather"))
    acc.feed(piece(0, ': "Rome"}'))  # continues the call the index stands for now
    acc.feed(piece(0, "{}", id="call_c", name="get_time"))
    acc.feed(chunk({}, finish_reason="tool_calls"))
    calls = acc.response().tool_calls
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("call_a", "get_weather", '{"city": "Oslo"}'),
        ("call_b", "get_weather", '{"city": "Rome"}'),
        ("call_c", "get_time", "{}"),
    ]


def test_a_call_whose_id_changes_between_its_pieces_stays_one_call() -> None:
    acc = StreamAccumulator()
    acc.feed(piece(0, '{"city"', id="call_1", name="get_weather"))
    acc.feed(piece(0, ': "Oslo"}', id="call_2"))
    (only,) = acc.response().tool_calls
    assert (only.id, only.name, only.arguments) == ("call_1", "get_weather", '{"city": "Oslo"}')


def test_tool_calls_without_ids_get_distinct_generated_ones() -> None:
    acc = StreamAccumulator()
    acc.feed(chunk({"tool_calls": [{"index": 0, "function": {"name": "a", "arguments": "{}"}}]}))
    acc.feed(chunk({"tool_calls": [{"index": 1, "function": {"name": "b", "arguments": "{}"}}]}))
    first, second = acc.response().tool_calls
    assert first.id and second.id and first.id != second.id
    assert acc.response().tool_calls == (first, second)  # stable once generated


def test_tool_calls_without_index_continue_the_current_call() -> None:
    acc = StreamAccumulator()
    acc.feed(chunk({"tool_calls": [{"id": "x", "function": {"name": "f", "arguments": '{"a"'}}]}))
    acc.feed(chunk({"tool_calls": [{"function": {"arguments": ": 1}"}}]}))
    acc.feed(chunk({"tool_calls": [{"id": "y", "function": {"name": "g", "arguments": "{}"}}]}))
    calls = acc.response().tool_calls
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("x", "f", '{"a": 1}'),
        ("y", "g", "{}"),
    ]


def test_a_delta_with_both_tool_calls_and_legacy_function_call_is_read_once() -> None:
    # llama.cpp's server sends every piece in `tool_calls` and in `function_call`.
    acc = StreamAccumulator()
    pieces = [("get_weather", '{"city": '), (None, '"Paris"}')]
    for name, arguments in pieces:
        function = {"name": name, "arguments": arguments} if name else {"arguments": arguments}
        acc.feed(
            chunk(
                {
                    "function_call": function,
                    "tool_calls": [{"index": 0, "id": "call_0", "function": function}],
                }
            )
        )
    (call,) = acc.response().tool_calls
    assert (call.id, call.name, call.arguments) == ("call_0", "get_weather", '{"city": "Paris"}')


def test_a_legacy_function_call_alone_becomes_a_tool_call() -> None:
    acc = StreamAccumulator()
    acc.feed(chunk({"function_call": {"name": "f", "arguments": '{"a": '}}))
    acc.feed(chunk({"function_call": {"arguments": "1}"}}))
    (call,) = acc.response().tool_calls
    assert (call.name, call.parsed_arguments()) == ("f", {"a": 1})


def test_malformed_arguments_pass_through_untouched() -> None:
    acc = StreamAccumulator()
    acc.feed(chunk({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f"}}]}))
    acc.feed(chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{'city': Paris"}}]}))
    (call,) = acc.response().tool_calls
    assert call.arguments == "{'city': Paris"


def test_arguments_sent_as_an_object_are_serialised() -> None:
    acc = StreamAccumulator()
    acc.feed(
        chunk(
            {
                "tool_calls": [
                    {"index": 0, "id": "a", "function": {"name": "f", "arguments": {"n": 2}}}
                ]
            }
        )
    )
    assert acc.response().tool_calls[0].parsed_arguments() == {"n": 2}


def test_output_over_the_cap_raises() -> None:
    acc = StreamAccumulator(max_chars=10)
    acc.feed(chunk({"content": "x" * 10}))
    with pytest.raises(ModelResponseError, match="size cap"):
        acc.feed(chunk({"content": "y"}))


def test_tool_arguments_count_towards_the_cap() -> None:
    acc = StreamAccumulator(max_chars=10)
    with pytest.raises(ModelResponseError):
        acc.feed(
            chunk({"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": "x" * 11}}]})
        )


def test_non_object_chunks_are_response_errors() -> None:
    acc = StreamAccumulator()
    with pytest.raises(ModelResponseError):
        acc.feed([1, 2])
    with pytest.raises(ModelResponseError):
        acc.feed({"choices": "nope"})


def test_other_choices_are_ignored_and_missing_usage_is_one_uncounted_request() -> None:
    acc = StreamAccumulator()
    acc.feed({"choices": [{"index": 1, "delta": {"content": "other"}}]})
    response = acc.response(model="fallback")
    assert response.text == ""
    assert response.usage.requests == 1 and response.usage.total_tokens == 0
    assert response.model == "fallback"


def test_a_surrogate_pair_split_across_two_chunks_is_one_character() -> None:
    acc = StreamAccumulator()
    parts = acc.feed(chunk({"content": "Hi \ud83d"})) + acc.feed(chunk({"content": "\ude00!"}))
    assert parts == [ModelTextDelta(text="Hi "), ModelTextDelta(text="\U0001f600!")]
    assert acc.response().text == "Hi \U0001f600!"


def test_a_split_pair_in_reasoning_is_rejoined_and_a_lone_half_is_kept() -> None:
    acc = StreamAccumulator()
    assert acc.feed(chunk({"reasoning_content": "\ud83e"})) == []
    rejoined = acc.feed(chunk({"reasoning_content": "\udd14 hm"}))
    assert rejoined == [ModelReasoningDelta(text="\U0001f914 hm")]
    assert acc.feed(chunk({"content": "a \ud83d"})) == [ModelTextDelta(text="a ")]
    assert acc.feed(chunk({"content": "b"})) == [ModelTextDelta(text="\ud83db")]
    acc.feed(chunk({"content": "c \ud83d"}, finish_reason="stop"))
    response = acc.response()
    assert response.reasoning == "\U0001f914 hm"
    assert response.text == "a \ud83db" + "c \ud83d"  # lone halves stay: the agent loop marks them


def test_a_surrogate_pair_split_across_tool_call_argument_pieces_is_one_character() -> None:
    acc = StreamAccumulator()
    call = {"index": 0, "id": "call_1", "function": {"name": "say", "arguments": '{"t": "\ud83d'}}
    acc.feed(chunk({"tool_calls": [call]}))
    acc.feed(chunk({"tool_calls": [{"index": 0, "function": {"arguments": '\ude00"}'}}]}))
    (joined,) = acc.response().tool_calls
    assert joined.parsed_arguments() == {"t": "\U0001f600"}
