"""SessionManager: creates, restores, lists and closes the interpreters of every user.

The only object front ends hold. Every lookup is scoped to an owner: another user's session
is reported as not found, never as forbidden.

Each owner's chats list has a change feed (`SessionManager.changes`, see changes.py): the
manager announces every chat of theirs created, imported, renamed or deleted through it,
whichever front end asked, and the owner's removal (`revoke`).
A second feed (`SessionManager.activity`) announces each chat of theirs that starts or stops
working or waiting for an approval (`ChatChangeKind.ACTIVITY`), for lists that show it
(`working_state` says which state to show).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from gui_agent.agents import AgentDeps, Architecture, default_architectures
from gui_agent.changes import ChangeFeed, ChatChange, ChatChangeKind, Listening
from gui_agent.exceptions import AuthError, InvalidRequest, SessionNotFound
from gui_agent.hooks import AgentHooks
from gui_agent.interpreter import Interpreter
from gui_agent.llm import ModelCatalog
from gui_agent.log_text import loggable
from gui_agent.memory import SlidingWindowMemory
from gui_agent.session import (
    Session,
    marked_unanswered,
    unanswered_call_result,
    unanswered_calls,
)
from gui_agent.store.base import SessionStore as Store
from gui_agent.store.base import apply_retention
from gui_agent.tokens import TokenCounter, counter_for_model
from gui_agent.tools import PermissionPolicy, ToolRegistry, default_tools
from gui_agent.workspaces import remove_session_folder, session_folder
from schema import (
    AgentName,
    AutoChatSettings,
    InterpreterState,
    Message,
    Role,
    SessionRecord,
    SessionSettings,
)
from schema.requests import MAX_TITLE_CHARS, plain_title

__all__ = [
    "INTERRUPTED_NOTE",
    "ChangeFeed",
    "ChatChange",
    "ChatChangeKind",
    "Listening",
    "SessionManager",
    "SessionNotFound",  # re-exported
    "imported_title",
    "with_agent",
]

logger = logging.getLogger(__name__)

INTERRUPTED_NOTE = "The previous turn was interrupted when the server stopped."
UNANSWERED_AT_START = (
    "No result: the server stopped while this call waited for approval or ran. It may have "
    "run, in part or in full; check before running it again."
)


def with_agent(agent: Architecture | None) -> dict[str, Any]:
    """`SessionManager` fields for your own agent role (`--agent`): offered first, before
    the built-in roles (in place of one of the same name), and the role new chats start in
    (the page's role picker shows it first)."""
    if agent is None:
        return {}

    def roles() -> Mapping[AgentName, Architecture]:
        built_in = default_architectures().items()
        return {agent.name: agent, **{n: role for n, role in built_in if n is not agent.name}}

    return {"architectures_factory": roles, "default_agent": agent.name}


@dataclass(eq=False)
class SessionManager:
    models: ModelCatalog
    store: Store
    workspace_root: Path
    tools_factory: Callable[[], ToolRegistry] = default_tools
    permissions: PermissionPolicy = field(default_factory=PermissionPolicy)
    architectures_factory: Callable[[], Mapping[AgentName, Architecture]] = default_architectures
    hooks: AgentHooks = field(default_factory=AgentHooks)
    counter_factory: Callable[[str], TokenCounter] | None = None
    default_agent: AgentName | None = None
    """The role new sessions start in when none is asked for (by default the session's own
    default, the executor): e.g. the agent plugged in with `--agent`."""
    max_live: int = 200
    """Interpreters kept in memory; beyond it, idle ones are unloaded (see `_unload_idle`)."""
    _live: dict[str, Interpreter] = field(default_factory=dict, init=False)
    _memories: dict[str, SlidingWindowMemory] = field(default_factory=dict, init=False)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False)
    _removed: set[str] = field(default_factory=set, init=False)
    """Owners refused since `revoke` (until `readmit`)."""
    changes: ChangeFeed = field(default_factory=ChangeFeed, init=False)
    """Each owner's chats-list changes, for whoever shows that list (see the module doc)."""
    activity: ChangeFeed = field(default_factory=ChangeFeed, init=False)
    """Each owner's chats that began or ended working or waiting for an approval (ACTIVITY
    changes), for a list that shows it (`working_state`)."""
    interrupted_at_start: tuple[str, ...] = field(default=(), init=False)

    async def start(self) -> None:
        """Open the store and mark turns a crash left running as interrupted; the messages
        that waited for them are filed unanswered, as a Stop files them."""
        await self.store.open()
        self.interrupted_at_start = tuple(await self.store.mark_interrupted_runs())
        queued = await self.store.load_queued()
        for session_id in self.interrupted_at_start:
            # Calls the stop left without a result are answered first: a conversation with
            # an unanswered call is refused by every vendor, at every later message.
            found = unanswered_calls(await self.store.load_messages(session_id))
            if found is not None:
                asked, calls = found
                for call in calls:
                    answer = unanswered_call_result(
                        call, UNANSWERED_AT_START, agent=asked.agent, was_running=True
                    )
                    await self.store.append_message(session_id, answer)
            await self._file_unanswered(session_id, queued.pop(session_id, ()))
            note = Message(
                role=Role.ASSISTANT,
                content=INTERRUPTED_NOTE,
                metadata={"display_only": True, "note": "interrupted"},
            )
            await self.store.append_message(session_id, note)
        for session_id, messages in queued.items():  # (queued while a history was edited)
            await self._file_unanswered(session_id, messages)

    async def _file_unanswered(self, session_id: str, messages: Sequence[Message]) -> None:
        for message in messages:
            await self.store.append_message(session_id, marked_unanswered(message))
        if messages:
            logger.info(
                "session %s: %d message(s) that waited for the agent when the server stopped "
                "are kept, marked unanswered",
                session_id,
                len(messages),
            )

    async def close(self) -> None:
        for interpreter in list(self._live.values()):
            await interpreter.close()
        self._live.clear()
        await self.store.close()

    async def create(
        self,
        owner: str,
        *,
        agent: AgentName | None = None,
        model: str | None = None,
        settings: SessionSettings | None = None,
        title: str | None = None,
        origin: str = "",
    ) -> Interpreter:
        """A new session of `owner`'s (`origin`: see `ChatChange`)."""
        self._admitted(owner)
        settings = settings or SessionSettings()
        chosen = model or settings.model or self.models.default
        if chosen not in self.models.names():
            raise InvalidRequest(f"unknown model {chosen!r}; configured: {self.models.names()}")
        settings = settings.model_copy(update={"model": chosen})
        session = Session(owner=owner, settings=settings)
        agent = agent if agent is not None else self.default_agent
        if agent is not None:
            session.agent = agent
        if title is not None:
            session.title = plain_title(title)[:MAX_TITLE_CHARS]  # as Interpreter.update does
        await self.store.create_session(session.to_record(InterpreterState.INIT))
        interpreter = self._attach(session, InterpreterState.INIT)
        if owner in self._removed:  # revoked while the record was being written
            self._live.pop(interpreter.id, None)
            await interpreter.close()
            self._admitted(owner)
        self._announce(ChatChangeKind.CREATED, interpreter, origin)
        await self._unload_idle(keep=interpreter)
        return interpreter

    async def get(self, session_id: str, owner: str) -> Interpreter:
        if owner in self._removed:
            raise SessionNotFound("no such session: its owner was removed")
        live = self._live.pop(session_id, None)
        if live is not None:
            self._live[session_id] = live  # the most recently used is last
            if live.session.owner != owner:
                raise SessionNotFound("no such session")
            return live
        async with self._lock:
            live = self._live.get(session_id)
            if live is not None and live.session.owner == owner:
                return live
            if owner in self._removed:  # removed while this lookup waited for the lock
                raise SessionNotFound("no such session: its owner was removed")
            record = await self.store.get_session(session_id, owner=owner)
            if record is None:
                raise SessionNotFound("no such session")
            history = await self.store.load_messages(session_id)
            session = Session.from_record(record, history)
            state = record.state
            if state in (InterpreterState.RUNNING, InterpreterState.WAITING):
                state = InterpreterState.STOP
            interpreter = self._attach(session, state)
        await self._unload_idle(keep=interpreter)
        return interpreter

    async def import_session(
        self, record: SessionRecord, messages: Sequence[Message], *, origin: str = ""
    ) -> Interpreter:
        """Store an imported session (already owned by the importer) and open it. A model this
        server does not offer is replaced by the default. A title one of the owner's chats
        has already gets a mark, "(imported)" (then "(imported 2)", …): the list showed two
        chats it did not tell apart."""
        self._admitted(record.owner)
        if record.settings.model not in self.models.names():
            settings = record.settings.model_copy(update={"model": self.models.default})
            record = record.model_copy(update={"settings": settings})
        if record.title:
            taken = await self.store.list_sessions(record.owner, query=record.title, limit=10_000)
            title = imported_title(record.title, {chat.title for chat in taken})
            record = record.model_copy(update={"title": title})
        await self.store.create_session(record)
        if messages:
            try:
                await self.store.replace_messages(record.id, messages)
            except BaseException:  # no half-made chat (a title and no messages) is left
                with contextlib.suppress(Exception):
                    await asyncio.shield(self.store.delete_session(record.id, owner=record.owner))
                raise
        interpreter = await self.get(record.id, record.owner)
        self._announce(ChatChangeKind.IMPORTED, interpreter, origin)
        return interpreter

    async def list(
        self, owner: str, *, query: str | None = None, limit: int = 200, offset: int = 0
    ) -> list[SessionRecord]:
        """The owner's sessions, most recently touched first (none for a removed owner)."""
        if owner in self._removed:
            return []
        return await self.store.list_sessions(owner, query=query, limit=limit, offset=offset)

    async def rename(
        self, session_id: str, title: str, owner: str, *, origin: str = ""
    ) -> Interpreter:
        interpreter = await self.get(session_id, owner)
        await self.update(interpreter, title=title, origin=origin)
        return interpreter

    async def update(
        self,
        interpreter: Interpreter,
        *,
        settings: SessionSettings | None = None,
        autochat: AutoChatSettings | None = None,
        title: str | None = None,
        origin: str = "",
    ) -> None:
        """`Interpreter.update`, and a new title announced to the owner's listeners."""
        await interpreter.update(settings=settings, autochat=autochat, title=title)
        if title is not None:
            self._announce(ChatChangeKind.RENAMED, interpreter, origin)

    async def delete(self, session_id: str, owner: str, *, origin: str = "") -> None:
        """Stop the session and delete it, with its working folder (the files its tools made).
        Requests holding it meanwhile find it gone: sending raises SessionNotFound, and no
        lookup can bring it back from the store while the delete runs (lookups that miss wait
        for the same lock). Of two deletes of one session at once, the second finds it gone
        (SessionNotFound)."""
        interpreter = await self.get(session_id, owner)
        title = interpreter.session.title
        async with self._lock:
            self._live.pop(session_id, None)
            await interpreter.close()
            if not await self.store.delete_session(session_id, owner=owner):
                raise SessionNotFound("no such session: it was deleted")
        await self._remove_folders([(session_id, owner)])
        change = ChatChange(ChatChangeKind.DELETED, owner, session_id, title, origin)
        self.changes.announce(change)

    async def revoke(self, owner: str, *, reason: str = "the user was removed") -> int:
        """Refuse `owner` from now on and stop everything of theirs: each running turn is
        stopped (its partial reply saved, marked interrupted) and AutoChat ended with
        `reason`, then their sessions are closed, which ends every event stream on them.
        Their listeners are told (OWNER_REMOVED). The history stays in the store. Until
        `readmit`, lookups find none of their sessions and creating or importing one is
        refused (AuthError). Returns how many sessions were closed."""
        self._removed.add(owner)
        async with self._lock:
            theirs = [i for i in self._live.values() if i.session.owner == owner]
            for interpreter in theirs:
                self._live.pop(interpreter.id, None)
        for interpreter in theirs:
            await interpreter.stop(reason)
            await interpreter.close()
        logger.debug(
            "%s revoked: %d open session(s) stopped and closed", loggable(owner), len(theirs)
        )
        self.changes.announce(ChatChange(ChatChangeKind.OWNER_REMOVED, owner))
        return len(theirs)

    async def expire(self, *, days: int | None, now: datetime | None = None) -> int:
        """Apply retention (`apply_retention`) while serving: delete the sessions nobody
        touched for `days` days. One still open in memory (a tab left on it, idle all that
        time) is closed like a deleted one, which ends its streams, and its owner's lists
        are told; it is never left working on a session the store no longer has. Their
        working folders are deleted too. Returns how many were deleted."""
        if days is None:
            return 0
        async with self._lock:
            deleted = await apply_retention(self.store, days=days, now=now)
            if not deleted:
                return 0
            gone = [
                interpreter
                for interpreter in list(self._live.values())
                if await self.store.get_session(interpreter.id, owner=interpreter.session.owner)
                is None
            ]
            for interpreter in gone:
                self._live.pop(interpreter.id, None)
                await interpreter.close()
        await self._remove_folders(deleted)
        for interpreter in gone:
            session = interpreter.session
            change = ChatChange(ChatChangeKind.DELETED, session.owner, session.id, session.title)
            self.changes.announce(change)
        return len(deleted)

    async def _remove_folders(self, sessions: Sequence[tuple[str, str]]) -> None:
        """Delete the working folders of deleted `sessions` (id, owner). A folder that cannot
        be deleted is logged; the sessions are gone either way."""
        root = self.workspace_root

        def remove_all() -> None:
            for session_id, owner in sessions:
                try:
                    remove_session_folder(root, owner, session_id)
                except OSError:
                    logger.exception("session %s: its working folder was not deleted", session_id)

        if sessions:
            await asyncio.to_thread(remove_all)

    def readmit(self, owner: str) -> None:
        """Serve `owner` again (added back to the users file after `revoke`)."""
        if owner in self._removed:
            self._removed.discard(owner)
            logger.debug("%s readmitted", loggable(owner))

    def removed(self, owner: str) -> bool:
        """`owner` was revoked and not readmitted."""
        return owner in self._removed

    async def set_model(self, interpreter: Interpreter, model: str) -> None:
        if model not in self.models.names():
            raise InvalidRequest(f"unknown model {model!r}; configured: {self.models.names()}")
        interpreter.set_provider(self.models.get(model))
        interpreter.deps.memory = self._memory(model)
        settings = interpreter.session.settings.model_copy(update={"model": model})
        await interpreter.update(settings=settings)

    async def release(self, session_id: str) -> None:
        """Drop an idle interpreter from memory (it stays in the store)."""
        interpreter = self._live.get(session_id)
        if interpreter is not None and _unloadable(interpreter):
            self._live.pop(session_id, None)
            await interpreter.close()

    async def _unload_idle(self, *, keep: Interpreter) -> None:
        """Keep at most `max_live` interpreters in memory: unload the least recently used
        idle ones (no run, nobody subscribed, no approval open). They come back from the
        store, history and all, on the next lookup. `keep`, the one being handed to a
        caller, is never among them: closed, it would refuse the very request that asked
        for it (404) when every other live one is in use."""
        excess = len(self._live) - self.max_live
        if excess <= 0:
            return
        idle = [i for i in self._live.values() if i is not keep and _unloadable(i)][:excess]
        for interpreter in idle:
            self._live.pop(interpreter.id, None)
        for interpreter in idle:
            await interpreter.close()
        if idle:
            logger.debug("unloaded %d idle sessions (%d live)", len(idle), len(self._live))

    @property
    def live_count(self) -> int:
        return len(self._live)

    def working_state(self, session_id: str) -> InterpreterState | None:
        """RUNNING while a turn of the chat runs, WAITING while it waits for the person's
        approval; None otherwise (idle, or not in memory: only a live chat can work)."""
        live = self._live.get(session_id)
        state = live.state if live is not None else None
        return state if state in (InterpreterState.RUNNING, InterpreterState.WAITING) else None

    def _admitted(self, owner: str) -> None:
        if owner in self._removed:
            raise AuthError(f"{owner!r} was removed from this server's users")

    def _announce(self, kind: ChatChangeKind, interpreter: Interpreter, origin: str) -> None:
        session = interpreter.session
        change = ChatChange(kind, session.owner, session.id, session.title, origin)
        self.changes.announce(change)

    def _memory(self, model: str) -> SlidingWindowMemory:
        memory = self._memories.get(model)
        if memory is None:
            counter = (self.counter_factory or counter_for_model)(model)
            memory = SlidingWindowMemory(counter=counter)
            self._memories[model] = memory
        return memory

    def _titled(self, interpreter: Interpreter) -> None:
        """A turn titled the chat (its first message): its owner's lists show the title."""
        session = interpreter.session
        self.changes.announce(
            ChatChange(ChatChangeKind.RENAMED, session.owner, session.id, session.title)
        )

    def _state_changed(self, interpreter: Interpreter) -> None:
        """A chat's state changed: its owner's lists show whether it works (`activity`)."""
        session = interpreter.session
        change = ChatChange(ChatChangeKind.ACTIVITY, session.owner, session.id, session.title)
        self.activity.announce(change)

    def _attach(self, session: Session, state: InterpreterState) -> Interpreter:
        model = session.settings.model or self.models.default
        if model not in self.models.names():
            model = self.models.default
        if session.settings.model != model:
            # A model this server no longer offers: the session says which one answers it
            # now, as an import does, so its settings can be sent back as they read.
            logger.info(
                "session %s: model %r is not offered here; using %r",
                session.id,
                session.settings.model,
                model,
            )
            session.settings = session.settings.model_copy(update={"model": model})
        session.workdir = session_folder(self.workspace_root, session.owner, session.id)
        deps = AgentDeps(
            provider=self.models.get(model),
            tools=self.tools_factory(),
            permissions=self.permissions,
            memory=self._memory(model),
            hooks=self.hooks,
        )
        interpreter = Interpreter(
            session,
            deps,
            architectures=self.architectures_factory(),
            store=self.store,
            initial_state=state,
            on_titled=self._titled,
            on_state=self._state_changed,
        )
        self._live[session.id] = interpreter
        return interpreter


def _unloadable(interpreter: Interpreter) -> bool:
    return not (interpreter.busy or interpreter.watched or interpreter.pending_approvals)


_IMPORT_MARK: Final = re.compile(r" \(imported(?: \d+)?\)$")


def imported_title(title: str, taken: Collection[str]) -> str:
    """`title` for an imported chat, marked when a chat has it already (see `taken`), and
    kept within MAX_TITLE_CHARS."""
    if title not in taken:
        return title
    title = _IMPORT_MARK.sub("", title)  # a copy of a copy: numbered, not marked twice
    number = 1
    while True:
        mark = " (imported)" if number == 1 else f" (imported {number})"
        marked = title[: MAX_TITLE_CHARS - len(mark)] + mark
        if marked not in taken:
            return marked
        number += 1
