"""What a person does to the open chat in the Streamlit front end, besides writing: Stop,
Retry the last turn, Edit their last message (and answer it again), Clear the conversation
and Delete the chat (each after a confirmation), Rename it, and a message with pictures
attached (`prompt_of`)."""

from __future__ import annotations

import base64
from collections.abc import Callable

import streamlit as st
from streamlit.typing import ChatInputValue

from backends.api.client import ApiError, GuiAgentClient
from backends.api.responses import SessionDetail
from backends.streamlit.view import plain_markdown
from gui_agent.session import written_by_person
from gui_agent.wording import allowed_tools_words, counted, tool_mode_words
from schema import ImagePart, Message
from schema.requests import MAX_TITLE_CHARS

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


def _act(action: str, call: Callable[[], object]) -> None:
    """Run an action's request; the server's refusal (409: a turn runs) is said."""
    try:
        call()
    except ApiError as error:
        st.session_state.flash = f"{action}: {error.message}"
    st.rerun()


def last_written(messages: list[Message]) -> Message | None:
    """The person's own last message (not AutoChat's, not a hand-over): what Edit changes."""
    return next((m for m in reversed(messages) if written_by_person(m)), None)


def chat_actions(client: GuiAgentClient, detail: SessionDetail) -> None:
    """Stop, Retry, Edit, Clear and Delete, each enabled when it can act."""
    session_id = detail.session.id
    running = detail.busy or bool(detail.pending_approvals)
    stop, retry, edit, clear, delete = st.columns(5)
    if stop.button("Stop", key="stop", disabled=not running, width="stretch"):
        _act("Stop", lambda: client.stop(session_id))
    if retry.button(
        "Retry last turn",
        key="retry",
        disabled=running or not detail.messages,
        width="stretch",
    ):
        _act("Retry", lambda: client.retry(session_id))
    last = last_written(detail.messages)
    with edit.popover("Edit last message", width="stretch", disabled=running or last is None):
        if last is not None:
            _edit_form(client, session_id, last)
    with clear.popover("Clear chat", width="stretch", disabled=running or not detail.messages):
        st.write("Empty this conversation? Its settings stay.")
        if st.button("Clear", key="clear", type="primary"):
            _act("Clear", lambda: client.clear(session_id))
    with delete.popover("Delete chat", width="stretch"):
        st.write("Delete this chat and its files, for good?")
        if st.button("Delete", key="delete", type="primary"):
            try:
                client.delete_session(session_id)
            except ApiError as error:
                st.session_state.flash = f"Delete: {error.message}"
            else:
                st.session_state.session_id = None
            st.rerun()


def allowed_tools_panel(client: GuiAgentClient, detail: SessionDetail) -> None:
    """The tools the person allowed for this session (they run without asking), with a
    button that makes every one of them ask again; nothing while none is allowed."""
    allowed = detail.allowed_tools
    if not allowed:
        return
    said, button = st.columns([3, 1], vertical_alignment="center")
    said.caption(plain_markdown(allowed_tools_words(allowed)))
    if button.button("Ask before every tool again", key="forget-allowed", width="stretch"):
        _act("Ask again", lambda: client.forget_allowed_tools(detail.session.id))


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
    with st.form(f"edit-{last.id}", border=False):
        text = st.text_area("Your message", value=last.content, key=f"edit-text-{last.id}")
        keep = bool(last.images) and st.checkbox(
            f"Keep its {counted(len(last.images), 'picture')}", value=True
        )
        if st.form_submit_button("Send edited", type="primary"):
            images = list(last.images) if keep else []
            _act("Edit", lambda: client.edit_last(session_id, text, images=images))


def rename_box(client: GuiAgentClient, session_id: str, title: str) -> None:
    """Rename: the title in a box, saved with the button (empty: the chat is untitled)."""
    with st.popover("Rename"), st.form(f"rename-{session_id}", border=False):
        typed = st.text_input("Chat title", value=title, max_chars=MAX_TITLE_CHARS)
        if st.form_submit_button("Save title", type="primary"):
            _act("Rename", lambda: client.update_session(session_id, title=typed.strip()))
