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
from backends.gradio.markdown import MediaLink, escape_title
from gui_agent.agents.tool_step import NOT_RUN
from schema import ApprovalRequested, ImagePart, MessageStatus, MessageType, ToolResult

__all__ = ["APPROVAL_POINTER", "Call", "ToolSteps"]

APPROVAL_POINTER = "Allow or deny it in the approval panel under the conversation."
"""The body of a pending approval's entry in the chat."""


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
