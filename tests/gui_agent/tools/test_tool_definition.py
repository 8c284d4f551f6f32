"""@tool: schemas derived from signatures and docstrings, definition errors, approval views."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal, Optional

import pytest
from pydantic import BaseModel, Field

import gui_agent.tools as tools_package
from gui_agent.exceptions import ToolDefinitionError
from gui_agent.tools import (
    ApprovalView,
    Tool,
    ToolContext,
    ToolRegistry,
    approval_view,
    execute_tool,
    run_python,
    tool,
)
from schema import ToolCall, ToolSchema


class Point(BaseModel):
    x: int
    y: int


def test_exported_names_are_exactly_the_public_api() -> None:
    assert sorted(tools_package.__all__) == sorted(
        [
            "tool",
            "Tool",
            "ToolContext",
            "ToolOutput",
            "ApprovalView",
            "ToolRegistry",
            "PermissionPolicy",
            "execute_tool",
            "approval_view",
            "run_python",
            "list_files",
            "read_file",
            "write_file",
            "task_complete",
            "TASK_COMPLETE",
            "default_tools",
        ]
    )
    for name in tools_package.__all__:
        assert hasattr(tools_package, name)


def test_google_docstring_gives_description_and_parameter_descriptions() -> None:
    @tool
    def search(
        ctx: ToolContext,
        query: str,
        limit: int = 5,
        mode: Literal["fast", "deep"] = "fast",
        tags: list[str] | None = None,
    ) -> str:
        """Search the notes.

        Args:
            query: What to look for.
            limit (int): How many hits to return,
                at most.
            mode: Search depth.

        Returns:
            The hits.
        """
        return ""

    assert isinstance(search, Tool)
    assert search.name == "search"
    assert search.description == "Search the notes."
    params = search.parameters
    assert params["type"] == "object"
    assert params["required"] == ["query"]
    props = params["properties"]
    assert list(props) == ["query", "limit", "mode", "tags"]  # the context is hidden
    assert props["query"] == {"type": "string", "description": "What to look for."}
    assert props["limit"]["type"] == "integer"
    assert props["limit"]["default"] == 5
    assert props["limit"]["description"] == "How many hits to return, at most."
    assert props["mode"]["enum"] == ["fast", "deep"]
    assert props["mode"]["description"] == "Search depth."
    assert "description" not in props["tags"]
    assert "title" not in params
    assert params["additionalProperties"] is False


def test_sphinx_and_numpy_docstrings_are_understood() -> None:
    @tool
    def sphinx(a: str, b: int) -> str:
        """Do a thing.

        More detail here.

        :param a: The first
            argument.
        :param int b: The second.
        :returns: nothing useful
        """
        return a

    @tool
    def numpy(a: str) -> str:
        """Do another thing.

        Parameters
        ----------
        a : str
            The only argument.
        """
        return a

    assert sphinx.description == "Do a thing.\n\nMore detail here."
    assert sphinx.parameters["properties"]["a"]["description"] == "The first argument."
    assert sphinx.parameters["properties"]["b"]["description"] == "The second."
    assert numpy.description == "Do another thing."
    assert numpy.parameters["properties"]["a"]["description"] == "The only argument."


def test_options_override_name_and_description_and_reach_the_schema() -> None:
    @tool(name="rm", description="Remove a file.", destructive=True, timeout_s=5)
    async def remove(path: str) -> str:
        """Ignored."""
        return path

    assert remove.is_async
    assert (remove.name, remove.description, remove.timeout_s) == ("rm", "Remove a file.", 5)
    schema = remove.schema
    assert isinstance(schema, ToolSchema)
    assert schema.name == "rm"
    assert schema.destructive is True
    assert schema.parameters["required"] == ["path"]
    schema.parameters["properties"].clear()  # a copy: the tool is unchanged
    assert "path" in remove.parameters["properties"]


def test_constraints_and_models_appear_in_the_schema() -> None:
    @tool
    def plot(
        point: Point, size: Annotated[int, Field(ge=1, le=10, description="Marker size.")] = 3
    ) -> str:
        """Plot a point."""
        return ""

    props = plot.parameters["properties"]
    assert props["size"]["minimum"] == 1
    assert props["size"]["maximum"] == 10
    assert props["size"]["description"] == "Marker size."
    assert props["point"]["$ref"].endswith("Point")
    assert "Point" in plot.parameters["$defs"]


def test_parameter_names_that_clash_with_pydantic_are_fine() -> None:
    @tool
    def odd(json: str, schema: int, model_config: bool = False) -> str:
        """Names pydantic reserves for itself."""
        return json

    assert list(odd.parameters["properties"]) == ["json", "schema", "model_config"]
    args, kwargs = odd.bind({"json": "a", "schema": 2}, ToolContext("s", "r", "c", Path()))
    assert (args, kwargs) == ([], {"json": "a", "schema": 2, "model_config": False})


def test_functions_that_cannot_be_described_are_refused() -> None:
    def star_args(*values: int) -> str:
        return ""

    def star_kwargs(**values: int) -> str:
        return ""

    def unannotated(value) -> str:  # type: ignore[no-untyped-def]
        return ""

    with pytest.raises(ToolDefinitionError, match=r"\*args/\*\*kwargs"):
        tool(star_args)
    with pytest.raises(ToolDefinitionError, match=r"\*args/\*\*kwargs"):
        tool(star_kwargs)
    with pytest.raises(ToolDefinitionError, match="'value' needs a type annotation"):
        tool(unannotated)
    with pytest.raises(ToolDefinitionError, match="no usable name"):
        tool(lambda: "")
    with pytest.raises(ToolDefinitionError, match="must be 1-64"):
        tool(name="has space")(star_args)


def test_approval_view_uses_the_tools_view_and_falls_back_safely() -> None:
    code = "print('hello')"
    call = ToolCall(id="1", name="run_python", arguments=json.dumps({"code": code}))
    assert approval_view(run_python, call) == ApprovalView("Run Python code", code, "python")

    @tool
    def plain(city: str) -> str:
        """Weather."""
        return city

    view = approval_view(plain, ToolCall(id="2", name="plain", arguments='{"city": "Oslo"}'))
    assert view.summary == "Call plain"
    assert json.loads(view.detail) == {"city": "Oslo"}
    assert view.language == "json"

    broken = approval_view(plain, ToolCall(id="3", name="plain", arguments='{"city": '))
    assert "not a valid JSON object" in broken.summary
    assert broken.detail == '{"city": '

    def failing_view(arguments: dict[str, object]) -> ApprovalView:
        raise KeyError("code")

    fragile = tool(approval_view=failing_view)(plain.function)
    fallback = approval_view(fragile, ToolCall(id="4", name="plain", arguments='{"city": "Rome"}'))
    assert fallback.summary == "Call plain"
    assert "Rome" in fallback.detail


async def test_an_optional_tool_context_is_filled_in_and_never_shown_to_the_model(
    tmp_path: Path,
) -> None:
    @tool
    def save(name: str, ctx: ToolContext | None = None) -> str:
        """Save a note in the session folder."""
        assert ctx is not None
        (ctx.workdir / name).write_text("note")
        return str(ctx.workdir)

    @tool
    def mark(ctx: Annotated[Optional[ToolContext], "injected"], name: str) -> str:  # noqa: UP045
        """Mark a note."""
        return "no context" if ctx is None else ctx.call_id

    for each in (save, mark):
        assert list(each.parameters["properties"]) == ["name"]
        assert "$defs" not in each.parameters and "workdir" not in json.dumps(each.parameters)
        assert each.context_param == "ctx"
    ctx = ToolContext("s", "r", "call-1", tmp_path)
    registry = ToolRegistry([save, mark])
    outside = {"session_id": "x", "run_id": "x", "call_id": "x", "workdir": "/"}
    sneaked = json.dumps({"name": "n.txt", "ctx": outside})
    refused = await execute_tool(registry, ToolCall(id="1", name="save", arguments=sneaked), ctx)
    assert refused.is_error and "ctx: unexpected argument" in refused.content
    saved = await execute_tool(
        registry, ToolCall(id="2", name="save", arguments='{"name": "n.txt"}'), ctx
    )
    assert saved.content == str(tmp_path) and (tmp_path / "n.txt").read_text() == "note"
    marked = await execute_tool(
        registry, ToolCall(id="3", name="mark", arguments='{"name": "a"}'), ctx
    )
    assert marked.content == "call-1"


def test_tool_context_inside_another_type_or_an_unannotated_self_is_refused_clearly() -> None:
    def listed(contexts: list[ToolContext]) -> str:
        return ""

    def either(ctx: ToolContext | int) -> str:
        return ""

    class Notes:
        def add(self, text: str) -> str:
            return text

    with pytest.raises(ToolDefinitionError, match="'contexts' mixes ToolContext"):
        tool(listed)
    with pytest.raises(ToolDefinitionError, match="'ctx' mixes ToolContext"):
        tool(either)
    with pytest.raises(ToolDefinitionError, match=r"a method\? decorate the bound method"):
        tool(Notes.add)
    bound = tool(Notes().add)
    assert list(bound.parameters["properties"]) == ["text"]
