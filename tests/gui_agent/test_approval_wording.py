"""People see chats: the approval choice that allows a tool from now on says "this chat",
as do what it decided and the tools it allowed, in every front end's words (the API keeps
its names: `allow_session`, `allowed_for_session`). The terminal's question still takes
`s` and `session` as that answer."""

from __future__ import annotations

import pytest

from gui_agent.repl_commands import ALLOWED_USAGE
from gui_agent.repl_display import (
    APPROVAL_PROMPT,
    DECISION_WORDS,
    parse_decision,
    piped_answer,
)
from gui_agent.wording import (
    ALLOW_FOR_THIS_CHAT,
    allowed_tools_words,
    confirmation_words,
    decision_words,
    tool_mode_words,
)
from schema import ApprovalDecision, PermissionMode


def test_the_choice_and_what_it_decided_say_this_chat() -> None:
    assert ALLOW_FOR_THIS_CHAT == "Allow for this chat"
    assert decision_words("allow_session") == ("✓", "Allowed for this chat")
    assert decision_words("allow_once") == ("✓", "Allowed once")
    assert decision_words("deny") == ("✗", "Denied")
    assert decision_words("maybe") == ("•", "Approval")  # (a newer version's answer)
    allowed = tool_mode_words(PermissionMode.ALLOW, None, True)
    assert allowed == "runs without asking (allowed for this chat)"


def test_a_confirmation_says_the_decision_in_words_not_its_code() -> None:
    said = confirmation_words("Run Python code: allow_session (go ahead)", "allow_session")
    assert said == "✓ Allowed for this chat · Run Python code (go ahead)"
    timed_out = confirmation_words("Write a file: deny", "deny", "timeout")
    assert timed_out == "✗ Denied · Write a file (by timeout)"


@pytest.mark.parametrize("answer", ["s", "session", " S "])
def test_the_terminal_asks_about_this_chat_and_still_takes_s_or_session(answer: str) -> None:
    assert APPROVAL_PROMPT == "  allow? [y]es once / [s] for this chat / [N]o: "
    assert parse_decision(answer) is ApprovalDecision.ALLOW_SESSION
    decision, shown, kept = piped_answer(answer)
    assert decision is ApprovalDecision.ALLOW_SESSION and not kept
    assert shown.endswith("→ allowed for this chat")


def test_no_approval_word_a_person_reads_says_session() -> None:
    read = [
        ALLOW_FOR_THIS_CHAT,
        APPROVAL_PROMPT,
        ALLOWED_USAGE,
        allowed_tools_words(["run_python"]),
        allowed_tools_words([]),
        *DECISION_WORDS.values(),
        *(decision_words(decision)[1] for decision in ApprovalDecision),
        *(tool_mode_words(mode, None, True) for mode in PermissionMode),
    ]
    assert not [words for words in read if "session" in words.lower()]
