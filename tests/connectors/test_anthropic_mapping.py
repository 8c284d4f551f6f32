"""Pure Anthropic mapping: our history to Messages API params, raw events back to deltas."""

from __future__ import annotations

from typing import Any

import pytest

from connectors.anthropic_mapping import (
    EventAccumulator,
    RequestOptions,
    build_request,
    messages_to_anthropic,
    tool_input,
    tools_to_anthropic,
)
from gui_agent.exceptions import (
    ModelError,
    ModelRateLimited,
    ModelResponseError,
    ModelServerError,
)
from schema import (
    ImagePart,
    Message,
    MessageStatus,
    MessageType,
    ModelReasoningDelta,
    ModelSettings,
    ModelTextDelta,
    Role,
    ToolCall,
    ToolSchema,
)


def tool_message(call_id: str, content: str, **extra: Any) -> Message:
    return Message(role=Role.TOOL, content=content, tool_call_id=call_id, name="t", **extra)


# --- messages ---------------------------------------------------------------------------


def test_system_messages_are_pulled_out_and_joined() -> None:
    system, wire = messages_to_anthropic(
        [
            Message(role=Role.SYSTEM, content="You are terse."),
            Message(role=Role.USER, content="hi"),
            Message(role=Role.SYSTEM, content="Answer in French."),
        ]
    )
    assert system == "You are terse.\n\nAnswer in French."
    assert wire == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]


def test_a_tool_loop_becomes_tool_use_and_merged_tool_result_blocks() -> None:
    calls = (
        ToolCall(id="toolu_a", name="weather", arguments='{"city": "Paris"}'),
        ToolCall(id="toolu_b", name="time", arguments="{}"),
    )
    _, wire = messages_to_anthropic(
        [
            Message(role=Role.USER, content="weather and time?"),
            Message(role=Role.ASSISTANT, content="Checking.", tool_calls=calls),
            tool_message("toolu_a", "18 C", metadata={"is_error": False}),
            tool_message("toolu_b", "no clock", metadata={"is_error": True}),
            Message(role=Role.USER, content="and tomorrow?"),
        ]
    )
    assert [m["role"] for m in wire] == ["user", "assistant", "user"]
    assert wire[1]["content"] == [
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_a", "name": "weather", "input": {"city": "Paris"}},
        {"type": "tool_use", "id": "toolu_b", "name": "time", "input": {}},
    ]
    assert wire[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_a", "content": "18 C"},
        {"type": "tool_result", "tool_use_id": "toolu_b", "content": "no clock", "is_error": True},
        {"type": "text", "text": "and tomorrow?"},
    ]


def test_a_tool_message_with_error_status_is_an_error_result() -> None:
    _, wire = messages_to_anthropic([tool_message("toolu_a", "boom", status=MessageStatus.ERROR)])
    assert wire[0]["content"][0]["is_error"] is True


@pytest.mark.parametrize("raw", ['{"city": "Par', "[1, 2]", "not json"])
def test_unparseable_tool_arguments_are_sent_raw_inside_an_object(raw: str) -> None:
    assert tool_input(raw) == {"_raw_arguments": raw}


def test_empty_messages_and_display_only_ones_are_left_out() -> None:
    _, wire = messages_to_anthropic(
        [
            Message(role=Role.USER, content="hi"),
            Message(role=Role.ASSISTANT, content=""),  # an interrupted, empty reply
            Message(role=Role.ASSISTANT, type=MessageType.CONFIRMATION, content="Allow?"),
            Message(role=Role.USER, content="again"),
        ]
    )
    assert wire == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "hi"}, {"type": "text", "text": "again"}],
        }
    ]


def test_images_become_base64_or_url_image_blocks() -> None:
    _, wire = messages_to_anthropic(
        [
            Message(
                role=Role.USER,
                content="look",
                images=(
                    ImagePart(media_type="image/gif", data="R0lG"),
                    ImagePart(url="https://x/y.png"),
                ),
            ),
            tool_message("toolu_p", "plot", images=(ImagePart(data="UE5H"),)),
        ]
    )
    blocks = wire[0]["content"]
    assert blocks[1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/gif", "data": "R0lG"},
    }
    assert blocks[2] == {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}
    result = blocks[3]
    assert result["type"] == "tool_result"
    assert result["content"][1]["source"]["data"] == "UE5H"


def test_request_with_thinking_drops_temperature_and_leaves_room_for_the_answer() -> None:
    options = RequestOptions(
        model="claude-x", max_tokens=1000, temperature=0.3, thinking_budget=2048
    )
    request = build_request([Message(role=Role.USER, content="hi")], (), None, options)
    assert request["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert request["max_tokens"] > 2048
    assert "extra_body" not in request


def test_request_maps_tools_choice_and_temperature() -> None:
    options = RequestOptions(model="claude-x", temperature=0.3)
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    tools = [ToolSchema(name="search", description="Search", parameters=schema)]
    request = build_request(
        [Message(role=Role.SYSTEM, content="sys"), Message(role=Role.USER, content="hi")],
        tools,
        ModelSettings(tool_choice="required", max_tokens=50),
        options,
    )
    assert request["system"] == "sys"
    assert request["max_tokens"] == 50
    assert request["extra_body"] == {"temperature": 0.3}
    assert request["tools"] == tools_to_anthropic(tools)
    assert request["tools"][0]["input_schema"] == schema
    assert request["tool_choice"] == {"type": "any"}


# --- event accumulation -----------------------------------------------------------------


def start(input_tokens: int = 12, **usage: int) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {"model": "claude-x", "usage": {"input_tokens": input_tokens, **usage}},
    }


def delta(index: int, **payload: Any) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": payload}


def test_text_and_thinking_deltas_stream_and_usage_adds_up() -> None:
    acc = EventAccumulator()
    parts = []
    for event in (
        start(12, cache_read_input_tokens=100),
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking"}},
        delta(0, type="thinking_delta", thinking="Let me "),
        delta(0, type="thinking_delta", thinking="think."),
        delta(0, type="signature_delta", signature="sig"),
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        delta(1, type="text_delta", text="Hi"),
        delta(1, type="text_delta", text=" there"),
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 7},
        },
        {"type": "message_stop"},
    ):
        parts += acc.feed(event)
    assert parts == [
        ModelReasoningDelta(text="Let me "),
        ModelReasoningDelta(text="think."),
        ModelTextDelta(text="Hi"),
        ModelTextDelta(text=" there"),
    ]
    assert acc.complete
    response = acc.response()
    assert response.text == "Hi there"
    assert response.reasoning == "Let me think."
    assert (response.usage.input_tokens, response.usage.output_tokens) == (112, 7)
    assert response.finish_reason == "stop"
    assert response.model == "claude-x"


def test_tool_use_blocks_assemble_from_partial_json() -> None:
    acc = EventAccumulator()
    acc.feed(start())
    for index, (call_id, name, pieces) in enumerate(
        [("toolu_1", "weather", ['{"ci', 'ty": "Paris"}']), ("toolu_2", "time", [])]
    ):
        acc.feed(
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}},
            }
        )
        for piece in pieces:
            acc.feed(delta(index, type="input_json_delta", partial_json=piece))
    acc.feed(
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 3},
        }
    )
    response = acc.response()
    assert [(c.id, c.name, c.arguments) for c in response.tool_calls] == [
        ("toolu_1", "weather", '{"city": "Paris"}'),
        ("toolu_2", "time", "{}"),
    ]
    assert response.finish_reason == "tool_calls"


def test_a_tool_use_block_whose_input_came_whole_keeps_it() -> None:
    acc = EventAccumulator()
    acc.feed(
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t", "name": "f", "input": {"n": 1}},
        }
    )
    assert acc.response().tool_calls[0].parsed_arguments() == {"n": 1}


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("overloaded_error", ModelServerError),
        ("rate_limit_error", ModelRateLimited),
        ("invalid_request_error", ModelError),
    ],
)
def test_error_events_raise_the_matching_model_error(kind: str, expected: type[ModelError]) -> None:
    acc = EventAccumulator(provider="anthropic:x")
    with pytest.raises(expected, match="mid-stream") as caught:
        acc.feed({"type": "error", "error": {"type": kind, "message": "busy"}})
    assert type(caught.value) is expected


def test_output_over_the_cap_raises() -> None:
    acc = EventAccumulator(max_chars=5)
    acc.feed(delta(0, type="text_delta", text="12345"))
    with pytest.raises(ModelResponseError, match="size cap"):
        acc.feed(delta(0, type="thinking_delta", thinking="6"))


@pytest.mark.parametrize(
    ("stop", "finish"),
    [("max_tokens", "length"), ("refusal", "content_filter"), ("pause_turn", "pause_turn")],
)
def test_stop_reasons_are_normalised(stop: str, finish: str) -> None:
    acc = EventAccumulator()
    acc.feed(
        {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 1}}
    )
    assert acc.response().finish_reason == finish


def test_garbage_events_are_response_errors() -> None:
    acc = EventAccumulator()
    with pytest.raises(ModelResponseError):
        acc.feed("nope")
    with pytest.raises(ModelResponseError):
        acc.feed({"type": "content_block_start", "index": 0, "content_block": None})


# --- thinking goes back signed -----------------------------------------------------------


def thinking_reply(model: str = "claude-x") -> Message:
    """An assistant message as the agent stores a signed thinking + tool_use reply."""
    acc = EventAccumulator()
    for event in (
        start(5),
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking"}},
        delta(0, type="thinking_delta", thinking="Need the weather."),
        delta(0, type="signature_delta", signature="sig-"),
        delta(0, type="signature_delta", signature="abc"),
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "redacted_thinking", "data": "opaque=="},
        },
        {
            "type": "content_block_start",
            "index": 2,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "t", "input": {}},
        },
        delta(2, type="input_json_delta", partial_json='{"city": "Oslo"}'),
        {"type": "message_stop"},
    ):
        acc.feed(event)
    response = acc.response(model=model)
    assert response.reasoning == "Need the weather."
    return Message(
        role=Role.ASSISTANT,
        content=response.text,
        tool_calls=response.tool_calls,
        reasoning=response.reasoning,
        metadata={"model": response.model, "provider_data": response.provider_data},
    )


def test_signed_thinking_is_sent_back_first_in_its_turn_to_the_model_that_signed_it() -> None:
    reply = thinking_reply()
    history = [
        Message(role=Role.USER, content="weather in Oslo?"),
        reply,
        tool_message("toolu_1", "-3 C"),
    ]
    _, wire = messages_to_anthropic(history, model="claude-x")
    assert wire[1]["content"] == [
        {"type": "thinking", "thinking": "Need the weather.", "signature": "sig-abc"},
        {"type": "redacted_thinking", "data": "opaque=="},
        {"type": "tool_use", "id": "toolu_1", "name": "t", "input": {"city": "Oslo"}},
    ]
    for other in ("claude-y", None):  # another model cannot check the signature
        _, wire = messages_to_anthropic(history, model=other)
        assert [b["type"] for b in wire[1]["content"]] == ["tool_use"]


def test_thinking_never_lands_in_the_middle_of_a_merged_turn() -> None:
    note = Message(role=Role.ASSISTANT, content="(a note)")
    _, wire = messages_to_anthropic(
        [Message(role=Role.USER, content="hi"), note, thinking_reply()], model="claude-x"
    )
    assert [b["type"] for b in wire[1]["content"]] == ["text", "tool_use"]


def test_unsigned_reasoning_and_malformed_provider_data_are_not_sent() -> None:
    plain = Message(role=Role.ASSISTANT, content="ok", reasoning="thought about it")
    broken = Message(
        role=Role.ASSISTANT,
        content="ok",
        metadata={"provider_data": {"anthropic": {"model": "claude-x", "thinking": [{"x": 1}]}}},
    )
    for message in (plain, broken):
        _, wire = messages_to_anthropic(
            [Message(role=Role.USER, content="hi"), message], model="claude-x"
        )
        assert wire[1]["content"] == [{"type": "text", "text": "ok"}]
