"""`schema.builders.builder`: a model built from a dict of its fields is the one the class
builds, validated the same way."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from schema import Message, Role, TextDelta, ToolCall, ToolResult, Usage
from schema.builders import builder


def test_a_builder_builds_what_the_class_builds() -> None:
    fields = {"message_id": "m1", "delta": "hi", "seq": 3, "session_id": "s", "run_id": "r"}
    built, called = builder(TextDelta)(fields), TextDelta(**fields)
    assert type(built) is TextDelta
    assert built.model_dump(exclude={"at"}) == called.model_dump(exclude={"at"})
    assert built.model_fields_set == called.model_fields_set == set(fields)
    # Defaults are filled by their factories, per object, as the class fills them.
    first, second = builder(Message)({"role": Role.USER}), builder(Message)({"role": Role.USER})
    assert first.id != second.id and first.metadata == {} and first.metadata is not second.metadata
    assert builder(Usage)({"input_tokens": 2}) + Usage(output_tokens=3) == Usage(
        input_tokens=2, output_tokens=3
    )


def test_a_builder_validates_as_the_class_does() -> None:
    with pytest.raises(ValidationError, match="delta"):
        builder(TextDelta)({"message_id": "m1"})  # a required field missing
    with pytest.raises(ValidationError, match="tool_call_id"):  # the model's own validator
        builder(Message)({"role": Role.TOOL, "content": "4"})
    with pytest.raises(ValidationError, match="only assistant messages carry tool calls"):
        builder(Message)({"role": Role.USER, "tool_calls": (ToolCall(id="c", name="t"),)})
    with pytest.raises(ValidationError, match="duration_ms"):
        builder(ToolResult)({"call_id": "c", "name": "t", "content": "", "duration_ms": "slow"})
    # Frozen, as built by the class.
    with pytest.raises(ValidationError, match="frozen"):
        builder(Usage)({}).input_tokens = 1  # type: ignore[misc]
