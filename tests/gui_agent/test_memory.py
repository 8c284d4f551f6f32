"""The sliding context window: what the model is sent, and what the memory panel reports."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import overload

import pytest

from gui_agent.exceptions import ConfigError
from gui_agent.memory import ContextWindow, Memory, SlidingWindowMemory
from gui_agent.tokens import CallableCounter, count_messages_with
from schema import Message, MessageType, Role, ToolCall


def words(text: str) -> int:
    return len(text.split())


class CountingCounter:
    """A words-per-token counter that records how often whole messages are counted."""

    name = "words"
    estimated = False

    def __init__(self) -> None:
        self.calls = 0

    def count_text(self, text: str) -> int:
        return words(text)

    def count_messages(self, messages: Sequence[Message]) -> int:
        self.calls += 1
        return count_messages_with(words, messages)


COUNTER = CallableCounter("words", words)


def memory(**kwargs: object) -> SlidingWindowMemory:
    return SlidingWindowMemory(counter=COUNTER, **kwargs)  # type: ignore[arg-type]


def user(text: str) -> Message:
    return Message(role=Role.USER, content=text)


def assistant(text: str = "", *calls: str) -> Message:
    tool_calls = tuple(ToolCall(id=c, name="run", arguments='{"n": 1}') for c in calls)
    return Message(role=Role.ASSISTANT, content=text, tool_calls=tool_calls)


def tool(call_id: str, text: str = "result") -> Message:
    return Message(role=Role.TOOL, tool_call_id=call_id, content=text)


def chat(exchanges: int, *, start: int = 0) -> list[Message]:
    history: list[Message] = []
    for n in range(start, start + exchanges):
        history += [user(f"question {n}"), assistant(f"answer {n}")]
    return history


def contents(window: ContextWindow) -> list[str]:
    return [m.content for m in window.messages]


def assert_tool_pairs_intact(messages: Sequence[Message]) -> None:
    """Every tool message directly follows (with its siblings) the call it answers, and every
    call that has a result in the history has it in the window."""
    open_calls: set[str] = set()
    for message in messages:
        if message.role is Role.TOOL:
            assert message.tool_call_id in open_calls, "tool result without its call"
            open_calls.discard(message.tool_call_id)
            continue
        assert not open_calls, "a call was sent without its result"
        open_calls = {c.id for c in message.tool_calls}
    assert not open_calls


def test_keeps_the_last_k_exchanges() -> None:
    history = chat(15)

    window = memory().window(history)

    assert contents(window)[0] == "question 5"
    assert contents(window)[-1] == "answer 14"
    assert len(window.messages) == 20
    assert window.dropped == 10
    assert window.message_ids == tuple(m.id for m in history[10:])
    assert window.token_count == COUNTER.count_messages(window.messages)
    assert window.token_estimated is False


def test_per_call_exchanges_override_the_default() -> None:
    window = memory(exchanges=10).window(chat(15), exchanges=2)

    assert contents(window) == ["question 13", "answer 13", "question 14", "answer 14"]
    assert window.dropped == 26


def test_short_history_is_sent_whole_with_its_preamble() -> None:
    greeting = assistant("Hi, how can I help?")
    history = [greeting, *chat(2)]

    window = memory().window(history)

    assert window.messages == tuple(history)
    assert window.dropped == 0


def test_empty_history() -> None:
    window = memory().window([], system_prompt="Be brief.")

    assert contents(window) == ["Be brief."]
    assert window.message_ids == ()
    assert window.dropped == 0


def test_hard_cap_of_100_messages_keeps_the_newest() -> None:
    history: list[Message] = []
    for n in range(5):
        history += [user(f"task {n}")] + [assistant(f"step {n}.{s}") for s in range(49)]

    window = memory().window(history)

    assert len(window.messages) == 100
    assert window.message_ids == tuple(m.id for m in history[-100:])
    assert window.dropped == 150


def test_one_huge_exchange_keeps_its_user_message_and_the_newest_steps() -> None:
    history = [*chat(3), user("do the long task")] + [assistant(f"step {s}") for s in range(150)]

    window = memory(max_messages=100).window(history)

    assert len(window.messages) == 100
    assert contents(window)[0] == "do the long task"
    assert contents(window)[1] == "step 51"
    assert contents(window)[-1] == "step 149"
    assert window.dropped == len(history) - 100


def test_token_budget_drops_oldest_first() -> None:
    history = chat(10)
    per_message = COUNTER.count_messages([user("question 1")]) - COUNTER.count_messages([])
    budget = COUNTER.count_messages([]) + 5 * per_message

    window = memory().window(history, token_budget=budget)

    assert window.token_count <= budget
    # "answer 7" fits too, but its question does not: a window starts with the person's turn
    assert contents(window) == ["question 8", "answer 8", "question 9", "answer 9"]
    assert window.dropped == 16
    assert window.token_count == COUNTER.count_messages(window.messages)


def test_a_window_cut_by_the_budget_or_the_cap_starts_with_the_persons_message() -> None:
    """A reply whose question was left out led the window: strict chat templates refuse a
    conversation that starts with the assistant ("roles must alternate user/assistant")."""
    history = [assistant("Hi, how can I help?"), *chat(6)]
    per_message = COUNTER.count_messages([user("question 1")]) - COUNTER.count_messages([])
    for window in (
        memory().window(history, token_budget=COUNTER.count_messages([]) + 3 * per_message),
        memory(max_messages=3).window(history),
    ):
        assert contents(window) == ["question 5", "answer 5"]
        assert window.dropped == len(history) - 2
    # the history's own preamble (a greeting before the first message) is no cut reply
    assert contents(memory(max_messages=3).window(history[:3])) == [
        "Hi, how can I help?",
        "question 0",
        "answer 0",
    ]
    # a goal said only by the reply that would go keeps it (not pinned again before it)
    said = [user("first"), assistant("the goal"), user("next"), assistant("done")]
    window = memory(max_messages=3).window(said, goal="the goal")
    assert contents(window) == ["the goal", "next", "done"] and not window.goal_pinned


def test_budget_never_empties_the_context() -> None:
    long_question = "please " * 500 + "help"
    history = [*chat(3), user(long_question), assistant("x " * 300)]

    window = memory().window(history, system_prompt="Be kind.", token_budget=50)

    assert contents(window) == ["Be kind.", long_question]
    assert window.token_count > 50  # reported as over budget, not hidden
    assert window.token_count == COUNTER.count_messages(window.messages)


def test_system_prompt_is_first_and_always_kept() -> None:
    prompt = "You are a careful agent. " * 40

    window = memory().window(chat(12), system_prompt=prompt, token_budget=30)

    assert window.messages[0].role is Role.SYSTEM
    assert window.messages[0].content == prompt
    assert contents(window)[1:] == ["question 11"]
    assert window.messages[0].id not in window.message_ids


def test_system_messages_in_history_stay_where_they_were() -> None:
    note = Message(role=Role.SYSTEM, content="Switched to the planner.")
    history = [*chat(2), note, *chat(1, start=2)]

    window = memory().window(history, system_prompt="Be brief.", exchanges=2)

    assert contents(window) == [
        "Be brief.",
        "question 1",
        "answer 1",
        "Switched to the planner.",
        "question 2",
        "answer 2",
    ]


def test_tool_call_and_results_are_never_split_by_the_cap() -> None:
    history = [user("crunch numbers")]
    for n in range(40):
        history += [assistant("", f"a{n}", f"b{n}"), tool(f"a{n}"), tool(f"b{n}")]
    history.append(assistant("done"))

    # 1 user + 1 final + 3 per pair: a cap of 101 would cut the 34th pair in the middle.
    window = memory(max_messages=101).window(history)

    assert_tool_pairs_intact(window.messages)
    assert contents(window)[0] == "crunch numbers"
    assert len(window.messages) == 1 + 1 + 33 * 3
    assert window.messages[1].tool_calls[0].id == "a7"


def test_tool_call_and_results_are_never_split_by_the_budget() -> None:
    big_result = "data " * 200
    history = [
        user("look it up"),
        assistant("", "c1", "c2"),
        tool("c1", big_result),
        tool("c2", "small"),
        assistant("found it"),
    ]
    fits_only_small = COUNTER.count_messages([history[0], history[3], history[4]])

    window = memory().window(history, token_budget=fits_only_small + 10)

    assert_tool_pairs_intact(window.messages)
    assert contents(window) == ["look it up", "found it"]
    assert window.dropped == 3


def test_window_never_starts_with_orphan_tool_messages() -> None:
    history = [tool("lost1"), tool("lost2"), *chat(2)]

    window = memory().window(history)

    assert window.messages[0].role is Role.USER
    assert all(m.role is not Role.TOOL for m in window.messages)
    assert window.dropped == 2


def test_tool_result_answering_a_call_elsewhere_is_left_out() -> None:
    history = [
        user("go"),
        assistant("", "c1"),
        tool("c1"),
        assistant("thinking again"),
        tool("c1", "late duplicate"),
        assistant("done"),
    ]

    window = memory().window(history)

    assert_tool_pairs_intact(window.messages)
    assert "late duplicate" not in contents(window)
    assert window.dropped == 1


def test_display_only_messages_are_never_sent() -> None:
    confirm = Message(role=Role.ASSISTANT, type=MessageType.CONFIRMATION, content="Run it?")
    banner = Message(role=Role.ASSISTANT, content="(saved)", metadata={"display_only": True})
    history = [user("run ls"), assistant("", "c1"), confirm, tool("c1", "a.txt"), banner]

    window = memory().window(history)

    assert contents(window) == ["run ls", "", "a.txt"]
    assert_tool_pairs_intact(window.messages)
    assert window.dropped == 0
    assert confirm.id not in window.message_ids


def test_goal_is_pinned_when_it_slid_out() -> None:
    goal = "question 0"
    history = chat(15)

    window = memory().window(history, system_prompt="Be brief.", goal=goal)

    assert window.goal_pinned is True
    assert window.goal == goal
    pin = window.messages[1]
    assert (pin.role, pin.content, pin.metadata) == (Role.USER, goal, {"pinned_goal": True})
    assert pin.id not in window.message_ids
    assert len(window.message_ids) == 20


def test_goal_is_not_pinned_while_still_in_the_window() -> None:
    window = memory().window(chat(5), system_prompt="Be brief.", goal="question 0")

    assert window.goal_pinned is False
    assert sum(m.content == "question 0" for m in window.messages) == 1


def test_goal_pin_without_system_prompt_comes_first() -> None:
    window = memory().window(chat(3), goal="Write a poem", exchanges=1)

    assert contents(window) == ["Write a poem", "question 2", "answer 2"]
    assert window.goal_pinned is True


def test_goal_pin_and_newest_question_survive_a_tiny_budget() -> None:
    window = memory().window(chat(20), system_prompt="Be brief.", goal="question 0", token_budget=1)

    assert contents(window) == ["Be brief.", "question 0", "question 19"]
    assert window.goal_pinned is True
    assert window.token_count == COUNTER.count_messages(window.messages)


def test_goal_pin_counts_against_the_budget() -> None:
    history = chat(10)
    without = memory().window(history, token_budget=60)
    pinned = memory().window(history, token_budget=60, goal="a very long goal " * 5)

    assert pinned.goal_pinned is True
    assert pinned.token_count <= 60
    assert len(pinned.message_ids) < len(without.message_ids)


def test_ten_thousand_messages() -> None:
    history: list[Message] = []
    for n in range(2500):
        history += [user(f"q{n}"), assistant("", f"c{n}"), tool(f"c{n}"), assistant(f"a{n}")]
    mem = memory()

    window = mem.window(history, system_prompt="sys", goal="q0", token_budget=10_000)

    assert len(window.message_ids) == 40
    assert window.message_ids == tuple(m.id for m in history[-40:])
    assert window.dropped == 9960
    assert window.goal_pinned is True
    assert_tool_pairs_intact(window.messages)

    history += [user("q2500"), assistant("a2500")]
    window = mem.window(history, system_prompt="sys", goal="q0", token_budget=10_000)
    assert window.message_ids[-1] == history[-1].id
    assert window.dropped == 9964


class CountingHistory(Sequence[Message]):
    """A history that records how many of its messages were read."""

    def __init__(self, messages: list[Message]) -> None:
        self.messages = messages
        self.reads = 0

    def __len__(self) -> int:
        return len(self.messages)

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Message]: ...
    def __getitem__(self, index: int | slice) -> Message | Sequence[Message]:
        if isinstance(index, slice):
            raise AssertionError("the memory should not copy the history")
        self.reads += 1
        return self.messages[index]

    def __iter__(self) -> Iterator[Message]:
        raise AssertionError("the memory should not walk the whole history")


def test_a_growing_history_is_read_only_at_its_tail() -> None:
    messages = chat(5000)
    mem = memory()
    mem.window(CountingHistory(messages))
    messages += chat(1, start=5000)
    history = CountingHistory(messages)

    window = mem.window(history)

    assert window.dropped == 10_002 - 20
    assert history.reads < 100


def test_token_counts_are_cached_per_message() -> None:
    counter = CountingCounter()
    mem = SlidingWindowMemory(counter=counter)
    history = chat(10)
    mem.window(history, system_prompt="sys")
    counter.calls = 0

    again = mem.window(history, system_prompt="sys")

    assert counter.calls == 0  # every message and the empty request were counted before
    edited = history[-1].model_copy(update={"content": "a much longer answer than before"})
    changed = mem.window([*history[:-1], edited], system_prompt="sys")
    assert changed.token_count == again.token_count + 4  # 6 words instead of 2


def test_invalid_settings_are_refused() -> None:
    with pytest.raises(ConfigError):
        SlidingWindowMemory(exchanges=0)
    with pytest.raises(ConfigError):
        SlidingWindowMemory(max_messages=0)
    with pytest.raises(ConfigError):
        memory().window(chat(1), token_budget=0)


def test_default_counter_is_tiktoken_and_memory_fits_the_protocol(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "placeholder")  # restored afterwards
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR")
    mem: Memory = SlidingWindowMemory()

    window = mem.window([user("hello world")])

    assert window.token_count > 2
    assert window.token_estimated is True  # no model named: counts are an estimate


def test_the_token_cache_stays_bounded_and_counts_stay_right() -> None:
    counting = CountingCounter()
    small = SlidingWindowMemory(counter=counting, cache_size=50)
    fresh = memory()
    histories = [chat(3, start=n * 3) for n in range(100)]  # 600 distinct messages
    for history in histories:
        window = small.window(history)
        assert window.token_count == fresh.window(history).token_count
        assert len(small._cache) <= 50
    counted = counting.calls
    small._last.clear()  # the last windows would answer without counting: this is about tokens
    small.window(histories[-1])  # its messages are among the newest: still cached
    assert counting.calls == counted
    small._last.clear()
    small.window(histories[0])  # long evicted: counted again, and still right
    assert counting.calls > counted
    assert small.window(histories[0]).token_count == fresh.window(histories[0]).token_count


# --- extending the last window: the same answer as the full walk --------------------------


def random_step(rng: random.Random, history: list[Message], goal: str) -> None:
    """Change `history` the ways a session does (append, truncate), plus some it should not
    (an edited copy put in place of a message), with every kind of message."""
    kind = rng.random()
    if kind < 0.04 and history:
        del history[rng.randrange(len(history)) :]  # retry / edit: truncated
        return
    if kind < 0.08 and history:
        index = rng.randrange(len(history))
        history[index] = history[index].model_copy(update={"content": "edited in place"})
        return
    open_calls = [c.id for m in history[-4:] for c in m.tool_calls]
    if kind < 0.25:
        text = goal if rng.random() < 0.2 else f"question {len(history)} " + "w " * rng.randrange(4)
        history.append(user(text))
    elif kind < 0.45:
        calls = [f"c{len(history)}_{n}" for n in range(rng.choice((0, 1, 1, 2, 3)))]
        history.append(assistant("answer " * rng.randrange(1, 5), *calls))
    elif kind < 0.7 and open_calls:
        history.append(tool(rng.choice(open_calls), "result " * rng.randrange(1, 4)))
    elif kind < 0.75:
        history.append(tool("nowhere", "orphan"))
    elif kind < 0.8:
        history.append(Message(role=Role.SYSTEM, content="a note"))
    elif kind < 0.85:
        history.append(
            Message(role=Role.ASSISTANT, type=MessageType.CONFIRMATION, content="run: allow")
        )
    elif kind < 0.9:
        history.append(
            Message(role=Role.ASSISTANT, content="worker step", metadata={"display_only": True})
        )
    else:
        history.append(assistant(goal if rng.random() < 0.2 else "plain"))


def same_window(got: ContextWindow, expected: ContextWindow) -> bool:
    def shown(window: ContextWindow) -> list[tuple[object, ...]]:
        # The system prompt and a pinned goal are built by each memory: compare what they say.
        ids = set(window.message_ids)
        return [
            (m.id, m.content) if m.id in ids else (m.role, m.content, m.metadata)
            for m in window.messages
        ]

    return shown(got) == shown(expected) and got._replace(messages=()) == expected._replace(
        messages=()
    )


def test_extending_the_last_window_gives_what_the_full_walk_gives() -> None:
    rng = random.Random(20261122)
    extended = 0
    checked = 0
    for _ in range(300):
        settings = {
            "exchanges": rng.randint(1, 4),
            "max_messages": rng.randint(1, 12),
            "token_budget": rng.choice((None, None, rng.randint(5, 90))),
        }
        goal = "the goal text"
        call = {
            "system_prompt": rng.choice((None, "you are terse")),
            "goal": rng.choice((None, goal)),
        }
        kept = memory(**settings)
        original = kept._extend

        def spy(
            *args: object, original: Callable[..., ContextWindow | None] = original
        ) -> ContextWindow | None:
            nonlocal extended
            window = original(*args)
            extended += window is not None
            return window

        kept._extend = spy  # type: ignore[assignment]
        history: list[Message] = []
        for _ in range(rng.randint(1, 30)):
            random_step(rng, history, goal)
            got = kept.window(history, **call)  # type: ignore[arg-type]
            expected = memory(**settings).window(list(history), **call)  # type: ignore[arg-type]
            assert same_window(got, expected), (history, settings, call)
            checked += 1
    assert checked > 3000
    assert extended > checked // 5  # the fast path was taken often, not just allowed
