"""What every route group of one API app shares (see `backends.api.app`): the session
manager, the authenticator, the OpenAPI body registry, the app's limits, and the per-app
bookkeeping (event epochs, one retry/edit/clear at a time per session).

One `ApiContext` is built per `create_api` call, so two apps in one process share nothing;
the bookkeeping is keyed weakly by interpreter, so a session released from memory takes
its entries with it.
"""

from __future__ import annotations

import asyncio
import secrets
import weakref
from dataclasses import dataclass, field

from fastapi import Request

from backends.api.auth import Authenticator
from backends.api.errors import not_found
from backends.api.openapi import RequestBodies
from gui_agent.interpreter import Interpreter
from gui_agent.manager import SessionManager
from schema import SessionRecord

MAX_SESSION_ID_CHARS = 128


@dataclass(slots=True)
class ApiContext:
    """The collaborators and limits of one API app, and its per-session bookkeeping.

    `max_body_bytes` caps a JSON body, `max_import_bytes` an import; an event stream sends
    a keep-alive every `keepalive_s` and checks its caller's access every `auth_recheck_s`
    seconds; `notice` goes out with the models, and `left_out` (why models the environment
    configures are not offered); `closing`, once set, ends the chats-list streams."""

    manager: SessionManager
    auth: Authenticator
    bodies: RequestBodies
    max_body_bytes: int
    max_import_bytes: int
    keepalive_s: float
    auth_recheck_s: float
    notice: str | None = None
    left_out: tuple[str, ...] = ()
    closing: asyncio.Event | None = None
    # Sequence numbers restart when a session's interpreter is rebuilt (a server restart,
    # or an idle session released from memory); an epoch names one run of numbers.
    epochs: weakref.WeakKeyDictionary[Interpreter, str] = field(
        default_factory=weakref.WeakKeyDictionary
    )
    # One retry, edit or clear at a time per session: a second one (a double click) is 409.
    edit_locks: weakref.WeakKeyDictionary[Interpreter, asyncio.Lock] = field(
        default_factory=weakref.WeakKeyDictionary
    )

    def epoch_of(self, interpreter: Interpreter) -> str:
        return self.epochs.setdefault(interpreter, secrets.token_hex(8))

    def edit_lock(self, interpreter: Interpreter) -> asyncio.Lock:
        return self.edit_locks.setdefault(interpreter, asyncio.Lock())

    async def session_of(
        self, request: Request, session_id: str, *, cookie: bool = False
    ) -> Interpreter:
        """The caller's session `session_id`; 404 for an unknown one or someone else's."""
        owner = await self.auth.owner(request, cookie=cookie)
        if not session_id or len(session_id) > MAX_SESSION_ID_CHARS:
            raise not_found()
        return await self.manager.get(session_id, owner)

    async def record_of(self, interpreter: Interpreter) -> SessionRecord:
        """The session's record as it is now, with the store's creation and update times."""
        live = interpreter.session.to_record(interpreter.state)
        stored = await self.manager.store.get_session(
            interpreter.id, owner=interpreter.session.owner
        )
        if stored is None:
            return live
        return live.model_copy(
            update={"created_at": stored.created_at, "updated_at": stored.updated_at}
        )
