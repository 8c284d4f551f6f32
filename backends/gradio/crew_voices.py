"""Which crew member a reply is from, as a chat view tells it. Pure; part of `ChatView`.

A crew's members make their model calls as roles (the default crew's doer as Executor, its
reviewer as Thought), so a reply's role alone read as that role's: the reviewer's answer
showed under "Thought", a role the person can pick. A reply a member writes is marked with
the member's name (`CREW_SPEAKER`; its `message_started` says it, `speaker`, and one a Stop
or an error ended keeps it), but a chat kept before that, or imported, may hold unmarked
ones, and an event may not say it (another agent's). `CrewVoices` follows what the chat
shows to name those too: while the crew's turn runs (one begun after a switch to the crew,
or one a hand-over or a marked reply shows), a reply made as a role is the member's last
seen speaking as it (the hand-over before it names who goes on), and after a message of the
person's, the first to answer is the member that answered first last time. A reply whose
member is not known yet (an unmarked first reply of the crew's in a chat) is the crew's
("Crew"), never the role's it is made as. A switch counts from the next turn on: the turn
running when the person picks a role ends as the role it began as.
"""

from __future__ import annotations

from backends.gradio.message_text import crew_member_of
from schema import AgentName, Message, Role

__all__ = ["CrewVoices"]


class CrewVoices:
    """Who speaks for the crew, as far as a view has seen. A member's name as `member` and
    `seen` give it: None for a reply of no crew member's, "" for a member not known yet."""

    __slots__ = ("_first", "_names", "_next", "_opening", "speaking")

    def __init__(self) -> None:
        self.speaking = False
        """The turn running (or the last one) is the crew's."""
        self._next = False
        """The next turn is the crew's: the role last switched to is."""
        self._names: dict[AgentName, str] = {}
        """The member last seen speaking as each role (named by a hand-over or a reply)."""
        self._first: tuple[AgentName, str] | None = None
        """The member that answered the person first in the crew's last turn (role, name)."""
        self._opening = False
        """A message of the person's was shown and no crew member has answered it yet."""

    def switched(self, to_agent: AgentName) -> None:
        """A switch of role (picked, or one a message keeps), for the turns after it."""
        self._next = to_agent is AgentName.CREW

    def role_now(self, agent: AgentName) -> None:
        """The role the chat runs as now, its turn running or the next (a chat begun as
        the crew's has no switch to say so)."""
        self.speaking = self._next = agent is AgentName.CREW

    def member(self, agent: AgentName | None) -> str | None:
        """The member writing a reply made as `agent` that does not say who wrote it."""
        if not self.speaking or agent is None:
            return None
        return self._names.get(agent, "")

    def seen(self, message: Message, *, person: bool) -> str | None:
        """Follow a message the view shows (`person`: one of the person's, which starts a
        turn) and give the member who wrote it."""
        if person:  # (a turn starts, as the role last switched to)
            self.speaking = self._next
            if self._first is not None:
                agent, name = self._first
                self._names[agent] = name
            self._opening = True
            return None
        handed = _handed_to(message)
        if handed is not None:  # a hand-over names who goes on
            agent, name = handed
            self._names[agent] = name
            self.speaking = True
            return None
        if message.role is not Role.ASSISTANT or message.agent is None:
            return None
        writer = crew_member_of(message)
        if writer is None:
            return self.member(message.agent)
        self._names[message.agent] = writer
        self.speaking = True
        if self._opening:
            self._first, self._opening = (message.agent, writer), False
        return writer


def _handed_to(message: Message) -> tuple[AgentName, str] | None:
    """The role and name of the member a crew's hand-over is to (an imported chat's
    metadata may hold anything)."""
    name = message.metadata.get("crew_member")
    agent = message.metadata.get("crew_agent")
    if not isinstance(name, str) or not name.strip() or not isinstance(agent, str):
        return None
    try:
        return AgentName(agent), name
    except ValueError:
        return None
