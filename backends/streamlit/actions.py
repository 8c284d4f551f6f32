"""What a person does to the open chat in the Streamlit front end, besides writing: Stop,
Retry the last turn, Edit their last message (and answer it again), Clear the conversation
and Delete the chat (each after a confirmation), Rename it, and a message with pictures
attached (`prompt_of`)."""

from __future__ import annotations

import base64
from collections.abc import Callable
from functools import partial

import streamlit as st
from streamlit.typing import ChatInputValue

from backends.api.client import ApiError, ClientError, GuiAgentClient
from backends.api.responses import SessionDetail
from backends.streamlit.forms import to_save
from backends.streamlit.view import plain_markdown
from gui_agent.session import written_by_person
from gui_agent.wording import allowed_tools_words, counted, tool_mode_words
from schema import ImagePart, Message
from schema.requests import MAX_MESSAGE_CHARS, MAX_TITLE_CHARS

__all__ = [
    "IMAGE_TYPES",
    "allowed_tools_panel",
    "chat_actions",
    "last_written",
    "prompt_of",
    "rename_box",
    "tools_panel",
]

IMAGE_TYPES = ("png", "jpg", "jpeg", "gif", "webp")
"""What the message box takes as attachments (the server checks their number and size)."""


def prompt_of(value: str | ChatInputValue | None) -> tuple[str, list[ImagePart]] | None:
    """The text and pictures of what the message box gave, or None when nothing was sent."""
    if value is None:
        return None
    if isinstance(value, str):
        return (value, []) if value.strip() else None
    images = [
        ImagePart(
            media_type=file.type or "image/png",
            data=base64.b64encode(file.getvalue()).decode("ascii"),
        )
        for file in value.files
    ]
    text = value.text or ""
    return (text, images) if text.strip() or images else None


def _run(action: str, call: Callable[[], object]) -> bool:
    """Run an action's request; the server's refusal (409: a turn runs) is said. True when
    it was done. Also a widget's callback (Streamlit runs it before the script runs again,
    with the chat id the widget was drawn for)."""
    try:
        call()
    except ApiError as error:
        st.session_state.flash = f"{action}: {error.message}"
        return False
    except ClientError as error:  # (a callback's error would be a traceback, not said)
        st.session_state.flash = f"{action}: {error}"
        return False
    return True


def _do(action: str, call: Callable[[], object]) -> None:
    """`_run` as a widget's callback."""
    _run(action, call)


def _act(action: str, call: Callable[[], object]) -> None:
    """`_run`, from the script itself: then the page is drawn again to show the result."""
    _run(action, call)
    st.rerun()


def _delete(client: GuiAgentClient, session_id: str) -> None:
    """Delete's callback: the chat deleted, and closed when it is still the one open."""
    state = st.session_state
    if _run("Delete", partial(client.delete_session, session_id)) and (
        state.get("session_id") == session_id
    ):
        state.session_id = None


def last_written(messages: list[Message]) -> Message | None:
    """The person's own last message (not AutoChat's, not a hand-over): what Edit changes."""
    return next((m for m in reversed(messages) if written_by_person(m)), None)


def chat_actions(client: GuiAgentClient, detail: SessionDetail) -> None:
    """Stop, Retry, Edit, Clear and Delete, each enabled when it can act."""
    session_id = detail.session.id
    running = detail.busy or bool(detail.pending_approvals)
    stop, retry, edit, clear, delete = st.columns(5)
    # Each control is keyed by its chat and acts through a callback given that chat's id:
    # a click that lands as another chat opens (the page still showing this one) acts on
    # this one, never on the chat the script runs for by then.
    stop.button(
        "Stop",
        key=f"stop-{session_id}",
        disabled=not running,
        width="stretch",
        on_click=_do,
        args=("Stop", partial(client.stop, session_id)),
    )
    last = last_written(detail.messages)
    shown = last.id if last is not None else None  # (sent with Retry: the server checks it)
    retry.button(
        "Retry last turn",
        key=f"retry-{session_id}",
        disabled=running or not detail.messages,
        width="stretch",
        on_click=_do,
        args=("Retry", partial(client.retry, session_id, message_id=shown)),
    )
    with edit.popover("Edit last message", width="stretch", disabled=running or last is None):
        if last is not None:
            _edit_form(client, session_id, last)
    with clear.popover("Clear chat", width="stretch", disabled=running or not detail.messages):
        st.write("Empty this conversation? Its settings stay.")
        st.button(
            "Clear",
            key=f"clear-{session_id}",
            type="primary",
            on_click=_do,
            args=("Clear", partial(client.clear, session_id)),
        )
    with delete.popover("Delete chat", width="stretch"):
        st.write("Delete this chat and its files, for good?")
        st.button(
            "Delete",
            key=f"delete-{session_id}",
            type="primary",
            on_click=_delete,
            args=(client, session_id),
        )


def allowed_tools_panel(client: GuiAgentClient, detail: SessionDetail) -> None:
    """The tools the person allowed for this session (they run without asking), with a
    button that makes every one of them ask again; nothing while none is allowed."""
    allowed = detail.allowed_tools
    if not allowed:
        return
    said, button = st.columns([3, 1], vertical_alignment="center")
    said.caption(plain_markdown(allowed_tools_words(allowed)))
    button.button(
        "Ask before every tool again",
        key=f"forget-allowed-{detail.session.id}",
        width="stretch",
        on_click=_do,
        args=("Ask again", partial(client.forget_allowed_tools, detail.session.id)),
    )


TOOL_MODES = {
    "": "As the app decides",
    "ask": "Ask me first",
    "allow": "Run without asking",
    "deny": "Never run",
}
"""The modes a person may set for a tool in a chat ("": the app's own), and their labels."""


def tools_panel(client: GuiAgentClient, detail: SessionDetail) -> None:
    """Each of the chat's tools, what a call of it does, and a choice to change that; asked
    of the server only while shown (one request per script run then)."""
    session_id = detail.session.id
    if not st.toggle("Tools: what each may do", key=f"tools-{session_id}"):
        return
    state = st.session_state
    with st.container(border=True):
        for tool in client.tools(session_id):
            words = tool_mode_words(tool.mode, tool.chosen, tool.allowed_for_session)
            key = f"tool-{session_id}-{tool.name}"
            state[key] = "" if tool.chosen is None else tool.chosen.value  # the server's
            st.selectbox(
                # (a tool's name is letters, digits, "_" and "-": nothing Markdown would read)
                f"{tool.name}: {words}",
                list(TOOL_MODES),
                key=key,
                format_func=TOOL_MODES.__getitem__,
                on_change=_set_mode,
                args=(client, session_id, tool.name, key),
            )


def _set_mode(client: GuiAgentClient, session_id: str, tool: str, key: str) -> None:
    """A tool's mode picked: saved at once (the script then runs again and shows it)."""
    mode = st.session_state[key]
    try:
        client.set_tool_mode(session_id, tool, mode or None)
    except ApiError as error:
        st.session_state.flash = f"{tool}: {error.message}"


def _edit_form(client: GuiAgentClient, session_id: str, last: Message) -> None:
    """The last message's text to change; it is answered again in place of what followed.
    Its pictures go with it unless the person lets them go."""
    text_key, keep_key = f"edit-text-{last.id}", f"edit-keep-{last.id}"
    with st.form(f"edit-{last.id}", border=False):
        st.text_area(
            "Your message",
            value=st.session_state.get(_draft(session_id), last.content),
            key=text_key,
            max_chars=MAX_MESSAGE_CHARS,
        )
        if last.images:
            st.checkbox(f"Keep its {counted(len(last.images), 'picture')}", True, key=keep_key)
        st.form_submit_button(
            "Send edited",
            type="primary",
            on_click=_send_edited,
            args=(client, session_id, last, text_key, keep_key),
        )


def _draft(session_id: str) -> str:
    return f"edit-draft-{session_id}"


def _send_edited(
    client: GuiAgentClient, session_id: str, last: Message, text_key: str, keep_key: str
) -> None:
    """Send edited's callback, with the message the form was drawn for: the server refuses
    the edit when another of the person's messages came since (another tab; by the time the
    script runs again the form would be another message's). The refusal is said, and the
    text written is kept for the next try, in whichever message's form comes next."""
    state = st.session_state
    text: str = state[text_key]
    images = list(last.images) if state.get(keep_key) else []
    edit = partial(client.edit_last, session_id, text, images=images, message_id=last.id)
    if _run("Edit", edit):
        state.pop(_draft(session_id), None)
    else:
        state[_draft(session_id)] = text


def rename_box(client: GuiAgentClient, session_id: str, title: str) -> None:
    """Rename: the title in a box, saved with the button (empty: the chat is untitled)."""
    with st.popover("Rename"), st.form(f"rename-{session_id}", border=False):
        typed = st.text_input("Chat title", value=title, max_chars=MAX_TITLE_CHARS)
        clicked = st.form_submit_button("Save title", type="primary")
        # (also when the click was lost to a change made right after it: `forms`)
        if to_save(f"rename-{session_id}", {"title": title}, {"title": typed}, clicked=clicked):
            _act("Rename", lambda: client.update_session(session_id, title=typed.strip()))
