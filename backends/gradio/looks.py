"""How each kind of message looks in the chat: pure functions from content to Markdown.

Text a person or a model wrote always goes through `escape_html`; the HTML built here
(icons, role names, small labels) is the app's own.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence

from backends.gradio.markdown import (
    OUTPUT_LANGUAGE,
    MediaLink,
    escape_html,
    escape_title,
    fence,
    images_markdown,
    json_or_text,
    model_ids_as_code,
)
from gui_agent.wording import crew_title, role_title
from schema import AgentName, ImagePart, Message, MessageStatus, MessageType

__all__ = [
    "CUT_OFF_MARK",
    "EMPTY_REPLY_MARK",
    "ERROR_MARK",
    "FILTERED_MARK",
    "INTERRUPTED_MARK",
    "UNANSWERED_MARK",
    "agent_header",
    "arguments_markdown",
    "body_markdown",
    "code_span",
    "confirmation_markdown",
    "error_line",
    "preview",
    "result_markdown",
    "tool_step_id",
]

INTERRUPTED_MARK = "_[interrupted]_"
UNANSWERED_MARK = (
    "_Not answered: the turn your message above waited for was stopped before the agent "
    "read it. Send it again to have it answered._"
)
"""A line of its own, on the app's side, right after a message of the person's a Stop left
unanswered (`turn_end.UNANSWERED`): not inside that message's bubble, where the next message
of the person's (grouped with it) read as unanswered too."""
ERROR_MARK = "_[error]_"
"""How a failed reply that keeps no error (an older chat's) ends; one that keeps its error
ends with it (`error_line`)."""
EMPTY_REPLY_MARK = "_The model sent no text._"
"""The body of a finished reply with nothing in it: no text, images or tool calls."""
FILTERED_MARK = (
    '<span class="ga-cut-off">Stopped by the provider\'s content filter (or the model '
    "declined): what it wrote before is kept. Rephrase the request, or pick another model.</span>"
)
"""Under a reply stopped by the content filter, or refused (`metadata["filtered"]`)."""
CUT_OFF_MARK = (
    '<span class="ga-cut-off">Cut off at the model\'s output limit: raise Max tokens in '
    'Settings › Advanced, or say "continue" for the rest.</span>'
)
"""Under a reply the model stopped at its output limit (`metadata["cut_off"]`): it names
the field that raises the limit (layout.SETTING_LABELS["max_tokens"]), and the way on."""

_DECISIONS = {
    "allow_once": ("✓", "Allowed once"),
    "allow_session": ("✓", "Allowed for this chat"),
    "deny": ("✗", "Denied"),
}
_ICON_STYLE = "width:20px;height:20px;display:inline-block;vertical-align:middle;margin:0 6px 0 0"


def error_line(code: str, message: str) -> str:
    """An error as the chat shows it, live or after a reload: "Error:" and its message, a
    model's id in it as code (`model_ids_as_code`: not a half link). The error's code is for
    code (`data-code`), not for the person."""
    kind = "".join(c for c in code if c.isalnum() or c in "-_")
    text = escape_html(model_ids_as_code(message))
    return f'<strong class="ga-error" data-code="{kind}">Error:</strong> {text}'


def tool_step_id(call_id: str) -> str:
    """The `metadata.id` of a tool call's step (its result's `parent_id`)."""
    return f"tool-{call_id}"


def agent_header(
    agent: AgentName, icons: Mapping[str, str], *, crew_member: str | None = None
) -> str:
    """The line that opens every assistant message: the role's icon and name (as people
    read it: `role_title`; its code stays in `data-agent`). A crew member's reply shows the
    crew's icon and the member ("Crew · reviewer": `crew_title`; "Crew" for `crew_member`
    "", a member not known yet), not the role its calls are made as."""
    if crew_member is None:
        icon, name = icons.get(agent.value), role_title(agent)
    else:  # (a name from the crew's configuration, or an imported chat: shown as written)
        icon, name = icons.get(AgentName.CREW.value), crew_title(crew_member)
    alt = html.escape(name, quote=True)
    image = (
        f'<img src="{icon}" alt="{alt} icon" class="ga-agent-icon" style="{_ICON_STYLE}">'
        if icon
        else ""
    )
    shown = name if crew_member is None else escape_title(name)
    return f'{image}<span class="ga-agent" data-agent="{agent.value}">{shown}</span>'


def body_markdown(
    message_type: MessageType,
    content: str,
    language: str | None,
    images: Sequence[ImagePart],
    link: MediaLink | None = None,
) -> str:
    if message_type is MessageType.CODE:
        text = fence(content, language)
    elif message_type is MessageType.CONSOLE:
        text = fence(content, OUTPUT_LANGUAGE)
    elif message_type is MessageType.FUNCTION:
        text = json_or_text(content) if content else ""
    else:
        text = escape_html(content)
    shown = images_markdown(images, link=link)
    return "\n\n".join(part for part in (text, shown) if part)


def result_markdown(
    content: str,
    message_type: MessageType,
    images: Sequence[ImagePart],
    link: MediaLink | None = None,
) -> str:
    if message_type is MessageType.CONSOLE:
        text = fence(content, OUTPUT_LANGUAGE)
    elif message_type is MessageType.IMAGE:
        text = escape_html(content)
    elif message_type is MessageType.CODE:
        text = fence(content)
    else:
        text = json_or_text(content)
    shown = images_markdown(images, "tool output", link)
    return "\n\n".join(part for part in (text, shown) if part) or "_(no output)_"


def arguments_markdown(name: str, arguments: str) -> str:
    """What a tool call will run: code with its language, the file path, or the arguments."""
    try:
        args = json.loads(arguments or "{}")
    except ValueError:
        return fence(arguments, "text")
    if not isinstance(args, dict):
        return fence(arguments, "text")
    parts: list[str] = []
    rest = dict(args)
    path = rest.pop("path", None)
    if isinstance(path, str):
        parts.append(f"**File:** {code_span(path)}")
    code = rest.pop("code", None)
    if isinstance(code, str):
        parts.append(fence(code, "python" if "python" in name else None))
    content = rest.pop("content", None)
    if isinstance(content, str):
        parts.append(fence(content))
    if rest:
        parts.append(fence(json.dumps(rest, indent=2, ensure_ascii=False), "json"))
    return "\n\n".join(parts) or "_(no arguments)_"


def code_span(text: str) -> str:
    """`text` as an inline code span (backticks inside are handled)."""
    single_line = " ".join(text.split())
    ticks = "`"
    while ticks in single_line:
        ticks += "`"
    return f"{ticks} {single_line} {ticks}"


def confirmation_markdown(message: Message) -> str:
    decision = str(message.metadata.get("decision", ""))
    symbol, label = _DECISIONS.get(decision, ("•", "Approval"))
    by = message.metadata.get("by")
    who = f" _(by {escape_html(str(by))})_" if by and by != "user" else ""
    head = f'<span class="ga-confirmation">{symbol} **{label}**</span>'
    text = message.content.replace(f": {decision}", "", 1) if decision else message.content
    return f"{head} · {escape_html(text)}{who}"


def preview(message: Message, limit: int = 60) -> str:
    text = " ".join(message.content.split())
    if not text and message.tool_calls:
        text = "calls " + ", ".join(call.name for call in message.tool_calls)
    if not text and message.images:
        text = f"[{len(message.images)} image(s)]"
    if not text and message.status is MessageStatus.ERROR:
        text = "[error: no text]"  # a reply that failed before it said anything
    elif not text and message.status is MessageStatus.INTERRUPTED:
        text = "[interrupted: no text]"
    return text if len(text) <= limit else text[: limit - 1] + "…"
