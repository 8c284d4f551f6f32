"""What a history message shows as in the chatbot: a person's text as text (with the label
of a prompt the app or an agent wrote for them) and its images; an agent's reply under its
header, as Markdown, ending with a mark when it was interrupted, failed (with its error) or
cut off, and saying so when the model sent nothing. Pure."""

from __future__ import annotations

from collections.abc import Mapping

from backends.gradio.looks import (
    CUT_OFF_MARK,
    EMPTY_REPLY_MARK,
    ERROR_MARK,
    FILTERED_MARK,
    INTERRUPTED_MARK,
    agent_header,
    body_markdown,
    confirmation_markdown,
    error_line,
)
from backends.gradio.markdown import MediaLink, escape_html, images_markdown
from gui_agent.agents.crew import CREW_SPEAKER
from gui_agent.agents.model_call import FILTERED
from gui_agent.wording import prompt_label
from schema import AgentName, Message, MessageStatus, MessageType, Role

__all__ = ["crew_member_of", "error_mark", "failure_of", "header", "message_text", "user_text"]


def _empty(message: Message) -> bool:
    """A finished reply of the model with nothing to show: no text, image or tool call."""
    return (
        message.role is Role.ASSISTANT
        and message.status is MessageStatus.COMPLETE
        and not message.content.strip()
        and not message.images
        and not message.tool_calls
        and not message.display_only
    )


def header(
    agent: AgentName | None, icons: Mapping[str, str], crew_member: str | None = None
) -> str:
    """The agent's icon and name above what it says (nothing without an agent); a crew
    member's name with the crew's (`agent_header`)."""
    if agent is None:
        return ""
    return agent_header(agent, icons, crew_member=crew_member) + "\n\n"


def crew_member_of(message: Message) -> str | None:
    """The crew member who wrote a reply (`CREW_SPEAKER`), if a crew's member did."""
    name = message.metadata.get(CREW_SPEAKER)
    return name if isinstance(name, str) and name.strip() else None


def message_text(
    message: Message,
    *,
    icons: Mapping[str, str],
    link: MediaLink | None = None,
    crew_member: str | None = None,
) -> str:
    """The chatbot text of a history message. `link`: where its images are served
    (`image_markdown`). `crew_member`: the crew member who wrote it, when the view knows
    and the reply does not say (`crew_member_of`; one kept unmarked), "" for one not named
    yet (`CrewVoices`). A failed reply ends
    with the error it keeps, live as after a reload (the view drops the error's own note
    then: `ChatView`)."""
    if message.type is MessageType.CONFIRMATION:
        return confirmation_markdown(message)
    if message.role is Role.USER:
        return user_text(message, link)
    if message.metadata.get("note") == "interrupted" and message.metadata.get("display_only"):
        return f'<span class="ga-note">{escape_html(message.content)}</span>'  # the app's word
    prefix = ""
    if message.role is Role.SYSTEM:
        prefix = '<span class="ga-note">System:</span> '
    body = body_markdown(message.type, message.content, message.language, message.images, link)
    if _empty(message):
        body = EMPTY_REPLY_MARK
    member = crew_member_of(message) or crew_member
    text = header(message.agent, icons, member) + prefix + body
    if message.status is MessageStatus.INTERRUPTED:
        text = text.rstrip("\n") + "\n\n" + INTERRUPTED_MARK
    elif message.status is MessageStatus.ERROR:
        text = text.rstrip("\n") + "\n\n" + error_mark(message)
    if message.role is Role.ASSISTANT and message.metadata.get("cut_off") is True:
        text = text.rstrip("\n") + "\n\n" + CUT_OFF_MARK
    if message.role is Role.ASSISTANT and message.metadata.get(FILTERED) is True:
        text = text.rstrip("\n") + "\n\n" + FILTERED_MARK
    return text.rstrip("\n")


def user_text(message: Message, link: MediaLink | None = None) -> str:
    """A user message: its text shown as text, labelled when the app or an agent wrote it
    (a supervisor's task, a crew's hand-over, AutoChat's prompt, a plan step), then its
    images."""
    text = escape_html(message.content)
    label = prompt_label(message.metadata)  # (the words every front end uses)
    if label:
        meta = message.metadata
        if not any(meta.get(k) for k in ("delegated_by", "crew_member", "autochat")):
            text = escape_html(str(meta.get("step", ""))) or text  # a plan step: the step alone
        text = f'<span class="ga-autochat">{escape_html(label)}:</span> {text}'
    images = images_markdown(message.images, "attached image", link)
    return "\n\n".join(part for part in (text, images) if part)


def error_mark(message: Message) -> str:
    """How a failed reply ends: with the error it keeps ("Error: …"), or a plain mark when
    it keeps none (a chat saved by an older version)."""
    error = failure_of(message)
    return ERROR_MARK if error is None else error_line(*error)


def failure_of(message: Message) -> tuple[str, str] | None:
    """(code, message) of the error a failed reply keeps (`metadata["error"]`), if any."""
    error = message.metadata.get("error")
    if message.status is not MessageStatus.ERROR or not isinstance(error, dict):
        return None
    return str(error.get("code", "error")), str(error.get("message", ""))
