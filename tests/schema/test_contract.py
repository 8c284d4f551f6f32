"""The data contract: validation rules and exact JSON round-trips of every event."""

from __future__ import annotations

import uuid

import pydantic
import pytest
from pydantic import ValidationError

import schema
from schema import (
    EVENT_ADAPTER,
    AgentName,
    ApprovalDecision,
    AutoChatStopReason,
    ImagePart,
    InterpreterState,
    Message,
    MessageStatus,
    MessageType,
    Role,
    RunOutcome,
    ToolCall,
    ToolResult,
    Usage,
    new_id,
)


def test_message_types_are_exactly_the_six_display_kinds() -> None:
    assert {t.name for t in MessageType} == {
        "MESSAGE",
        "CODE",
        "CONFIRMATION",
        "CONSOLE",
        "IMAGE",
        "FUNCTION",
    }


def test_agent_names_are_the_founding_roles() -> None:
    assert {a.name for a in AgentName} == {
        "AGENT_EXECUTOR",
        "LLM_PLANNER",
        "SUPERVISOR",
        "THOUGHT",
        "CREW",
        "OTHER",
    }


def test_tool_message_without_call_id_is_rejected() -> None:
    with pytest.raises(ValidationError, match="tool_call_id"):
        Message(role=Role.TOOL, content="42")


def test_only_assistant_messages_carry_tool_calls() -> None:
    with pytest.raises(ValidationError, match="assistant"):
        Message(role=Role.USER, tool_calls=(ToolCall(id="c", name="x"),))


def test_ids_are_distinct_uuid4_hex() -> None:
    ids = [new_id() for _ in range(2000)]
    assert len(set(ids)) == len(ids)
    for value in ids:
        parsed = uuid.UUID(hex=value)
        assert parsed.hex == value
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122


def test_messages_are_immutable() -> None:
    message = Message(role=Role.USER, content="hi")
    with pytest.raises(ValidationError):
        message.content = "changed"  # type: ignore[misc]


def test_image_needs_exactly_one_source() -> None:
    with pytest.raises(ValidationError):
        ImagePart()
    with pytest.raises(ValidationError):
        ImagePart(data="aGk=", url="https://example.invalid/x.png")


def test_usage_adds_up_and_remembers_estimates() -> None:
    total = Usage(input_tokens=3, output_tokens=4, requests=1) + Usage(
        input_tokens=1, output_tokens=1, requests=1, estimated=True
    )
    assert (total.input_tokens, total.output_tokens, total.requests) == (4, 5, 2)
    assert total.total_tokens == 9 and total.estimated


def _one_of_each() -> list[schema.BaseEvent]:
    call = ToolCall(id="c1", name="run_python", arguments='{"code": "print(1)"}')
    message = Message(
        role=Role.ASSISTANT,
        type=MessageType.CODE,
        content="print(1)",
        language="python",
        agent=AgentName.AGENT_EXECUTOR,
        tool_calls=(call,),
        reasoning="think",
        images=(ImagePart(data="aGk="),),
        status=MessageStatus.INTERRUPTED,
        metadata={"k": [1, 2]},
    )
    result = ToolResult(call_id="c1", name="run_python", content="1\n", duration_ms=2.5)
    return [
        schema.StateChanged(
            from_state=InterpreterState.INIT, to_state=InterpreterState.RUNNING, reason="go"
        ),
        schema.MessageStarted(message_id="m", agent=AgentName.THOUGHT),
        schema.TextDelta(message_id="m", delta="hé", channel="reasoning"),
        schema.ModelRetrying(
            message_id="m",
            agent=AgentName.THOUGHT,
            attempt=2,
            max_attempts=4,
            wait_s=20.0,
            reason="rate limited (HTTP 429)",
        ),
        schema.MessageCompleted(message=message),
        schema.ToolCallStarted(call=call, parent_message_id="m"),
        schema.ToolCallFinished(result=result),
        schema.ToolCallOutput(call_id="c1", text="step 1 of 3\n", omitted=12),
        schema.ApprovalRequested(approval_id="a", call=call, detail="print(1)", language="python"),
        schema.ApprovalResolved(approval_id="a", decision=ApprovalDecision.DENY, note="no"),
        schema.AgentSwitched(from_agent=None, to_agent=AgentName.CREW),
        schema.UsageReported(turn=Usage(input_tokens=1), total=Usage(input_tokens=2)),
        schema.ErrorEvent(code="model_error", message="boom"),
        schema.RunFinished(outcome=RunOutcome.MAX_ITERATIONS),
        schema.AutoChatTurn(turn=1, max_turns=5, remaining=4),
        schema.AutoChatStopped(reason=AutoChatStopReason.TASK_COMPLETE, turns=2),
        schema.MemoryUpdated(message_ids=("a", "b"), token_count=12, goal="g", goal_pinned=True),
        schema.SessionUpdated(fields={"title": "t"}),
    ]


def test_every_event_type_round_trips_through_json_exactly() -> None:
    events = _one_of_each()
    union_types = {arg.model_fields["type"].default for arg in schema.Event.__origin__.__args__}  # type: ignore[attr-defined]
    assert {e.type for e in events} == union_types  # type: ignore[attr-defined]
    for index, event in enumerate(events):
        event.seq, event.session_id, event.run_id = index + 1, "s", "r"
        text = event.model_dump_json()
        assert EVENT_ADAPTER.validate_json(text) == event
        assert EVENT_ADAPTER.validate_json(text).model_dump_json() == text


def test_required_event_types_exist() -> None:
    required = {
        "state_changed",
        "message_started",
        "text_delta",
        "message_completed",
        "tool_call_started",
        "tool_call_finished",
        "approval_requested",
        "approval_resolved",
        "agent_switched",
        "usage",
        "error",
    }
    assert required <= {e.type for e in _one_of_each()}  # type: ignore[attr-defined]
    assert schema.PROTOCOL_VERSION


def test_usage_zero_plus_x_is_x() -> None:
    x = Usage(input_tokens=3, output_tokens=5, requests=1)

    assert Usage() + x == x
    assert Usage(input_tokens=0, output_tokens=0, requests=0) + x == x


def test_usage_x_plus_zero_is_x() -> None:
    x = Usage(input_tokens=3, output_tokens=5, requests=1)

    assert x + Usage() == x
    estimated = Usage(input_tokens=2, estimated=True)
    assert estimated + Usage() == estimated


def test_usage_sums_every_field_and_ors_estimated() -> None:
    x = Usage(input_tokens=3, output_tokens=5, requests=1)
    y = Usage(input_tokens=10, output_tokens=20, requests=2, estimated=True)

    total = x + y
    assert total == Usage(input_tokens=13, output_tokens=25, requests=3, estimated=True)
    assert total.total_tokens == 38
    assert y + x == total
    assert (x + x).estimated is False
    # the inputs are frozen and left as they were
    assert x == Usage(input_tokens=3, output_tokens=5, requests=1)


def test_an_estimated_zero_usage_marks_the_sum_estimated() -> None:
    x = Usage(input_tokens=3, output_tokens=5, requests=1)

    total = Usage(estimated=True) + x
    assert total == Usage(input_tokens=3, output_tokens=5, requests=1, estimated=True)
    assert total is not x
    assert x.estimated is False


@pytest.mark.parametrize(
    ("model", "body"),
    [
        (schema.ChatRequest, {"session_id": "s", "text": "a"}),
        (schema.ControlRequest, {"session_id": "s", "action": "retry"}),
        (schema.ApprovalResponse, {"session_id": "s", "approval_id": "a", "decision": "deny"}),
    ],
    ids=["chat", "control", "approval"],
)
def test_requests_refuse_fields_they_do_not_define(
    model: type[pydantic.BaseModel], body: dict[str, str]
) -> None:
    assert model.model_validate(body)  # the body itself is fine
    with pytest.raises(ValidationError, match="zzz"):
        model.model_validate({**body, "zzz": 1})


def test_an_edit_of_the_last_message_can_carry_images() -> None:
    image = ImagePart(data="iVBORw0KGgo=")
    request = schema.ControlRequest.model_validate(
        {"session_id": "s", "action": "edit_last", "text": "look", "images": [image.model_dump()]}
    )
    assert request.images == (image,)


def test_an_autochat_continuation_prompt_is_a_message_within_the_limit() -> None:
    assert schema.AutoChatSettings(continuation_prompt="x" * schema.MAX_MESSAGE_CHARS)
    with pytest.raises(ValidationError, match="continuation_prompt"):
        schema.AutoChatSettings(continuation_prompt="x" * (schema.MAX_MESSAGE_CHARS + 1))
