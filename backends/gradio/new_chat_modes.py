"""The tool modes a person sets in a new chat, before its first message makes it.

A new chat exists only once its first message is sent (a chat is saved with it), yet the
side panel offers to change what each tool does in it from the start. Such a change is kept
here, per tab, and the chat the tab's first message makes is made with it: the first turn
already runs with it. What the tab keeps is let go when the tab shows another view (New
chat, a chat opened), so a mode set for one new chat does not follow the person into the
next one. Kept on the server, by tab, like the attachments tray (attach.py); bounded. A
reloaded page is another tab to the server: the page keeps the modes too, and brings them
back (unsaved.py).
"""

from __future__ import annotations

from collections.abc import Mapping

from backends.gradio.bounded import keep_latest
from backends.gradio.tabs import MAX_TABS
from gui_agent.tools.permissions import with_mode
from schema import PermissionMode

__all__ = ["NewChatModes"]


class NewChatModes:
    """The tool modes each tab set for the new chat it shows (tool name -> mode)."""

    def __init__(self, *, max_tabs: int = MAX_TABS) -> None:
        self.max_tabs = max_tabs
        self._modes: dict[str, dict[str, PermissionMode]] = {}

    def of(self, tab: str) -> Mapping[str, PermissionMode]:
        """The modes `tab` set for its new chat (none: the app's own for every tool)."""
        return dict(self._modes.get(tab, {}))

    def set(self, tab: str, tool: str, mode: PermissionMode | None) -> Mapping[str, PermissionMode]:
        """`tool`'s mode for `tab`'s new chat (None: the app's own again); all of them now."""
        modes = with_mode(self._modes.get(tab, {}), tool, mode)
        if modes:
            keep_latest(self._modes, tab, modes, self.max_tabs)
        else:
            self._modes.pop(tab, None)
        return dict(modes)

    def forget(self, tab: str) -> None:
        """`tab` shows another view (or made its chat with them): nothing kept."""
        self._modes.pop(tab, None)
