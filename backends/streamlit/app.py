"""A Streamlit front end for GuiAgent, over the HTTP + SSE API (`GuiAgentClient`).

Run it with `gui-agent streamlit` (it sets Streamlit's safe options; see `launch`), next to
a running `gui-agent serve`. It signs in and out (`signing`: a form when the server has
users), lists the person's chats, shows a chat's history, streams the reply as it is
written with the tool calls it makes, puts approvals to the person (allow once, for this
chat, or deny, with a note), and stops a turn; `actions` holds the other controls
(Retry, Edit, Clear, Rename, Delete), `transfer` export and import, and `replay` an export
shown step by step in place of a chat. Everything it shows comes from the API; it keeps no
chat state of its own beyond which chat is open (and an export waiting to be saved, a
replay, messages sent during a turn until the history holds them, an edit the server
refused, and how many chats the sidebar lists; the text typed and not sent in each chat's
box is kept in the tab, see `drafts`), so a reload, or a turn started in another front end,
shows the same thing. Each control carries the chat it was drawn for, so a click that lands
as another chat opens acts on the chat shown; and what was kept for one person is cleared
when they sign out or another signs in.

Streamlit runs this script again on every interaction. While a turn runs, the script
follows its events (`_follow`): a thread reads the stream into a queue, and the script
wakes at least twice a second, so a click (Stop, another chat) is taken at once even while
a tool runs silently. A turn that ends, or asks for approval, has the script run again and
draw the chat from the history.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from typing import Any

import streamlit as st
from streamlit.typing import ChatInputValue

from backends.api.client import (
    ApiError,
    ClientError,
    ConnectionFailed,
    GuiAgentClient,
    NotFound,
    ResyncRequired,
    Unauthorized,
)
from backends.api.responses import SessionDetail
from backends.streamlit.actions import (
    IMAGE_TYPES,
    allowed_tools_panel,
    chat_actions,
    prompt_of,
    rename_box,
    tools_panel,
)
from backends.streamlit.autochat import (
    autochat_panel,
    note_autochat,
    read_up_to,
    resume_point,
)
from backends.streamlit.drafts import box_key, keep_drafts
from backends.streamlit.drawing import draw_call, draw_entry
from backends.streamlit.launch import DEFAULT_URL, URL_ENV
from backends.streamlit.reconnect import reached, try_again_later
from backends.streamlit.replay import replay_box, replay_view
from backends.streamlit.settings import settings_panel
from backends.streamlit.signing import sign_in, sign_out
from backends.streamlit.transfer import export_panel, import_box
from backends.streamlit.view import (
    LiveReply,
    entries_of,
    memory_lines,
    plain_markdown,
    safe_markdown,
    unanswered_calls,
    usage_line,
)
from gui_agent.wording import ALLOW_FOR_THIS_CHAT, AUTOCHAT_BETWEEN_TURNS, role_title
from schema import (
    ApprovalDecision,
    ApprovalRequested,
    AutoChatStopped,
    AutoChatTurn,
    BaseEvent,
    ErrorEvent,
    InterpreterState,
    RunFinished,
)
from schema.requests import MAX_MESSAGE_CHARS

logger = logging.getLogger(__name__)

WAKE_S = 0.5  # how often the script wakes while it follows a silent turn (a click is taken)
IDLE_CHECK_S = 2.0  # how often a silent turn is asked whether it is still running
AUTOCHAT_GRACE_S = 0.5  # how long after a turn's end its AutoChat events are waited for
CHATS_PAGE = 50  # how many chats the sidebar lists, and how many more each "Show more" adds


def _client() -> GuiAgentClient:
    state = st.session_state
    if "client" not in state:
        state.client = GuiAgentClient(os.environ.get(URL_ENV, DEFAULT_URL))
    client: GuiAgentClient = state.client
    return client


def _sidebar(client: GuiAgentClient, open_id: str | None) -> None:
    state = st.session_state
    with st.sidebar:
        st.caption(plain_markdown(f"Signed in as {state.user}"))
        if state.get("auth") == "password":  # (no one else signs in on the others)
            st.button("Sign out", key="sign-out", on_click=sign_out, args=(client,))
        if st.button("New chat", type="primary", width="stretch"):
            state.session_id = client.create_session().id
            state.pop("replaying", None)
            st.rerun()
        search = st.text_input(
            "Search chats",
            key="search",
            placeholder="Search by title",
            on_change=_first_page,  # a new search (or none) lists from the most recent again
        )
        shown = state.get("chats_shown", CHATS_PAGE)
        # One more than shown is asked for: whether there are more to offer.
        records = client.list_sessions(query=search or None, limit=shown + 1).sessions
        for record in records[:shown]:
            title = record.title or "Untitled chat"
            current = record.id == open_id
            if st.button(
                f"{'▸ ' if current else ''}{plain_markdown(title)}",
                key=f"open-{record.id}",
                width="stretch",
                disabled=current,
            ):
                state.session_id = record.id
                state.pop("replaying", None)
                st.rerun()
        if len(records) > shown:
            st.caption(f"Your {shown} most recent chats: search to find others.")
            if st.button("Show more chats", key="more-chats", width="stretch"):
                state.chats_shown = shown + CHATS_PAGE
                st.rerun()
        st.divider()
        import_box(client)
        replay_box(client)
        keep_drafts()


def _first_page() -> None:
    """The search changed: the sidebar lists its first page of chats, not as many as "Show
    more chats" had reached for the search before."""
    st.session_state.pop("chats_shown", None)


def _change(client: GuiAgentClient, session_id: str, field: str, key: str) -> None:
    """A picker's new value, saved before the script runs again (Streamlit's callback)."""
    try:
        client.update_session(session_id, **{field: st.session_state[key]})
    except ApiError as error:
        st.session_state.flash = error.message


def _settings(client: GuiAgentClient, detail: SessionDetail) -> None:
    """The chat's role and model, as the server has them (changed elsewhere too), saved as
    soon as they are picked."""
    record = detail.session
    state = st.session_state
    if "offer" not in state:  # the server's roles and models: asked once per tab
        state.offer = (client.agents(), client.models())
    agents, models = state.offer
    roles = [entry.name for entry in agents.agents]
    names = [entry.name for entry in models.models]
    left, right = st.columns(2)
    role_key, model_key = f"role-{record.id}", f"model-{record.id}"
    if record.agent in roles:
        state[role_key] = record.agent
    left.selectbox(
        "Agent role",
        roles,
        format_func=role_title,
        key=role_key,
        on_change=_change,
        args=(client, record.id, "agent", role_key),
    )
    current = record.settings.model or models.default
    if names:
        if current in names:
            state[model_key] = current
        right.selectbox(
            "Model",
            names,
            key=model_key,
            on_change=_change,
            args=(client, record.id, "model", model_key),
        )
    if models.notice:
        st.caption(plain_markdown(models.notice))
    for why in models.left_out:  # (models the server's environment names but cannot offer)
        st.caption(plain_markdown(why))
    # A slot drawn on every run, the word in it or not: what follows keeps its place, so a
    # section the person opened below (AutoChat, Settings) stays open when a refusal shows.
    slot = st.empty()
    if flash := state.pop("flash", None):
        slot.error(plain_markdown(flash))


def _approval(
    client: GuiAgentClient, session_id: str, request: ApprovalRequested, waiting: int
) -> None:
    """The oldest approval waiting; `waiting` counts it and those behind it."""
    with st.container(border=True):
        warning = " It changes things: check it first." if request.destructive else ""
        st.markdown(f"**Approval needed:** {plain_markdown(request.summary)}.{warning}")
        if waiting > 1:
            st.caption(f"{waiting - 1} more after this one.")
        if request.detail:
            st.code(request.detail, language=request.language)
        note = f"note-{request.approval_id}"
        st.text_input("A note for the agent (optional)", key=note)
        columns = st.columns(3)
        choices = (
            ("Allow once", ApprovalDecision.ALLOW_ONCE),
            (ALLOW_FOR_THIS_CHAT, ApprovalDecision.ALLOW_SESSION),
            ("Deny", ApprovalDecision.DENY),
        )
        for column, (label, decision) in zip(columns, choices, strict=True):
            column.button(
                label,
                key=f"{decision.value}-{request.approval_id}",
                on_click=_answer,
                args=(client, session_id, request.approval_id, decision, note),
            )


def _answer(
    client: GuiAgentClient,
    session_id: str,
    approval_id: str,
    decision: ApprovalDecision,
    note_key: str,
) -> None:
    """An approval button's callback, with the chat and approval it was drawn for (the chat
    open when the script runs again may be another)."""
    note = st.session_state.get(note_key) or None
    try:
        client.answer_approval(session_id, approval_id, decision, note=note)
    except ApiError as error:  # answered elsewhere meanwhile
        st.session_state.flash = error.message
    except ClientError as error:
        st.session_state.flash = str(error)


def _pump(stream: Any, inbox: queue.Queue[object]) -> None:
    try:
        for event in stream:
            inbox.put(event)
    except Exception as error:  # handed to the script, which shows it
        inbox.put(error)
    inbox.put(None)


def _follow(client: GuiAgentClient, detail: SessionDetail) -> None:
    """Show the running turn as it goes, until it ends or asks for approval, then draw the
    chat again from the history. The events this tab has not read yet that the history
    already holds (up to `last_seq`) are read first, for what AutoChat said of them; with
    no turn running, only those are read. A call still running begins with what it printed
    up to `last_seq` (the detail's `running_calls`). While AutoChat waits between two turns
    (the run goes on, no turn runs) it says so, and its next event has the script run again
    (the next turn, followed from its start, or AutoChat's stop)."""
    session_id, last, epoch = detail.session.id, detail.last_seq, detail.epoch
    live_turn = detail.busy and not detail.pending_approvals
    between = live_turn and detail.autochat_active and detail.state is InterpreterState.STOP
    since = resume_point(detail)
    if since is None:  # the chat as shown now is where this tab starts reading
        read_up_to(session_id, epoch, last)
        since = last
    if not live_turn and since >= last:
        return
    # a reply already being written; a call already running (its output comes next)
    live = LiveReply.following(detail.streaming, detail.messages, detail.running_calls)
    started = checked = time.monotonic()
    if live_turn:
        with st.chat_message("assistant"):
            status = st.empty()
            body = st.empty()
        if between:  # (not "Working…": nothing runs until the next turn starts)
            status.caption(AUTOCHAT_BETWEEN_TURNS)
        elif live.text or live.retrying or any(view.output for view in live.calls):
            _draw_live(body, live)  # at once: the next event may be a retry's wait away
    stream = client.events(session_id, since=since, epoch=epoch)
    inbox: queue.Queue[object] = queue.Queue()
    threading.Thread(target=_pump, args=(stream, inbox), daemon=True).start()
    ending: float | None = None  # the turn ended: AutoChat's word on it comes right after
    # Drawn again at the end: a turn shown live (the history has its reply now), news the
    # page drawn from `detail` lacks. Only catching up on events that history already
    # holds changes nothing, unless AutoChat's word did: each run more would close a menu
    # the person has open.
    redraw = live_turn
    try:
        while True:
            wait = WAKE_S if ending is None else ending - time.monotonic()
            if wait <= 0:
                break
            try:
                item = inbox.get(timeout=min(wait, WAKE_S))
            except queue.Empty:
                if not live_turn:
                    break  # caught up as far as the server had gone
                if ending is not None:
                    continue
                now = time.monotonic()
                if not between:
                    status.caption(f"Working… {now - started:.0f} s")
                if now - checked >= IDLE_CHECK_S:
                    # The turn may have ended between the history read and the stream's
                    # start (its last events before `last_seq`): nothing more would come.
                    checked = now
                    if not client.get_session(session_id, limit=1).busy:
                        break
                continue
            if item is None:
                break
            if isinstance(item, ResyncRequired):
                redraw = True
                break  # events were missed: the history, drawn again, has them
            if isinstance(item, ConnectionFailed):  # longer than its own reconnects cover
                try_again_later("The connection to GuiAgent broke", item)
            if isinstance(item, Exception):
                st.error(plain_markdown(f"The event stream ended: {item}"))
                return
            if not isinstance(item, BaseEvent):
                continue
            read_up_to(session_id, epoch, item.seq)
            if note_autochat(session_id, item):
                redraw = True
            if item.seq <= last:  # in the history already: only AutoChat's word counts (what
                # a call still running printed by then came with `detail.running_calls`)
                if (not live_turn or (between and redraw)) and item.seq >= last:
                    break  # (AutoChat's word, caught up on, shows now, not after its wait)
                continue
            if not live_turn or between:
                redraw = True
                break  # a turn began meanwhile (or AutoChat's next one, or it stopped): the
                # script, run again, follows it
            if isinstance(item, ErrorEvent):
                st.error(plain_markdown(item.message))
            if live.apply(item):
                _draw_live(body, live)
            if isinstance(item, ApprovalRequested | AutoChatTurn | AutoChatStopped):
                break
            if isinstance(item, RunFinished):
                ending = time.monotonic() + AUTOCHAT_GRACE_S
    finally:
        stream.close()
        if (resume_point(detail) or 0) < last:  # whatever happened, not read again and again
            read_up_to(session_id, epoch, last)
    if redraw:
        st.rerun()


def _draw_live(body: Any, live: LiveReply) -> None:
    """The turn so far, in the placeholder `body` (each time whole, replacing the last)."""
    with body.container():
        heading = ""
        for part in live.parts:
            if not part.text:
                continue
            if part.speaker and part.speaker != heading:  # (as the history heads it)
                st.caption(plain_markdown(part.speaker))
            heading = part.speaker
            st.markdown(safe_markdown(part.text))
        if live.retrying:  # the reply has not begun: why, and when it is asked again
            st.caption(plain_markdown(live.retrying))
        for view in live.calls:
            draw_call(view)


def _chat(client: GuiAgentClient, session_id: str) -> None:
    try:
        detail = client.get_session(session_id)
    except NotFound:
        st.session_state.session_id = None
        st.rerun()
    record = detail.session
    heading, rename = st.columns([6, 1], vertical_alignment="center")
    heading.subheader(plain_markdown(record.title or "Untitled chat"))
    with rename:
        rename_box(client, session_id, record.title)
    if notice := st.session_state.pop("notice", None):
        st.success(plain_markdown(notice))
    st.caption(usage_line(record.usage))
    _settings(client, detail)
    autochat_panel(client, detail)
    settings_panel(client, detail)
    # Asked of the server only while shown (one request per script run then).
    if st.toggle("Memory: what the agent remembers", key=f"memory-{session_id}"):
        with st.container(border=True):
            for line in memory_lines(client.memory(session_id), detail.messages):
                st.text(line)
    allowed_tools_panel(client, detail)
    tools_panel(client, detail)
    chat_actions(client, detail)
    export_panel(client, detail)
    followed = detail.busy and not detail.pending_approvals  # (as `_follow` draws it live)
    running = [v.call_id for v in unanswered_calls(detail.messages)] if followed else []
    for entry in entries_of(detail.messages, live=running):  # (those: `_follow` draws them)
        draw_entry(entry)
    approvals = len(detail.pending_approvals)
    for request in detail.pending_approvals[:1]:  # one at a time, the oldest first
        _approval(client, session_id, request, approvals)
    _draw_waiting(session_id, detail)
    _message_box(client, session_id)
    _follow(client, detail)


def _draw_waiting(session_id: str, detail: SessionDetail) -> None:
    """Messages sent while a turn ran, until the history holds them (the agent took them,
    or a Stop kept them unanswered)."""
    waiting: dict[str, list[tuple[str, str]]] = st.session_state.setdefault("waiting", {})
    held = {message.id for message in detail.messages}
    still = [(id_, text) for id_, text in waiting.get(session_id, []) if id_ not in held]
    if not still:
        waiting.pop(session_id, None)
        return
    waiting[session_id] = still
    for _, text in still:
        with st.chat_message("user"):
            st.markdown(safe_markdown(text))
            st.caption("Waiting: the agent reads this when its current step ends.")


def _message_box(client: GuiAgentClient, session_id: str | None) -> None:
    """The chat's own message box (None: no chat open, one is made for the message). Its
    key is the chat's, so text typed in one chat stays out of the next one opened (and is
    back when that chat is opened again: `drafts`), and the message is sent by its callback
    to the chat whose box it is: pressed as another chat opens, it still goes where the
    person wrote it. Longer than the server takes, the text is refused as it is typed, not
    thrown away when sent."""
    key = box_key(session_id)
    st.chat_input(
        "Message the agent (attach pictures with the clip)",
        key=key,
        max_chars=MAX_MESSAGE_CHARS,
        accept_file="multiple",
        file_type=list(IMAGE_TYPES),
        on_submit=_send,
        args=(client, session_id, key),
    )


def _send(client: GuiAgentClient, session_id: str | None, key: str) -> None:
    """The message box's callback: what it holds, sent to its chat. A message sent during a
    turn is shown as waiting until the history holds it (`_draw_waiting`)."""
    state = st.session_state
    value: str | ChatInputValue | None = state.get(key)
    prompt = prompt_of(value)
    if prompt is None:
        return
    try:
        if session_id is None:
            session_id = state.session_id = client.create_session().id
        answer = client.send_message(session_id, prompt[0], images=prompt[1])
    except ApiError as error:
        state.flash = error.message
        return
    except ClientError as error:
        state.flash = str(error)
        return
    if answer.queued:
        queued = state.setdefault("waiting", {})
        queued.setdefault(session_id, []).append((answer.message_id, prompt[0]))


def main() -> None:
    st.set_page_config(page_title="GuiAgent", page_icon="💬", layout="wide")
    client = _client()
    try:
        if not sign_in(client):
            return
        session_id = st.session_state.get("session_id")
        _sidebar(client, session_id)
        reached()  # (the chats list came: the server answers)
        if replay_view():
            return
        if session_id is None:
            st.title("GuiAgent")
            st.info("Start a new chat, or open one from the list.")
            if flash := st.session_state.pop("flash", None):
                st.error(plain_markdown(flash))
            _message_box(client, None)
            return
        _chat(client, session_id)
    except Unauthorized:  # the token expired, or the user was removed
        st.session_state.user = None
        client.token = None
        st.warning("Your sign-in ended: sign in again.")
        sign_in(client)
    except ConnectionFailed as error:  # (it restarts, or the network dropped): by itself
        try_again_later("GuiAgent is not reachable", error)
    except NotFound:  # the chat was deleted elsewhere meanwhile
        st.session_state.session_id = None
        st.warning("This chat was deleted.")
    except ClientError as error:  # anything else the server refused: said, not a traceback
        st.error(plain_markdown(str(error)))


if __name__ == "__main__":  # as `streamlit run` runs it
    main()
