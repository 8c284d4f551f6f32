"""Changing what was said: retry the person's last message, edit it, or clear the chat.

An edit waits for a turn that is ending to end, refuses to run beside a turn or another
edit, cuts the history (in the store too) and, for retry and edit, sends the message again,
keeping the role switch it carried. One layer of `Interpreter` (see `gui_agent.interpreter`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from gui_agent.exceptions import Conflict, InvalidRequest
from gui_agent.session import written_by_person
from gui_agent.turn import TurnRunner
from schema import ImagePart, InterpreterState, Message, SessionUpdated

if TYPE_CHECKING:
    from schema import AgentName


class HistoryEdits(TurnRunner):
    """Retry, edit and clear, one at a time. The attributes are set by
    `Interpreter.__init__`."""

    _editing: bool  # a history edit is in progress: messages sent meanwhile are queued

    if TYPE_CHECKING:  # the next layer up, `Interpreter`, defines it

        async def send(
            self, text: str, *, images: Sequence[ImagePart] = (), agent: AgentName | None = None
        ) -> Message: ...

    async def retry(self, *, message_id: str | None = None) -> Message:
        """Run the last user message again, dropping what came after it. `message_id`: the
        message the caller means (see `edit_last`)."""
        with self._one_edit():
            index = await self._require_last_user("retry", message_id)
            last = self.session.history[index]
            await self._truncate(index)
            self._carry_switch(last)
            self._editing = False  # the edit is made: its message starts before any queued
            return await self.send(last.content, images=last.images)

    async def edit_last(
        self, text: str, *, images: Sequence[ImagePart] = (), message_id: str | None = None
    ) -> Message:
        """Replace the last user message with `text` (and `images`) and run it.

        `message_id`: the message the caller began editing. When another message of the
        person's came since (another tab, the API), it is Conflict and nothing changes:
        edited as it was, the newer message and its reply were dropped without a word."""
        with self._one_edit():
            index = await self._require_last_user("edit", message_id)
            if not text.strip() and not images:
                raise InvalidRequest("the message is empty")
            last = self.session.history[index]
            await self._truncate(index)
            self._carry_switch(last)
            self._editing = False
            return await self.send(text, images=images)

    def _carry_switch(self, replaced: Message) -> None:
        """A message run again (retry, edit) keeps the role switch it carried, merged with
        one made since (from where the kept one started to the role now)."""
        kept = replaced.metadata.get("switched")
        if not isinstance(kept, dict) or not isinstance(kept.get("from_agent"), str):
            return
        pending = self._switch
        if pending is None:
            self._switch = {str(key): str(value) for key, value in kept.items()}
        elif kept["from_agent"] == pending["to_agent"]:
            self._switch = None  # switched back to where it started
        else:
            self._switch = {**pending, "from_agent": kept["from_agent"]}

    async def clear(self) -> None:
        with self._one_edit():
            await self._settle()
            if self.busy:
                raise Conflict("stop the running turn before clearing")
            await self._truncate(0)
            self.session.goal = None

    async def _settle(self) -> None:
        """Let a run task that already announced STOP finish saving, unless more is coming
        (AutoChat or a queued message); and a turn that a Stop is ending, end."""
        await self._stopped()
        if (
            self.busy
            and self.state is InterpreterState.STOP
            and not self._auto.active
            and not self.session.inbox
        ):
            await self.wait_idle()

    async def _require_last_user(self, action: str, message_id: str | None = None) -> int:
        await self._settle()
        if self.busy:
            raise Conflict("stop the running turn first")
        index = self.session.last_user_index()
        if index is None:
            raise InvalidRequest(f"there is no message of yours to {action}")
        if message_id is not None and self.session.history[index].id != message_id:
            meant = next((m for m in self.session.history if m.id == message_id), None)
            if meant is None:  # never in this chat, or cut from it by an edit or a clear
                raise InvalidRequest(
                    f"no such message in this chat to {action}: message_id names none of its "
                    "messages (if it was edited or cleared elsewhere, load the chat again). "
                    "Nothing was changed"
                )
            if not written_by_person(meant):
                raise InvalidRequest(
                    f"message_id names a message that is not yours; only your last message "
                    f"can be {'retried' if action == 'retry' else 'edited'}. Nothing was changed"
                )
            raise Conflict(
                f"your last message is no longer the one you meant to {action}: another was "
                "sent since (in another tab or window). Nothing was changed"
            )
        return index

    @contextlib.contextmanager
    def _one_edit(self) -> Iterator[None]:
        """One history edit (retry, edit, clear) at a time: a second one arriving while the
        first waits on the store (a double click) is refused, not interleaved with it.

        A message sent meanwhile is queued: it is answered after the edited message (retry,
        edit), or once the conversation is cleared; if the edit fails, it starts then."""
        if self._editing:
            raise Conflict("another change to this conversation is still in progress")
        self._editing = True
        try:
            yield
        finally:
            self._editing = False
            if self.session.inbox and not self.busy and not self._closed:
                self._start(self.session.inbox.popleft())

    async def _truncate(self, length: int) -> None:
        del self.session.history[length:]
        if self._store is not None:
            await self._store_call(self._store.replace_messages(self.id, self.session.history))
        self._publish(SessionUpdated(fields={"history_length": length}))
