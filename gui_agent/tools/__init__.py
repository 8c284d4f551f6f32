"""Tools: plain Python functions a model can call, their execution, and permissions.

    @tool
    async def lookup(ctx: ToolContext, city: str) -> str:
        '''Look up the weather.

        Args:
            city: The city name.
        '''

`execute_tool` runs one call and always returns a `ToolResult` (errors are data);
`PermissionPolicy` decides whether a call runs, is refused or needs approval.
"""

from gui_agent.tools.builtin import TASK_COMPLETE, default_tools, task_complete
from gui_agent.tools.definition import (
    ApprovalView,
    Tool,
    ToolContext,
    ToolOutput,
    approval_view,
    tool,
)
from gui_agent.tools.execution import execute_tool
from gui_agent.tools.files import list_files, read_file, write_file
from gui_agent.tools.permissions import PermissionPolicy
from gui_agent.tools.python_runner import run_python
from gui_agent.tools.registry import ToolRegistry

__all__ = [
    "TASK_COMPLETE",
    "ApprovalView",
    "PermissionPolicy",
    "Tool",
    "ToolContext",
    "ToolOutput",
    "ToolRegistry",
    "approval_view",
    "default_tools",
    "execute_tool",
    "list_files",
    "read_file",
    "run_python",
    "task_complete",
    "tool",
    "write_file",
]
