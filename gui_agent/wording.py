"""Things said in words: counts ("1 message", "2 messages"), why AutoChat stopped, the
agent roles' names as people read them, the labels of the prompts the app or an agent wrote
in the person's place, the approval choices and answers, and the tools allowed for a chat.
Every front end says these the same way: the words live here, once. People see chats: what
the code and the API call a session (`allow_session`, `allowed_for_session`) is "this chat"
in what a person reads."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from schema import AgentName, ApprovalDecision, AutoChatStopReason, PermissionMode

__all__ = [
    "ALLOW_FOR_THIS_CHAT",
    "AUTOCHAT_BETWEEN_TURNS",
    "AUTOCHAT_STILL_ON",
    "DONE",
    "SENT_A_MESSAGE",
    "SWITCHED_OFF",
    "TURN_FAILED",
    "allowed_tools_words",
    "autochat_stop_words",
    "autochat_stopped",
    "confirmation_words",
    "counted",
    "crew_title",
    "decision_words",
    "prompt_label",
    "role_title",
    "speaker_title",
    "tool_mode_words",
    "with_full_stop",
]


def counted(number: int, noun: str) -> str:
    """`number` (with thousands separators) and `noun`, plural unless it is one of it."""
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


ALLOW_FOR_THIS_CHAT = "Allow for this chat"
"""The approval choice that lets a tool run without asking for the rest of the chat (its
decision keeps the API's name, `allow_session`)."""

_DECISION_WORDS = {
    ApprovalDecision.ALLOW_ONCE: ("✓", "Allowed once"),
    ApprovalDecision.ALLOW_SESSION: ("✓", "Allowed for this chat"),
    ApprovalDecision.DENY: ("✗", "Denied"),
}


def decision_words(decision: str) -> tuple[str, str]:
    """An approval's answer as the chat shows it: its mark and its words ("✓", "Allowed for
    this chat"); ("•", "Approval") for one this version does not know."""
    try:
        return _DECISION_WORDS[ApprovalDecision(decision)]
    except ValueError:
        return "•", "Approval"


def confirmation_words(content: str, decision: str, by: object = None) -> str:
    """A confirmation message (what an approval decided) as plain text for people: its mark
    and decision in words, then what was asked with the person's note, and who answered
    when it was not the person: "✓ Allowed for this chat · Run Python code (go ahead)".
    The message keeps the decision's code (`Run Python code: allow_session (go ahead)`)."""
    mark, words = decision_words(decision)
    text = content.replace(f": {decision}", "", 1) if decision else content
    who = f" (by {by})" if by and by != "user" else ""
    return f"{mark} {words} · {text}{who}"


_NONE_ALLOWED = "None: a tool that changes things asks you first."
"""What the front ends say while no tool is allowed for the chat."""


def allowed_tools_words(allowed: Sequence[str]) -> str:
    """The tools a person allowed for the chat (`ALLOW_FOR_THIS_CHAT`), in a sentence
    saying what that means; `_NONE_ALLOWED` when there are none."""
    if not allowed:
        return _NONE_ALLOWED
    verb = "runs" if len(allowed) == 1 else "run"
    return f"{', '.join(allowed)}: {verb} without asking in this chat."


_ROLE_TITLES = {
    AgentName.AGENT_EXECUTOR: "Executor",
    AgentName.LLM_PLANNER: "Planner",
    AgentName.SUPERVISOR: "Supervisor",
    AgentName.THOUGHT: "Thought",
    AgentName.CREW: "Crew",
    AgentName.OTHER: "Other",
}


def role_title(agent: AgentName | str) -> str:
    """An agent role as the page names it ("Executor" for AGENT_EXECUTOR: the words the
    README and `/role` use); a name that is no role (a worker named in a model's call) as
    it is. The events, the API and the stored chats keep the role's code."""
    if isinstance(agent, AgentName):
        return _ROLE_TITLES[agent]
    role = AgentName.__members__.get(agent)
    return agent if role is None else _ROLE_TITLES[role]


def crew_title(member: str) -> str:
    """The label a crew member's replies show under: the crew and the member's name ("Crew ·
    reviewer"), not the role code its calls are made as (the reviewer's is THOUGHT, which
    read as the Thought role; `schema.messages.CREW_SPEAKER`); the crew's alone ("Crew") for
    a member whose name is not known ("")."""
    crew = _ROLE_TITLES[AgentName.CREW]
    return f"{crew} · {member}" if member.strip() else crew


def speaker_title(agent: AgentName | str | None, member: object = None) -> str:
    """Who a reply is headed by: the crew member `member` names (a reply's `CREW_SPEAKER`,
    a `message_started`'s `speaker`; anything but a name is no member), else its role
    (`role_title`); "" for neither."""
    if isinstance(member, str) and member.strip():
        return crew_title(member)
    return role_title(agent) if agent else ""


def prompt_label(metadata: Mapping[str, object]) -> str:
    """Who a user message is from when the app or an agent wrote it in the person's place,
    as every front end labels it: a supervisor's task for a worker ("Task for Executor"), a
    crew's hand-over ("Crew, over to the reviewer"), AutoChat's prompt ("AutoChat turn 2"),
    a planner's step ("Plan step 1/3"). "" for a message the person wrote."""
    if metadata.get("delegated_by"):
        return f"Task for {role_title(str(metadata.get('worker', 'a worker')))}"
    if metadata.get("crew_member"):
        return f"Crew, over to the {metadata['crew_member']}"
    if metadata.get("autochat"):
        turn = metadata.get("autochat_turn")
        return f"AutoChat turn {turn}" if turn else "AutoChat"  # (an import may leave it out)
    if metadata.get("plan_step"):
        return f"Plan step {metadata['plan_step']}/{metadata.get('plan_steps', '?')}"
    return ""


_STOPPED_BECAUSE = {
    AutoChatStopReason.TASK_COMPLETE: "the task is done",
    AutoChatStopReason.MAX_TURNS: "it reached its limit of automatic turns",
    AutoChatStopReason.TOKEN_BUDGET: "its token budget ran out",
    AutoChatStopReason.TIME_BUDGET: "its time budget ran out",
    AutoChatStopReason.ERROR: "a turn failed",
    AutoChatStopReason.USER_MESSAGE: "you sent a message",
    AutoChatStopReason.STOPPED: "it was stopped",
    AutoChatStopReason.DISABLED: "it was switched off",
}
"""Why AutoChat stopped, for people (the event keeps the reason's code)."""

# The details the core gives AutoChat's stops that only repeat the reason's words (the
# core writes them from here, so they cannot drift apart).
DONE = "done"
"""`session.task_complete` for a `task_complete` call without a summary."""
TURN_FAILED = "the last turn failed"
SENT_A_MESSAGE = "the person sent a message"
SWITCHED_OFF = "AutoChat was switched off"

_SAID_ALREADY = frozenset({DONE, TURN_FAILED, SENT_A_MESSAGE, SWITCHED_OFF})


def autochat_stop_words(reason: AutoChatStopReason, detail: str = "") -> str:
    """Why AutoChat stopped, in words: the reason, then what the detail adds (the agent's
    summary of the finished task, the budget's figures, an error's message, who stopped
    it), e.g. "its token budget ran out (used 5,120 of 5,000 tokens)". A limit of turns
    reached says no more: the turns that ran are said next to it."""
    words = _STOPPED_BECAUSE.get(reason, str(reason))
    if reason is AutoChatStopReason.MAX_TURNS or not detail or detail in _SAID_ALREADY:
        return words
    if reason is AutoChatStopReason.TASK_COMPLETE:
        return f"{words}: {detail}"
    if reason is AutoChatStopReason.STOPPED:
        return detail  # who or what stopped it: "stopped by the user", "the user was removed"
    return f"{words} ({detail})"


AUTOCHAT_STILL_ON = "It is still switched on: your next message starts it again."
"""Said after why AutoChat stopped while its switch stays on (the pages' AutoChat line)."""

AUTOCHAT_BETWEEN_TURNS = "AutoChat: next turn soon"
"""Said where a front end says what the chat is doing, while AutoChat waits between two
turns: the state is STOP, yet a turn is coming ("Your turn" then read as if nothing more
would happen, and "Working…" as if something ran). The Gradio badge's `BETWEEN_TURNS` and
the React page's say the same."""


def with_full_stop(sentence: str) -> str:
    """`sentence` ended with a full stop, unless it ends its own (a task summary does)."""
    return sentence if sentence.endswith((".", "!", "?")) else sentence + "."


def autochat_stopped(turns: int, reason: AutoChatStopReason, detail: str = "") -> str:
    """The sentence that says AutoChat stopped, after how many automatic turns that ran and
    why: "AutoChat stopped after 2 automatic turns: it reached its limit of automatic turns"
    (`autochat_stop_words`; a front end adds its own full stop or marks)."""
    return f"AutoChat stopped after {counted(turns, 'automatic turn')}: " + autochat_stop_words(
        reason, detail
    )


_MODE_WORDS = {
    PermissionMode.ASK: "asks you first",
    PermissionMode.ALLOW: "runs without asking",
    PermissionMode.DENY: "never runs",
}


def tool_mode_words(
    mode: PermissionMode, chosen: PermissionMode | None, allowed_for_session: bool
) -> str:
    """What a call of a tool does in a chat, and why when it is not the app's own choice:
    "asks you first", "never runs (set for this chat)", "runs without asking (allowed for
    this chat)" (`allowed_for_session`: the person chose `ALLOW_FOR_THIS_CHAT`)."""
    words = _MODE_WORDS[mode]
    if chosen is not None and chosen is mode:
        return f"{words} (set for this chat)"
    if allowed_for_session and mode is PermissionMode.ALLOW:
        return f"{words} (allowed for this chat)"
    return words
