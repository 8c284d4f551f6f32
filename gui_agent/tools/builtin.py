"""The tools every session starts with, and `task_complete`."""

from __future__ import annotations

from gui_agent.tools.definition import tool
from gui_agent.tools.files import list_files, read_file, write_file
from gui_agent.tools.python_runner import run_python
from gui_agent.tools.registry import ToolRegistry

TASK_COMPLETE = "task_complete"
"""The name of the tool an agent calls to declare the goal achieved (ends AutoChat)."""


@tool(name=TASK_COMPLETE)
def task_complete(summary: str) -> str:
    """Declare that the user's goal is fully achieved. Call it once, at the very end.

    Args:
        summary: A short summary of what was done, for the person.
    """
    return "Task marked complete."


def default_tools() -> ToolRegistry:
    """A new registry with run_python, list_files, read_file, write_file and task_complete."""
    return ToolRegistry([run_python, list_files, read_file, write_file, task_complete])
