"""A tool that ran is never reported as having raised because its return value is not JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gui_agent.tools import ToolContext, ToolRegistry, execute_tool, tool
from schema import ToolCall


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(session_id="s1", run_id="r1", call_id="c1", workdir=tmp_path)


class Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("repr is broken")

    __str__ = __repr__


def returning(value: Any, name: str) -> ToolRegistry:
    def produce() -> Any:
        """Produce a value."""
        return value

    return ToolRegistry([tool(produce, name=name)])


def cyclic() -> list[Any]:
    value: list[Any] = [1]
    value.append(value)
    return value


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ({("x", 1): "pair keys"}, "{('x', 1): 'pair keys'}"),
        (cyclic(), "[1, [...]]"),
    ],
)
async def test_a_result_json_cannot_write_is_shown_as_python_writes_it(
    ctx: ToolContext, value: Any, shown: str
) -> None:
    result = await execute_tool(
        returning(value, "counts"), ToolCall(id="c1", name="counts", arguments="{}"), ctx
    )

    assert (result.content, result.is_error) == (shown, False)


async def test_a_result_that_cannot_be_shown_says_the_tool_ran(ctx: ToolContext) -> None:
    result = await execute_tool(
        returning({(1,): Unprintable()}, "probe"),
        ToolCall(id="c1", name="probe", arguments="{}"),
        ctx,
    )

    assert result.is_error
    assert "raised" not in result.content  # the tool did not fail; showing its value did
    assert result.content.startswith("probe ran, but its result (a dict) could not be")
    assert "repr is broken" in result.content
