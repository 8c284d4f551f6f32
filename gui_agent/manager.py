"""SessionManager: creates, restores, lists and closes the interpreters of every user.

The only object front ends hold. Every lookup is scoped to an owner: another user's session
is reported as not found, never as forbidden.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gui_agent.agents import AgentDeps, Architecture, default_architectures
from gui_agent.exceptions import InvalidRequest, SessionNotFound
from gui_agent.hooks import AgentHooks
from gui_agent.interpreter import Interpreter
from gui_agent.llm import ModelCatalog
from gui_agent.memory import SlidingWindowMemory
from gui_agent.session import Session
from gui_agent.store.base import SessionStore as Store
from gui_agent.tokens import TokenCounter, counter_for_model
from gui_agent.tools import PermissionPolicy, ToolRegistry, default_tools
from schema import (
    AgentName,
    InterpreterState,
    Message,
    MessageType,
    Role,
    SessionRecord,
    SessionSettings,
)

__all__ = ["INTERRUPTED_NOTE", "SessionManager", "SessionNotFound"]  # SessionNotFound: re-exported

logger = logging.getLogger(__name__)

INTERRUPTED_NOTE = "The previous turn was interrupted when the server stopped."


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
    max_live: int = 200
    """Interpreters kept in memory; beyond it, idle ones are unloaded (see `_unload_idle`)."""
    _live: dict[str, Interpreter] = field(default_factory=dict, init=False)
    _memories: dict[str, SlidingWindowMemory] = field(default_factory=dict, init=False)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False)
    interrupted_at_start: tuple[str, ...] = field(default=(), init=False)

    async def start(self) -> None:
        """Open the store and mark turns a crash left running as interrupted."""
        await self.store.open()
        self.interrupted_at_start = tuple(await self.store.mark_interrupted_runs())
        for session_id in self.interrupted_at_start:
            note = Message(
                role=Role.ASSISTANT,
                type=MessageType.CONSOLE,
                content=INTERRUPTED_NOTE,
                metadata={"display_only": True, "note": "interrupted"},
            )
            await self.store.append_message(session_id, note)

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
    ) -> Interpreter:
        settings = settings or SessionSettings()
        chosen = model or settings.model or self.models.default
        if chosen not in self.models.names():
            raise InvalidRequest(f"unknown model {chosen!r}; configured: {self.models.names()}")
        settings = settings.model_copy(update={"model": chosen})
        session = Session(owner=owner, settings=settings)
        if agent is not None:
            session.agent = agent
        await self.store.create_session(session.to_record(InterpreterState.INIT))
        interpreter = self._attach(session, InterpreterState.INIT)
        await self._unload_idle()
        return interpreter

    async def get(self, session_id: str, owner: str) -> Interpreter:
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
            record = await self.store.get_session(session_id, owner=owner)
            if record is None:
                raise SessionNotFound("no such session")
            history = await self.store.load_messages(session_id)
            session = Session.from_record(record, history)
            state = record.state
            if state in (InterpreterState.RUNNING, InterpreterState.WAITING):
                state = InterpreterState.STOP
            interpreter = self._attach(session, state)
        await self._unload_idle()
        return interpreter

    async def import_session(
        self, record: SessionRecord, messages: Sequence[Message]
    ) -> Interpreter:
        """Store an imported session (already owned by the importer) and open it. A model this
        server does not offer is replaced by the default."""
        if record.settings.model not in self.models.names():
            settings = record.settings.model_copy(update={"model": self.models.default})
            record = record.model_copy(update={"settings": settings})
        await self.store.create_session(record)
        if messages:
            await self.store.replace_messages(record.id, messages)
        return await self.get(record.id, record.owner)

    async def list(
        self, owner: str, *, query: str | None = None, limit: int = 200, offset: int = 0
    ) -> list[SessionRecord]:
        """The owner's sessions, most recently touched first."""
        return await self.store.list_sessions(owner, query=query, limit=limit, offset=offset)

    async def rename(self, session_id: str, title: str, owner: str) -> None:
        interpreter = await self.get(session_id, owner)
        await interpreter.update(title=title)

    async def delete(self, session_id: str, owner: str) -> None:
        """Stop the session and delete it. Requests holding it meanwhile find it gone:
        sending raises SessionNotFound, and no lookup can bring it back from the store while
        the delete runs (lookups that miss wait for the same lock)."""
        interpreter = await self.get(session_id, owner)
        async with self._lock:
            self._live.pop(session_id, None)
            await interpreter.close()
            await self.store.delete_session(session_id, owner=owner)

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

    async def _unload_idle(self) -> None:
        """Keep at most `max_live` interpreters in memory: unload the least recently used
        idle ones (no run, nobody subscribed, no approval open). They come back from the
        store, history and all, on the next lookup."""
        excess = len(self._live) - self.max_live
        if excess <= 0:
            return
        idle = [i for i in self._live.values() if _unloadable(i)][:excess]
        for interpreter in idle:
            self._live.pop(interpreter.id, None)
        for interpreter in idle:
            await interpreter.close()
        if idle:
            logger.debug("unloaded %d idle sessions (%d live)", len(idle), len(self._live))

    @property
    def live_count(self) -> int:
        return len(self._live)

    def _memory(self, model: str) -> SlidingWindowMemory:
        memory = self._memories.get(model)
        if memory is None:
            counter = (self.counter_factory or counter_for_model)(model)
            memory = SlidingWindowMemory(counter=counter)
            self._memories[model] = memory
        return memory

    def _attach(self, session: Session, state: InterpreterState) -> Interpreter:
        model = session.settings.model or self.models.default
        if model not in self.models.names():
            model = self.models.default
        session.workdir = self.workspace_root / session.owner_folder() / session.id
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
        )
        self._live[session.id] = interpreter
        return interpreter


def _unloadable(interpreter: Interpreter) -> bool:
    return not (interpreter.busy or interpreter.watched or interpreter.pending_approvals)
