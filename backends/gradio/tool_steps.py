"""Tool calls and approvals as collapsible steps of the chatbot: a call's step (its name as
the title, what runs as its body, pending → done, its duration), its result as a child step
placed right after it, and the pending step of an approval while the person decides. Pure;
a part of `ChatView` (renderer.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from backends.gradio.chat_entries import ChatEntries, Entry
from backends.gradio.looks import arguments_markdown, result_markdown, tool_step_id
from backends.gradio.markdown import OUTPUT_LANGUAGE, MediaLink, escape_title, fence
from gui_agent.agents.tool_step import NOT_RUN
from gui_agent.live_output import SHOWN_CHARS, latest_output
from gui_agent.terminal_text import overwritten
from gui_agent.wording import counted
from schema import (
    ApprovalRequested,
    ImagePart,
    MessageStatus,
    MessageType,
    ToolCallOutput,
    ToolResult,
)

__all__ = [
    "APPROVAL_POINTER",
    "LIVE_SHOWN_CHARS",
    "LIVE_TITLE",
    "Call",
    "LiveText",
    "ToolSteps",
]

APPROVAL_POINTER = "Allow or deny it in the approval panel under the conversation."
"""The body of a pending approval's entry in the chat."""

LIVE_TITLE = "Output so far"
"""The title of a running call's output step, while it grows."""

LIVE_SHOWN_CHARS = SHOWN_CHARS
"""How much of a running call's output its step shows: the latest."""


@dataclass(slots=True)
class LiveText:
    """What a running call has printed so far: the latest LIVE_SHOWN_CHARS of it, and how
    much came before (left out here, or already by the session)."""

    text: str = ""
    left_out: int = 0

    def add(self, text: str, omitted: int) -> None:
        self.text, self.left_out = latest_output(self.text, self.left_out, text, omitted)

    def shown(self) -> str:
        text = overwritten(self.text)
        if not self.left_out:
            return text
        return f"…[{counted(self.left_out, 'earlier character')} not shown]…\n{text}"


@dataclass(slots=True)
class Call:
    """A tool call an assistant message asked for, and the history index of that message."""

    name: str
    arguments: str
    anchor: int


class ToolSteps(ChatEntries):
    """The chatbot's entries, with the steps of tool calls and approvals among them."""

    def __init__(self, media: MediaLink | None = None) -> None:
        super().__init__()
        self._calls: dict[str, Call] = {}
        self._printed: dict[str, LiveText] = {}
        """What running calls have printed so far (`tool_call_output`), until they finish."""
        self._media = media
        """Where the images shown are served (`image_markdown`); None: inline."""

    def _tool_step(self, call_id: str, name: str, arguments: str, *, anchor: int) -> Entry:
        key = f"tool:{call_id}"
        entry = self._by_key.get(key)
        if entry is None:
            entry = self._append(
                Entry(
                    key,
                    "assistant",
                    anchor,
                    arguments_markdown(name, arguments),
                    metadata={
                        "title": escape_title(name),
                        "id": tool_step_id(call_id),
                        "status": "pending",
                    },
                )
            )
        return entry

    def _live_output(self, event: ToolCallOutput) -> None:
        """Show what a running call has printed so far, as its output step (pending); its
        result replaces it. A call that has finished (its step is done) keeps its result."""
        step = self._by_key.get(f"tool:{event.call_id}")
        if step is None or (step.metadata or {}).get("status") == "done":
            return
        live = self._printed.setdefault(event.call_id, LiveText())
        live.add(event.text, event.omitted)
        out_key = f"tool:{event.call_id}:out"
        body = fence(live.shown(), OUTPUT_LANGUAGE)
        metadata = {
            "title": LIVE_TITLE,
            "id": f"{tool_step_id(event.call_id)}-out",
            "parent_id": tool_step_id(event.call_id),
            "status": "pending",
        }
        existing = self._by_key.get(out_key)
        if existing is None:
            entry = Entry(out_key, "assistant", step.anchor, body, metadata=metadata)
            self._by_key[out_key] = entry
            self._entries.insert(self._entries.index(step) + 1, entry)
        else:
            existing.set(body, **metadata)
        self.version += 1

    def _finished(self, result: ToolResult) -> None:
        call = self._calls.get(result.call_id)
        self._tool_result(
            result.call_id,
            name=result.name,
            content=result.content,
            is_error=result.is_error,
            duration_ms=result.duration_ms,
            message_type=result.message_type,
            images=result.images,
            status=MessageStatus.ERROR if result.is_error else MessageStatus.COMPLETE,
            arguments=call.arguments if call else None,
            anchor=call.anchor if call else self._tail(),
            not_run=bool(result.metadata.get(NOT_RUN)),
        )

    def _tool_result(
        self,
        call_id: str,
        *,
        name: str,
        content: str,
        is_error: bool,
        duration_ms: float | None,
        message_type: MessageType,
        images: Sequence[ImagePart],
        status: MessageStatus,
        arguments: str | None,
        anchor: int,
        was_running: bool = False,
        not_run: bool = False,
    ) -> None:
        """`not_run`: the call was refused before it ran (denied, not allowed, cut off)."""
        call = self._calls.get(call_id)
        step = self._tool_step(
            call_id,
            call.name if call else name,
            call.arguments if call else (arguments or "{}"),
            anchor=call.anchor if call else anchor,
        )
        if status is MessageStatus.INTERRUPTED:
            log = "interrupted"
        elif not_run:
            log = "not run"
        else:
            log = "error" if is_error else ""
        extra: dict[str, Any] = {"status": "done", "log": log}
        if duration_ms:
            extra["duration"] = round(duration_ms / 1000, 3)
        step.set(**extra)
        self._printed.pop(call_id, None)
        out_key = f"tool:{call_id}:out"
        body = result_markdown(content, message_type, images, self._media)
        title = "Not run" if not_run else "Error" if is_error else "Output"
        if status is MessageStatus.INTERRUPTED:
            title = "Interrupted" if was_running else "Not run"
        metadata = {
            "title": title,
            "id": f"{tool_step_id(call_id)}-out",
            "parent_id": tool_step_id(call_id),
        }
        existing = self._by_key.get(out_key)
        if existing is None:
            position = self._entries.index(step) + 1
            entry = Entry(out_key, "assistant", step.anchor, body, metadata=metadata)
            self._by_key[out_key] = entry
            self._entries.insert(position, entry)
        else:
            existing.metadata = None  # (not merged: the output so far was pending)
            existing.set(body, **metadata)
        self.version += 1

    def _approval(self, event: ApprovalRequested) -> None:
        # Where to answer, not what will run: the call's step above shows its arguments
        # and the approval panel under the chat shows exactly what will run, so a third
        # copy here would only push the conversation down.
        self._append(
            Entry(
                f"approval:{event.approval_id}",
                "assistant",
                self._tail(),
                APPROVAL_POINTER,
                metadata={
                    "title": f"Waiting for your approval: {escape_title(event.summary)}",
                    "id": f"approval-{event.approval_id}",
                    "status": "pending",
                },
                transient=True,
            )
        )
