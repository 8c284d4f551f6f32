"""Who the React front end says wrote a crew's replies (`history.js`, run in Node): the
crew member ("Crew · reviewer"), not the role its calls are made as (the reviewer's is
THOUGHT, which read as "Thought"); in the history, for a reply being written (before its
`message_completed` marks it) and for one a Stop left unmarked; and a role picked after the
crew speaks as itself again."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, expect

from gui_agent.wording import crew_title
from tests.backends.react.node_script import HISTORY
from tests.backends.react.test_react_history import message, session_detail
from tests.backends.react.test_react_page import (
    new_chat,
    react_tab,
    send,
    served_react,
    signed_in,
)

SCRIPT = """
import { applyEvent, chatFrom, crewTitle, entriesOf, liveTitle } from %s;
const detail = JSON.parse(process.argv[1]);
let chat = chatFrom(detail);
const live = [Object.values(chat.streaming).map(liveTitle)];
for (const event of detail.events) {
  chat = applyEvent(chat, event);
  live.push(Object.values(chat.streaming).map(liveTitle));
}
const entries = entriesOf(chat.messages).map((e) => [e.speaker, e.text]);
const titles = detail.members.map(crewTitle);
console.log(JSON.stringify({entries, live, titles}));
"""

DOER, REVIEWER = "AGENT_EXECUTOR", "THOUGHT"


def run(detail: dict[str, Any], members: list[str] | None = None) -> dict[str, Any]:
    node = shutil.which("node")
    assert node is not None, "Node.js is needed (scripts/test.sh installs it)"
    detail = {**detail, "members": members or []}
    done = subprocess.run(
        [
            node,
            "--input-type=module",
            "-e",
            SCRIPT % json.dumps(HISTORY.as_uri()),
            json.dumps(detail),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def as_role(detail: dict[str, Any], agent: str) -> dict[str, Any]:
    detail["session"]["agent"] = agent
    return detail


def handover(id_: str, member: str = "reviewer", agent: str = REVIEWER) -> dict[str, Any]:
    meta = {"crew_member": member, "crew_agent": agent}
    return message(id_, "user", f"over to you, {member}", metadata=meta)


def reply(
    id_: str, text: str, agent: str, member: str | None = None, **fields: Any
) -> dict[str, Any]:
    meta = {} if member is None else {"crew_speaker": member}
    return message(id_, "assistant", text, agent=agent, metadata=meta, **fields)


def started(id_: str, agent: str, speaker: str | None = None) -> dict[str, Any]:
    event = {"type": "message_started", "message_id": id_, "agent": agent}
    return event if speaker is None else {**event, "speaker": speaker}


def completed(item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "message_completed", "message": item}


def crew_turn(n: int) -> list[dict[str, Any]]:
    return [
        message(f"u{n}", "user", f"task {n}"),
        reply(f"a{n}", f"done {n}", DOER, "doer"),
        handover(f"h{n}"),
        reply(f"r{n}", f"checked {n}", REVIEWER, "reviewer"),
    ]


def test_the_labels_are_those_of_the_other_front_ends() -> None:
    out = run(session_detail(), ["reviewer", "doer", "", "  "])
    assert out["titles"] == [crew_title(m) for m in ["reviewer", "doer", "", "  "]]
    assert out["titles"][:3] == ["Crew · reviewer", "Crew · doer", "Crew"]


def test_a_crews_replies_in_the_history_are_its_members() -> None:
    out = run(session_detail(crew_turn(1)))
    assert out["entries"] == [
        ["", "task 1"],
        ["Crew · doer", "done 1"],
        ["Crew, over to the reviewer", "over to you, reviewer"],
        ["Crew · reviewer", "checked 1"],  # (it read "Thought")
    ]


def test_a_reply_a_stop_left_unmarked_is_the_member_handed_over_to() -> None:
    stopped = reply("r2", "half a rev", REVIEWER, status="interrupted")
    doer_stopped = reply("a3", "half a do", DOER, status="interrupted")
    history = [
        *crew_turn(1),
        *crew_turn(2)[:3],
        stopped,
        message("u3", "user", "again"),
        doer_stopped,
    ]
    speakers = [speaker for speaker, _ in run(session_detail(history))["entries"]]
    assert speakers[-3:] == [
        "Crew · reviewer",  # after the hand-over to the reviewer
        "",
        "Crew · doer",  # the first to answer the person, as last time
    ]


def test_a_role_picked_after_the_crew_speaks_as_itself_again() -> None:
    switched = {"from_agent": "CREW", "to_agent": DOER, "reason": "picked by the person"}
    back = {"from_agent": DOER, "to_agent": "CREW", "reason": "picked by the person"}
    history = [
        *crew_turn(1),
        message("u2", "user", "you alone", metadata={"switched": switched}),
        reply("e2", "as the executor", DOER),
        reply("e3", "stopped executor", DOER, status="interrupted"),
        message("u3", "user", "the crew again", metadata={"switched": back}),
        reply("a3", "stopped doer", DOER, status="interrupted"),
    ]
    speakers = [speaker for speaker, _ in run(session_detail(history))["entries"]]
    assert speakers[4:] == ["", "Executor", "Executor", "", "Crew · doer"]


def test_a_chat_begun_as_the_crew_before_its_first_switch_is_the_crews() -> None:
    switched = {"from_agent": "CREW", "to_agent": "THOUGHT", "reason": "picked by the person"}
    history = [
        message("u1", "user", "task"),
        reply("a1", "stopped before its mark", DOER, status="interrupted"),
        message("u2", "user", "think", metadata={"switched": switched}),
        reply("t2", "a thought", REVIEWER),
    ]
    speakers = [speaker for speaker, _ in run(session_detail(history))["entries"]]
    assert speakers == ["", "Crew", "", "Thought"]


def test_a_crew_chat_with_no_switch_is_the_crews_from_its_first_reply() -> None:
    stopped = reply("a1", "stopped before its mark", DOER, status="interrupted")
    # its later turns show it is the crew's (a chat with no switch ran as one role)
    history = [message("u1", "user", "task"), stopped, *crew_turn(2)]
    assert [s for s, _ in run(session_detail(history))["entries"]][:2] == ["", "Crew"]
    # nothing in it shows it yet: while it streams, the server names its member ...
    events = [completed(message("u1", "user", "task")), started("a1", DOER, "doer")]
    assert run(as_role(session_detail(events=events), DOER))["live"][-1] == ["Crew · doer"]
    # ... and a reply it does not name is its role's, the crew picked meanwhile or not
    events = [completed(message("u1", "user", "task")), started("a1", DOER)]
    assert run(as_role(session_detail(events=events), "CREW"))["live"][-1] == ["Executor"]


def test_a_reply_being_written_is_headed_by_its_member() -> None:
    ask = message("u1", "user", "task")
    doer = reply("a1", "done", DOER, "doer")
    over = handover("h1")
    review = reply("r1", "checked", REVIEWER, "reviewer")
    ask2 = message("u2", "user", "task 2")
    events = [
        completed(ask),
        started("a1", DOER, "doer"),  # the crew's first reply: the server names its member
        completed(doer),
        completed(over),
        started("r1", REVIEWER),  # (not named: the history tells)
        completed(review),
        completed(ask2),
        started("a2", DOER),  # the doer answered first last time
    ]
    out = run(as_role(session_detail(events=events), "CREW"))
    assert out["live"] == [
        [],
        [],
        ["Crew · doer"],
        [],
        [],
        ["Crew · reviewer"],  # (it read "Thought" until its message_completed)
        [],
        [],
        ["Crew · doer"],
    ]
    assert [speaker for speaker, _ in out["entries"]][1:4] == [
        "Crew · doer",
        "Crew, over to the reviewer",
        "Crew · reviewer",
    ]


def test_a_tab_opened_mid_reply_heads_it_by_its_member() -> None:
    streaming = [reply("r2", "so f", REVIEWER, status="interrupted")]
    detail = as_role(
        session_detail([*crew_turn(1), *crew_turn(2)[:3]], streaming=streaming), "CREW"
    )
    assert run(detail)["live"] == [["Crew · reviewer"]]


def test_a_reply_that_says_its_member_is_headed_by_it_from_its_first_word() -> None:
    """The server names the member writing a reply (`message_started.speaker`, and a reply
    kept or given mid-stream keeps it: `crew_speaker`): the crew's very first reply is the
    doer's, not "Crew", whatever the history and the role now say."""
    events = [completed(message("u1", "user", "task")), started("a1", DOER, "doer")]
    for role in ("CREW", DOER):
        assert run(as_role(session_detail(events=events), role))["live"][-1] == ["Crew · doer"]
    streaming = [reply("a1", "so f", DOER, "doer", status="interrupted")]
    detail = session_detail([message("u1", "user", "task")], streaming=streaming)
    assert run(as_role(detail, DOER))["live"] == [["Crew · doer"]]
    # an empty name says nothing: the history and the role now do
    events = [completed(message("u1", "user", "task")), started("a1", DOER, " ")]
    assert run(as_role(session_detail(events=events), DOER))["live"][-1] == ["Executor"]


def test_other_roles_replies_being_written_are_their_roles() -> None:
    events = [completed(message("u1", "user", "task")), started("a1", DOER)]
    assert run(as_role(session_detail(events=events), DOER))["live"][-1] == ["Executor"]
    # switched away from the crew: the next turn's reply is the role's picked
    switched = {"from_agent": "CREW", "to_agent": "THOUGHT", "reason": "picked by the person"}
    events = [
        completed(message("u2", "user", "think", metadata={"switched": switched})),
        started("t2", REVIEWER),
    ]
    detail = as_role(session_detail(crew_turn(1), events=events), "THOUGHT")
    assert run(detail)["live"][-1] == ["Thought"]
    # a turn begun as the crew stays the crew's when another role is picked meanwhile
    events = [started("a2", DOER)]
    detail = as_role(
        session_detail([*crew_turn(1), message("u2", "user", "more")], events=events), DOER
    )
    assert run(detail)["live"][-1] == ["Crew · doer"]


@pytest.mark.browser
def test_the_page_heads_a_crews_replies_by_its_members(tmp_path: Path, chromium: Browser) -> None:
    with served_react(tmp_path) as backend, react_tab(backend, chromium) as page:
        signed_in(page)
        new_chat(page)
        page.get_by_label("Agent role").select_option("CREW")
        send(page, "hello crew")
        speakers = page.get_by_role("list", name="Conversation").locator(".entry .speaker")
        expect(speakers).to_have_text(
            ["Crew · doer", "Crew, over to the reviewer", "Crew · reviewer"]
        )
        page.reload()  # (the history as the server keeps it)
        chats = page.get_by_role("navigation", name="Your chats")
        chats.get_by_role("button", name="hello crew").click()
        expect(speakers).to_have_text(
            ["Crew · doer", "Crew, over to the reviewer", "Crew · reviewer"]
        )
