"""A set of tools by name: what an agent may call and what the model is shown."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from gui_agent.exceptions import ToolDefinitionError
from gui_agent.tools.definition import Tool
from schema import ToolSchema


class ToolRegistry:
    """Tools in the order they were added. Names are unique."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._schemas: tuple[ToolSchema, ...] | None = None
        for item in tools:
            self.add(item)

    def add(self, tool: Tool) -> None:
        """Register a tool; a second tool with the same name raises `ToolDefinitionError`."""
        if not isinstance(tool, Tool):
            raise ToolDefinitionError(f"{tool!r} is not a Tool; decorate the function with @tool")
        if tool.name in self._tools:
            raise ToolDefinitionError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool
        self._schemas = None

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def schemas(self) -> tuple[ToolSchema, ...]:
        """What the model is told about every tool, in registration order.

        Built once per change of the registry: this runs before every model call. The
        schemas are frozen; providers must not change their parameter dicts.
        """
        if self._schemas is None:
            self._schemas = tuple(item.schema for item in self._tools.values())
        return self._schemas

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._tools)

    def with_tools(self, *tools: Tool) -> ToolRegistry:
        """A new registry holding these tools and then `tools`; this one is unchanged."""
        return ToolRegistry([*self._tools.values(), *tools])

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(tuple(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    def __repr__(self) -> str:
        return f"ToolRegistry({list(self._tools)!r})"
