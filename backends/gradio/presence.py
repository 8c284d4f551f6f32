"""Each open tab's keep-alive event, which also keeps a tab in step with its chat and its
chats list when they change without it.

A tab shows its chat live only while one of its own streaming events runs (a send, a retry,
AutoChat, following after opening). A chat can also move on from elsewhere: a message sent
from another tab or through the HTTP API starts a run, another tab clears it or picks
another role. The tab would keep showing the chat as it was (STOP while it runs, no
approval panel, Stop disabled). So the keep-alive event listens to the chat the tab shows,
and when it moves on while none of the tab's streams shows it, it changes the tab's hidden
`tab_wake` box; that box's change event `settle`s the view (app.py), which shows the chat
as it is now and follows it while it runs. It starts listening only after the tab opened
the chat, so it first reads what the chat did in between, from the event the tab opened
it at (`TabStreams.built`): a turn there settles the view too, and a changed field has
the tab catch up on its fields (`TabNews.missed`).

The chats list and the settings widgets are not part of that view. When the chat's title,
AutoChat or settings change elsewhere (`TabNews.notice`), a chat of the user is created,
imported, renamed or deleted anywhere (the session manager's change feed, which the
keep-alive listens to for the tab's user: `TabNews.changed`), starts or stops working or
waiting for an approval (its `activity` feed, listened to alike), or another tab's turn
reorders the list (`TabNews.chats_changed`), the keep-alive changes the hidden
`chats_wake` box instead, and `follow` shows the news: the list, and the fields of the
shown chat that changed. Nothing polls: the keep-alive waits on these signals. A chat made
after the page's load event began listing the chats, but before the keep-alive listened to
the feed, is news too (`TabNews.listening_to_list`).

When the tab's user is removed from the server's users (`SessionManager.revoke`), before
or while the keep-alive listens, the keep-alive says so in a notification and ends; the
server has ended the user's page login, so the tab's next request asks them to sign in.

A keep-alive also ends while its tab stays open: the server shuts down (`Handlers.closing`)
and starts again, or the event fails. The page then starts it again (page.js: once the
server answers, waiting longer after each try in a row), saying how many times it did
(`again`) and which chat it shows. One started again catches the tab up on what it missed:
its view settles unless one of its streams shows the chat, and `follow` shows its chats
list, and each box of the chat's settings, AutoChat and title whose value changed meanwhile
(the tab's base says what it last got: bases.py); a box whose value did not change keeps
what the person may be typing there. A tab has one keep-alive: a newer one supersedes an
older one still running, which ends (`TabNews.open`).
"""

from __future__ import annotations

import asyncio
import enum
import functools
import logging
from collections.abc import AsyncGenerator, Awaitable
from typing import Any

import gradio as gr

from backends.gradio.bases import Base
from backends.gradio.follow import FOLLOWED_FIELDS
from backends.gradio.form import based_fields
from backends.gradio.handlers import Handlers, owner_of, tab_of
from backends.gradio.layout import Page
from backends.gradio.panels import allowed_markdown, tools_markdown
from backends.gradio.saves import LIMITS, SETTINGS
from backends.gradio.stream import Updates, no_change
from gui_agent.events import Subscription
from gui_agent.interpreter import Interpreter
from gui_agent.log_text import loggable
from gui_agent.manager import ChatChange, ChatChangeKind
from schema import AgentSwitched, Event, InterpreterState, SessionUpdated, StateChanged

__all__ = ["KEEP_OPEN_S", "REMOVED_NOTE", "Presence", "Wake", "moves_on"]

logger = logging.getLogger(__name__)

REMOVED_NOTE = (
    "Your account was removed from this server, so your chats were stopped and you are "
    "signed out. Nothing you said is lost: ask the administrator to add you back."
)


KEEP_OPEN_S = 15.0
"""How often the keep-alive event yields, so that Gradio notices a closed tab."""

MAX_AGAIN_CHARS = 20
"""The page's count of restarts, as the keep-alive takes it (it only marks the wakes)."""


class Wake(enum.Enum):
    """Why a tab is woken: its chat moved on, or its chats list or settings changed."""

    VIEW = "view"
    CHATS = "chats"


def moves_on(event: Event) -> bool:
    """The event changes what a tab showing the chat must show: a run starts (a message,
    a retry, AutoChat), the history is cut (clear, retry, edit) or another role speaks."""
    if isinstance(event, StateChanged):
        return event.to_state is InterpreterState.RUNNING
    if isinstance(event, SessionUpdated):
        return "history_length" in event.fields
    return isinstance(event, AgentSwitched)


class _Listening:
    """The chat a tab's keep-alive listens to, and its subscription (kept across the
    keep-alive's yields, so no event is missed between two waits).

    `since`: the chat's event the tab opened it at (`TabStreams.built`). The events after it
    that came before the subscription are the tab's `missed` ones, read first; `lost` when
    the chat no longer holds them all (its buffer moved on, or it was loaded again)."""

    def __init__(self, interpreter: Interpreter, since: int | None = None) -> None:
        self.interpreter = interpreter
        self.subscription: Subscription = interpreter.subscribe()
        self.ended = False
        """The chat closed (deleted, or unloaded): look it up again."""
        self.missed: list[Event] = []
        self.lost = False
        start = interpreter.last_seq  # (no await since subscribing: later events come to it)
        if since is not None and start > since:
            self.missed = [e for e in interpreter.events_since(since) if e.seq <= start]
            self.lost = not self.missed or self.missed[0].seq != since + 1

    def close(self) -> None:
        self.subscription.close()


class Presence:
    """The keep-alive handler, and what it wakes the tab for (it shares the page's
    `Handlers`)."""

    def __init__(self, handlers: Handlers, *, keep_open_s: float = KEEP_OPEN_S) -> None:
        self.handlers = handlers
        self.keep_open_s = keep_open_s

    async def keep_open(
        self, request: gr.Request, again: str = "", shown: str = ""
    ) -> AsyncGenerator[Updates, None]:
        """Holds the tab's event stream open for as long as the tab is, or until the server
        shuts down (`Handlers.closing`), and wakes the tab when its chat moves on elsewhere
        or its chats list or settings change.

        Gradio's browser client opens its server-sent-event stream when an event starts and
        lets it close when none is left; an event sent while the stream is closing loses
        its reply, and the button that sent it stays busy. With this event always pending
        the stream never closes. It yields at least every `keep_open_s` so that Gradio
        notices a closed tab and ends it (a handler that never yields would hold its queue
        slot). At shutdown it ends at once, so the tab's connection does not hold the
        server up.

        `again` says how many times the page started it again after it ended ("" at page
        load), and `shown` which chat the tab shows, as the browser says: one started again
        catches the tab up on what it missed (module docstring).
        """
        tab, news, page = tab_of(request), self.handlers.news, self.handlers.page
        streams, owner = self.handlers.streams, owner_of(request)
        boxes = {Wake.VIEW: page.tab_wake, Wake.CHATS: page.chats_wake}
        again = (again or "").strip()[:MAX_AGAIN_CHARS]
        if again:
            streams.assume(tab, shown or "")
            logger.info("a tab's keep-alive starts again (%s)", loggable(again))
        lease = news.open(tab, owner, catch_up=bool(again))
        manager = self.handlers.manager
        feed = manager.changes.listen(owner, functools.partial(news.changed, tab))
        # (the list says which chats work: a chat that starts or stops is news too)
        working = manager.activity.listen(owner, functools.partial(news.changed, tab))
        news.listening_to_list(tab, self.handlers.list_changes(owner))  # (the load's missed)
        if self.handlers.manager.removed(owner):  # (removed before the feed was listened to)
            news.changed(tab, ChatChange(ChatChangeKind.OWNER_REMOVED, owner))
        wakes = 0

        def mark() -> str:  # (unique in the page: a keep-alive started again counts anew)
            return f"{again}.{wakes}" if again else str(wakes)

        listening: _Listening | None = None
        try:
            closing = self.handlers.closing
            current = streams.shown(tab)
            if again and current and not streams.showing(tab, current):
                wakes += 1
                yield {boxes[Wake.VIEW]: mark()}  # the chat may have moved on meanwhile
            else:
                yield no_change()
            while not closing.is_set() and news.holds(tab, lease):
                if news.removed(tab):
                    gr.Warning(REMOVED_NOTE, duration=None)
                    yield no_change()
                    break
                listening = await self._listen(tab, request, listening)
                wake = await self._next_wake(tab, listening)
                if closing.is_set() or not news.holds(tab, lease):
                    break  # (superseded: a newer keep-alive of the tab runs)
                if news.removed(tab):
                    continue  # said at the top of the loop
                if wake is None:
                    yield no_change()
                    continue
                wakes += 1
                if wake is Wake.CHATS:
                    news.told(tab)
                yield {boxes[wake]: mark()}
        finally:
            feed.close()
            working.close()
            if listening is not None:
                listening.close()
            if news.holds(tab, lease):
                streams.forget(tab)
                news.forget(tab, lease)

    async def follow(
        self, session_id: str, query: str, request: gr.Request, base: str = ""
    ) -> Updates:
        """Show the tab's news: its chats list as it is now, and the fields of the chat it
        shows that changed elsewhere (other fields keep what the person may be editing);
        what those show is the tab's `base` for them from now on (bases.py)."""
        tab, handlers = tab_of(request), self.handlers
        fields = handlers.news.take(tab)
        catch_up = handlers.news.take_catch_up(tab)
        shown = handlers.streams.shown(tab)
        current = session_id if shown is None else shown
        listed = handlers.news.take_list(tab, showing=current)
        if not listed and not fields and not catch_up:
            return no_change()  # the tab's own change came back: it shows it already
        owner = owner_of(request)
        interpreter = await handlers.lookup(current, request, quiet=True) if current else None
        if current and interpreter is None:
            return await self._gone(tab, current, owner, query)
        updates = await handlers.session_list_update(owner, current, query, tab=tab)
        if (fields or catch_up) and interpreter is not None and current == session_id:
            if catch_up:
                updates.update(self._caught_up(tab, interpreter, base))
            else:
                updates.update(self._changed_fields(tab, interpreter, fields, base))
        return updates

    async def _gone(self, tab: str, session_id: str, owner: str, query: str) -> Updates:
        """The chat the tab shows was deleted elsewhere (another tab, the HTTP API): the tab
        shows a new chat, as after New chat, and says why (it went on showing the deleted
        chat's messages). What is typed in its message box stays, for the new chat."""
        handlers = self.handlers
        handlers.streams.gone(tab, session_id)
        gr.Warning("This chat was deleted in another tab or window: this is a new chat.")
        return {
            **handlers.blank_view(owner).updates(full=True),
            **await handlers.no_chat(tab, owner, query),
        }

    def _caught_up(self, tab: str, interpreter: Interpreter, base: str) -> Updates:
        """The chat's settings, AutoChat and title, for a tab whose keep-alive started again
        (it may have missed any change). A box whose value on the server differs from what
        the tab last got for it (its base) changed meanwhile, and shows the value now; one
        that did not keeps what it shows, which the person may be typing. The model picker
        and the AutoChat switch save when they are used: they show the chat's. What the
        boxes show now is the tab's base."""
        page, handlers = self.handlers.page, self.handlers
        values = handlers.settings_values(interpreter)
        known = Base.decode(base)
        got = known.of(interpreter.id) if known is not None else {}
        moved = {
            name: value
            for name, value in handlers.shows(interpreter, values).items()
            if name not in got or got[name] != value
        }
        boxes = based_fields(page)
        updates: Updates = {boxes[name]: values[boxes[name]] for name in moved}
        for box in (page.model_picker, page.model_note, page.autochat_toggle):
            updates[box] = values[box]
        updates[page.allowed_panel] = allowed_markdown(interpreter.allowed_tools)
        updates[page.tools_panel] = tools_markdown(interpreter.tool_standings())
        updates.update(handlers.no_tool_picked())  # (a mode it shows may have changed)
        if any(name in moved for name in SETTINGS):
            updates[page.settings_note] = ""  # (it spoke of a box that changed)
        if any(name in moved for name in LIMITS):
            updates[page.limits_note] = ""
        kept = known if known is not None else Base(interpreter.id)
        updates[page.form_base] = kept.with_values(interpreter.id, moved).encode()
        status = self._autochat_status(tab, interpreter)
        if status is not None:
            updates[page.autochat_status] = status
        return updates

    def _changed_fields(
        self, tab: str, interpreter: Interpreter, fields: set[str], base: str
    ) -> Updates:
        page = self.handlers.page
        shows = field_components(page)
        values = {
            **self.handlers.settings_values(interpreter),
            page.allowed_panel: allowed_markdown(interpreter.allowed_tools),
            page.tools_panel: tools_markdown(interpreter.tool_standings()),
            **self.handlers.no_tool_picked(),
        }
        updates = {c: values[c] for name in fields for c in shows.get(name, ())}
        shown = self.handlers.shows(interpreter, values)
        got = {
            name: shown[name]
            for part in fields
            for name in BASE_FIELDS.get(part, ())
            if name in shown
        }
        updates[page.form_base] = Base.updated(base, interpreter.id, got)
        status = self._autochat_status(tab, interpreter) if "autochat" in fields else None
        if status is not None:
            updates[page.autochat_status] = status
        return updates

    def _autochat_status(self, tab: str, interpreter: Interpreter) -> str | None:
        """What the AutoChat panel says of the chat, for an update that is not a stream of
        it; None while the chat runs or a stream of it shows it. The tab's stream of a
        running chat says how AutoChat goes (the keep-alive starts one, `moves_on`), and a
        status taken here during the run could reach the tab after that stream's last word,
        and stay ("automatic turn 1 of 1" after it stopped)."""
        busy = interpreter.busy or interpreter.autochat_active
        if busy or self.handlers.streams.showing(tab, interpreter.id):
            return None
        return self.handlers.view_of(interpreter).panels.autochat

    async def _listen(
        self, tab: str, request: gr.Request | None, listening: _Listening | None
    ) -> _Listening | None:
        """Listen to the chat the tab shows now (None: a new chat, or one that is gone)."""
        shown = self.handlers.streams.shown(tab)
        if listening is not None:
            if not listening.ended and listening.interpreter.id == shown:
                return listening
            listening.close()
        interpreter = await self.handlers.lookup(shown, request, quiet=True) if shown else None
        if interpreter is None or self.handlers.streams.shown(tab) != interpreter.id:
            return None
        self.handlers.news.listening(tab)
        return _Listening(interpreter, since=self.handlers.streams.built_at(tab, interpreter.id))

    async def _next_wake(self, tab: str, listening: _Listening | None) -> Wake | None:
        """Wait, at most `keep_open_s`, for a reason to wake the tab: the chat it shows
        moved on while none of the tab's streams shows it (VIEW), or it has news (CHATS).
        None when the time is up, the tab shows another view, or the server closes."""
        news, streams = self.handlers.news, self.handlers.streams

        def has_news() -> bool:  # (a chat the tab itself just created is not news to it)
            return news.has_news(tab, showing=streams.shown(tab) or "")

        if listening is not None and (listening.missed or listening.lost):
            missed = self._missed(tab, listening)
            if missed is not None:
                return missed
        if has_news():
            return Wake.CHATS
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.keep_open_s
        stops: list[asyncio.Future[Any]] = [
            asyncio.ensure_future(streams.moved(tab)),
            asyncio.ensure_future(self.handlers.closing.wait()),
            asyncio.ensure_future(news.wait(tab)),
        ]
        try:
            while listening is not None and not listening.ended:
                left = deadline - loop.time()
                if left <= 0:
                    return None
                interpreter = listening.interpreter
                events, more = await _first(
                    listening.subscription.next_events(stop_at_idle=False), stops, left
                )
                listening.ended = not more
                for event in events:  # (news also when the view changes: kept for later)
                    if isinstance(event, SessionUpdated):
                        news.notice(tab, interpreter.id, event)
                if any(f.done() for f in stops[:2]) or streams.shown(tab) != interpreter.id:
                    return None
                if any(map(moves_on, events)) and not streams.showing(tab, interpreter.id):
                    return Wake.VIEW
                if news.pending(tab) or stops[2].done():
                    return Wake.CHATS if has_news() else None
            await _first_stop(stops, deadline - loop.time())
            moved_or_closing = any(f.done() for f in stops[:2])
            return Wake.CHATS if not moved_or_closing and has_news() else None
        finally:
            await _cancel(stops)

    def _missed(self, tab: str, listening: _Listening) -> Wake | None:
        """What the tab missed of its chat before its keep-alive listened: a run or a cut
        of the history wakes its view; a change of a followed field has the tab catch up on
        them all, by what it last got (a change it saved itself is no news then)."""
        missed, lost = listening.missed, listening.lost
        listening.missed, listening.lost = [], False
        interpreter, streams = listening.interpreter, self.handlers.streams
        if lost or any(map(_changes_followed, missed)):
            self.handlers.news.missed(tab)
        if (lost or any(map(moves_on, missed))) and not streams.showing(tab, interpreter.id):
            return Wake.VIEW
        return None


def _changes_followed(event: Event) -> bool:
    """The event changes a field a tab shows outside the chat's view (follow.py)."""
    return isinstance(event, SessionUpdated) and any(f in event.fields for f in FOLLOWED_FIELDS)


async def _first(
    work: Awaitable[tuple[list[Event], bool]], stops: list[asyncio.Future[Any]], timeout_s: float
) -> tuple[list[Event], bool]:
    """`work`'s result, or no events (and more to come) if one of `stops` or the timeout
    came first."""
    working = asyncio.ensure_future(work)
    try:
        await asyncio.wait(
            [working, *stops], timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED
        )
    finally:
        if not working.done():
            await _cancel([working])
    return working.result() if not working.cancelled() else ([], True)


async def _first_stop(stops: list[asyncio.Future[Any]], timeout_s: float) -> None:
    """Until one of `stops` is done, or `timeout_s` passed."""
    await asyncio.wait(stops, timeout=max(timeout_s, 0), return_when=asyncio.FIRST_COMPLETED)


async def _cancel(tasks: list[asyncio.Future[Any]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.wait(tasks)


def field_components(page: Page) -> dict[str, list[Any]]:
    """The components that show each followed field of a chat (as `session_updated` names
    it), which `Presence.follow` sets when it changed elsewhere."""
    return {
        "title": [page.rename_box],
        "autochat": [
            page.autochat_toggle,
            *page.autochat_limits().values(),
            page.limits_note,
        ],
        "allowed_tools": [page.allowed_panel, page.tools_panel],
        "settings": [
            page.tools_panel,  # (a tool's mode is kept with the settings)
            page.tool_picker,  # (emptied: a mode shown for the tool picked may be stale)
            page.tool_mode,
            page.model_picker,
            page.model_note,
            page.system_prompt,
            page.temperature,
            *page.advanced_settings().values(),
            page.settings_note,
        ],
    }


BASE_FIELDS = {"settings": SETTINGS, "autochat": LIMITS, "title": ("title",)}
"""The fields of the tab's base (bases.py) each followed field of a chat holds."""
