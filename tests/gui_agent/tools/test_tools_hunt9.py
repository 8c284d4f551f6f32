"""Tool results as the model reads them (hunt 9)."""

from __future__ import annotations

import enum
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from gui_agent.tools import (
    ApprovalView,
    ToolContext,
    ToolOutput,
    ToolRegistry,
    approval_view,
    execute_tool,
    tool,
)
from schema import Message, Role, ToolCall, ToolCallFinished


class Colour(enum.Enum):
    RED = "red"


class Hit(BaseModel):
    title: str
    tags: list[str]
    colour: Colour = Colour.RED


@dataclass
class Found:
    count: int
    first: Hit


async def test_models_dataclasses_enums_and_sets_inside_a_result_stay_json(
    tmp_path: Path,
) -> None:
    # A developer's search tool returns a list of pydantic models: the model must get their
    # fields as JSON, not "title='a' tags=['x']" strings.
    @tool
    def search() -> list[Hit]:
        """Search."""
        return [Hit(title="a", tags=["x"]), Hit(title="b", tags=[])]

    @tool
    def summary() -> dict[str, object]:
        """Sum up."""
        return {"found": Found(1, Hit(title="a", tags=[])), "colour": Colour.RED, "ids": {7}}

    registry = ToolRegistry([search, summary])
    ctx = ToolContext(session_id="s", run_id="r", call_id="c", workdir=tmp_path)
    hits = await execute_tool(registry, ToolCall(id="1", name="search", arguments="{}"), ctx)
    assert json.loads(hits.content) == [
        {"title": "a", "tags": ["x"], "colour": "red"},
        {"title": "b", "tags": [], "colour": "red"},
    ]
    summed = await execute_tool(registry, ToolCall(id="2", name="summary", arguments="{}"), ctx)
    assert json.loads(summed.content) == {
        "found": {"count": 1, "first": {"title": "a", "tags": [], "colour": "red"}},
        "colour": "red",
        "ids": [7],
    }


class Handle:
    """Something of the developer's own that JSON cannot hold."""

    def __repr__(self) -> str:
        return "Handle(7)"


async def test_tool_output_metadata_json_cannot_hold_still_lets_the_session_be_saved(
    tmp_path: Path,
) -> None:
    @tool
    def rich() -> ToolOutput:
        """Do it."""
        return ToolOutput(
            "done",
            metadata={"handle": Handle(), "ids": {3}, "raw": b"\xff", "nested": {(1, 2): "x"}},
        )

    @tool
    def plain() -> ToolOutput:
        """Do it."""
        return ToolOutput("done", metadata={"handle": Handle(), "colour": Colour.RED, "n": 1})

    registry = ToolRegistry([rich, plain])
    ctx = ToolContext(session_id="s", run_id="r", call_id="c", workdir=tmp_path)
    for name in registry.names:
        result = await execute_tool(registry, ToolCall(id="1", name=name, arguments="{}"), ctx)
        assert result.content == "done" and not result.is_error
        message = Message(
            role=Role.TOOL, tool_call_id="1", content=result.content, metadata=result.metadata
        )
        # what the store and the event stream do with it; this raised before
        assert Message.model_validate_json(message.model_dump_json()) == message
        # and the event that carries it to front ends
        ToolCallFinished(result=result).model_dump_json()
    plain_result = await execute_tool(registry, ToolCall(id="2", name="plain"), ctx)
    assert plain_result.metadata == {"handle": "Handle(7)", "colour": "red", "n": 1}


async def test_arguments_a_model_encoded_twice_are_read(tmp_path: Path) -> None:
    @tool
    def add(a: int, b: int = 1) -> int:
        """Add."""
        return a + b

    registry = ToolRegistry([add])
    ctx = ToolContext(session_id="s", run_id="r", call_id="c", workdir=tmp_path)
    twice = json.dumps(json.dumps({"a": 2, "b": 3}))
    result = await execute_tool(registry, ToolCall(id="1", name="add", arguments=twice), ctx)
    assert (result.is_error, result.content) == (False, "5")
    text = await execute_tool(
        registry, ToolCall(id="2", name="add", arguments=json.dumps("two")), ctx
    )
    assert text.is_error
    assert "must be a JSON object, not str" in text.content


def returning(value: object) -> Callable[[dict[str, Any]], Any]:
    """An approval view that returns `value`, whatever it is (the tool's code may be wrong)."""
    return lambda _arguments: value


def test_an_approval_view_that_returns_a_plain_tuple_or_text_is_shown_not_a_crash() -> None:
    # Before, ask_person read `.summary` of whatever came back: the turn failed.
    def remove(path: str) -> str:
        """Remove a file."""
        return path

    shown: dict[str, object] = {
        "tuple": ("Remove x", "rm x"),
        "text": "rm x",
        "wrong": {"summary": "Remove x"},
        "bad parts": ("Remove x", 5),
    }
    call = ToolCall(id="1", name="remove", arguments='{"path": "x"}')
    views = {
        label: approval_view(tool(remove, approval_view=returning(value)), call)
        for label, value in shown.items()
    }
    assert views["tuple"] == ApprovalView("Remove x", "rm x")
    assert views["text"] == ApprovalView("Call remove", "rm x")
    for label in ("wrong", "bad parts"):  # the raw arguments, as for a view that raised
        assert views[label] == ApprovalView("Call remove", '{\n  "path": "x"\n}', "json")


async def test_an_integer_result_past_pythons_digit_limit_is_shown(tmp_path: Path) -> None:
    @tool
    def factorial(n: int) -> int:
        """n!"""
        return math.factorial(n)

    registry = ToolRegistry([factorial])
    ctx = ToolContext(session_id="s", run_id="r", call_id="c", workdir=tmp_path)
    result = await execute_tool(
        registry, ToolCall(id="1", name="factorial", arguments='{"n": 2000}'), ctx
    )
    assert not result.is_error
    assert result.content.startswith("33162750924506332411753933805763240382811172081057803945")
    assert len(result.content) == 5736 and result.content.isdigit()
    small = await execute_tool(
        registry, ToolCall(id="2", name="factorial", arguments='{"n": 5}'), ctx
    )
    assert small.content == "120"
