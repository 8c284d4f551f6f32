"""The sliding context window: which part of a session's history is sent to the model.

`SlidingWindowMemory.window` keeps the last k exchanges, then at most `max_messages` history
messages, then what fits the token budget, dropping the oldest first. It runs before every
model call, so it walks backwards from the end of the history, reads only the tail it needs
and caches per-message token counts. When a turn has only appended replies and tool results
since the last window over a history, that window is extended instead (`_extend`): on a
10,000-message history the first window takes about 3 ms, the same one again 2 µs, and one
after a reply and a tool result 11 µs (`tests/bench/bench_store.py`).

Rules, in the words the UI uses:

- An *exchange* starts at a user message and runs to the next one. Messages before the first
  user message (a greeting, a note) count as one exchange of their own.
- A *unit* is what is kept or dropped as a whole: one message, or an assistant message with
  tool calls together with the tool messages answering it. A window never splits a call from
  its result and never holds a tool message without its call; tool messages whose call is not
  directly before them (orphans) are left out wherever they are. An assistant message whose
  calls have no results (a Stop in between) is kept as it is: answering those calls is the
  interpreter's business, not the memory's.
- Display-only messages (confirmations, `metadata["display_only"]`) are never sent.
- The system prompt (`system_prompt`) is always first and always kept. SYSTEM messages inside
  the history are sent where they stand and slide out with their exchange: standing
  instructions belong in the system prompt, notes in history are as old as their exchange.
- The goal pin: when `goal` is given and no message in the window says it, a USER message with
  the goal (metadata `{"pinned_goal": True}`) goes right after the system prompt. A goal
  given as the person's message itself (one with images: AutoChat's `goal_to_pin`) is in
  the window when that message is, and is pinned with its images.
- `max_messages` counts history messages only; the system prompt and the pinned goal are extra.
- A window starts with the person's turn: replies older than the oldest user message in it
  (their question did not fit the budget or the cap) are left out too, since chat templates
  that want the person's turn first refuse a conversation that starts with a reply. The
  history's own preamble (a greeting before the first user message) is kept, and so is a
  reply that is the only one saying the goal.
- The newest user message is always kept, even alone over the token budget (with no user
  message at all, the newest unit is): a truncated context beats an empty one. So is the
  newest unit when it holds tool calls (the model's latest calls with their results), even
  over the budget or the cap: a model not shown the result of the call it just made (say,
  a file bigger than the budget) makes the same call again, step after step. When the
  system prompt, the pin and these exceed the budget, `token_count` says so and the
  provider decides; the window never raises for it.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Sequence
from typing import NamedTuple, Protocol, TypeVar

from gui_agent.exceptions import ConfigError
from gui_agent.tokens import TokenCounter, counter_for_model
from schema import Message, Role

__all__ = ["ContextWindow", "Memory", "SlidingWindowMemory"]

_Unit = tuple[Message, ...]
_MAX_PREFIXES = 1024  # histories whose prefix count is remembered (one per live session)
_MAX_WINDOWS = 256  # last windows kept to extend; each holds its messages until replaced
_GOAL_KEY = "\0goal"  # the pinned goal's entry in the token cache (no message id looks so)
_K = TypeVar("_K")
_V = TypeVar("_V")


def _trim(cache: dict[_K, _V], size: int) -> dict[_K, _V]:
    """The cache to keep after an insert: `cache` itself, or, once it holds more than `size`
    entries, a new dict with its newer half (dicts keep insertion order).

    Dropping half at once keeps eviction O(1) per entry. Dropping the single oldest entry
    each time would not be: the dict's front fills with deleted slots that every later
    `next(iter(cache))` walks over (about 2 µs per call at 10,000 entries).

    Callers store the returned dict in one assignment, so a cache can be shared between
    threads without a lock: a race can at worst lose an entry, which is counted again.
    """
    if len(cache) <= size:
        return cache
    try:
        return dict(itertools.islice(cache.items(), len(cache) - size // 2, None))
    except RuntimeError:  # another thread changed it meanwhile: trim on a later call
        return cache


class ContextWindow(NamedTuple):
    """What goes to the model for one call, and what the memory panel shows about it.
    (Immutable; a named tuple because one is built before every model call.)"""

    messages: tuple[Message, ...]
    """Exactly what is sent: the system prompt first (if any), the pinned goal, the history."""
    token_count: int
    """Tokens of `messages` by the memory's counter (may exceed the budget; see module doc)."""
    token_estimated: bool
    goal: str | None
    goal_pinned: bool
    """The goal had slid out (or never was in the history) and was re-inserted."""
    dropped: int
    """History messages that would be sent but were left out (display-only ones not counted)."""
    message_ids: tuple[str, ...]
    """Ids of the history messages included, oldest first."""


class _Last(NamedTuple):
    """The last window built over one history, to extend when only replies were appended."""

    params: tuple[object, ...]
    """(exchanges, token budget, system prompt, goal, message cap) it was built with."""
    start: int
    """Where the walk back through the history stopped: nothing before it was looked at."""
    seen: tuple[Message, ...]
    """history[start:] then. The history is the same one while these are still in place."""
    window: ContextWindow
    room_messages: int
    """History messages the cap still allows."""
    room_tokens: int | None
    """Tokens the budget still allows (None: no budget)."""


class Memory(Protocol):
    """Chooses the context for a model call. Plug in your own by implementing `window`."""

    def window(
        self,
        history: Sequence[Message],
        *,
        system_prompt: str | None = None,
        goal: str | Message | None = None,
        exchanges: int | None = None,
        token_budget: int | None = None,
    ) -> ContextWindow: ...


def _goal_text(message: Message) -> str:
    """What the memory panel calls a goal given as a message."""
    return message.content.strip() or "(the attached images)"


def _says_goal(message: Message, goal: str, goal_message: Message | None) -> bool:
    """True when `message` in the window makes the pin needless."""
    if goal_message is None:
        return message.content.strip() == goal
    return message.id == goal_message.id


def _positive(name: str, value: int | None, *, optional: bool) -> None:
    if value is None and optional:
        return
    if not isinstance(value, int) or value < 1:
        raise ConfigError(f"{name} must be a positive integer, got {value!r}")


class SlidingWindowMemory:
    """The last k exchanges, a hard message cap and a token budget (see the module doc).

    `counter` defaults to `counter_for_model(None)`, built on first use. Per-message counts
    are cached by message id in a bounded cache owned by this instance (`cache_size` entries,
    oldest dropped first).
    """

    def __init__(
        self,
        *,
        exchanges: int = 10,
        max_messages: int = 100,
        token_budget: int | None = None,
        counter: TokenCounter | None = None,
        cache_size: int = 10_000,
    ) -> None:
        _positive("exchanges", exchanges, optional=False)
        _positive("max_messages", max_messages, optional=False)
        _positive("token_budget", token_budget, optional=True)
        _positive("cache_size", cache_size, optional=False)
        self.exchanges = exchanges
        self.max_messages = max_messages
        self.token_budget = token_budget
        self._counter = counter
        # message id -> (content it was counted with, tokens); oldest first
        self._cache: dict[str, tuple[str, int]] = {}
        self._cache_size = cache_size
        self._base: int | None = None
        self._count_one: Callable[[Message], int] | None = None  # tokens one message adds
        # system prompt text -> (its message, its tokens); one prompt per session at most
        self._system: dict[str, tuple[Message, int]] = {}
        # history[0].id -> (end, history[end - 1].id, sendable messages in history[:end])
        self._prefixes: dict[str, tuple[int, str, int]] = {}
        # history[0].id -> the last window built over that history
        self._last: dict[str, _Last] = {}

    @property
    def counter(self) -> TokenCounter:
        if self._counter is None:
            self._counter = counter_for_model(None)
        return self._counter

    def _base_tokens(self) -> int:
        """What an empty request costs (reply priming); the same for every call."""
        if self._base is None:
            self._base = self.counter.count_messages(())
        return self._base

    def _counting(self) -> Callable[[Message], int]:
        """The function giving the tokens one message adds to a request, chosen once: the
        counter's own `count_message` when it has one, else `count_messages` of the message
        alone minus what an empty request costs."""
        if self._count_one is None:
            counter, base = self.counter, self._base_tokens()
            own = getattr(counter, "count_message", None)
            if callable(own):
                self._count_one = own
            else:
                self._count_one = lambda message: max(counter.count_messages((message,)) - base, 0)
        return self._count_one

    def window(
        self,
        history: Sequence[Message],
        *,
        system_prompt: str | None = None,
        goal: str | Message | None = None,
        exchanges: int | None = None,
        token_budget: int | None = None,
    ) -> ContextWindow:
        """The context for the next model call. `exchanges` and `token_budget` override this
        memory's defaults for one call (per-session settings); None keeps the default.
        `goal`: text, or the person's message that set it (see the module doc)."""
        if exchanges is None:
            k = self.exchanges
        else:
            if type(exchanges) is not int or exchanges < 1:
                _positive("exchanges", exchanges, optional=False)
            k = exchanges
        if token_budget is None:
            budget = self.token_budget
        else:
            _positive("token_budget", token_budget, optional=False)
            budget = token_budget
        goal_message: Message | None = None
        if isinstance(goal, Message):
            goal_message, goal = goal, _goal_text(goal)
        elif goal is not None:
            goal = goal.strip() or None
        count = self._count_one or self._counting()
        goal_key = goal if goal_message is None else goal_message.id
        params = (k, budget, system_prompt, goal_key, self.max_messages)
        if history:
            last = self._last.get(history[0].id)
            if last is not None and last.params == params:
                extended = self._extend(history, last, count)
                if extended is not None:
                    return extended
        base = self._base if self._base is not None else self._base_tokens()

        units, costs, mandatory, scanned_from, sendable_scanned = self._collect(history, k, count)

        fixed: list[Message] = []
        fixed_tokens = base
        if system_prompt:
            system, tokens = self._system_message(system_prompt, count)
            fixed.append(system)
            fixed_tokens += tokens

        chosen, used = self._select(
            units, costs, mandatory, None if budget is None else budget - fixed_tokens
        )
        chosen.sort(reverse=True)  # oldest first
        shed = self._answers_first(units, chosen)
        if shed and self._preamble(history, units, chosen[0], scanned_from):
            shed = 0
        pinned = False
        if goal is not None and not any(
            _says_goal(m, goal, goal_message) for i in chosen[shed:] for m in units[i]
        ):
            shed = 0  # said only by a reply before the person's words (kept), or pinned:
            if not any(_says_goal(m, goal, goal_message) for i in chosen for m in units[i]):
                if goal_message is None:
                    pin = Message(role=Role.USER, content=goal, metadata={"pinned_goal": True})
                    fixed_tokens += self._tokens(_GOAL_KEY, pin, count)
                else:
                    pin = Message(
                        role=Role.USER,
                        content=goal_message.content,
                        images=goal_message.images,
                        metadata={"pinned_goal": True},
                    )
                    fixed_tokens += self._tokens(_GOAL_KEY + goal_message.id, pin, count)
                fixed.append(pin)  # (the person's words, first: nothing is shed after it)
                pinned = True
                if budget is not None:  # a tighter budget can only shrink the choice
                    chosen, used = self._select(units, costs, mandatory, budget - fixed_tokens)
                    chosen.sort(reverse=True)
        shed_tokens = shed_messages = 0
        if shed:
            shed_tokens = sum(costs[i] for i in chosen[:shed])
            shed_messages = sum(len(units[i]) for i in chosen[:shed])
            del chosen[:shed]
        included = [m for i in chosen for m in units[i]]
        sendable_before = self._sendable_before(history, scanned_from) if scanned_from else 0
        window = ContextWindow(
            (*fixed, *included),
            fixed_tokens + used - shed_tokens,
            (self._counter or self.counter).estimated,
            goal,
            pinned,
            sendable_before + sendable_scanned - len(included),
            tuple([m.id for m in included]),
        )
        if history:
            # The room left counts what was shed: the walk over a longer history sheds it
            # again only while it still chooses it (see `_extend`).
            room_tokens = None if budget is None else budget - window.token_count - shed_tokens
            self._keep(
                history[0].id,
                _Last(
                    params,
                    scanned_from,
                    tuple(map(history.__getitem__, range(scanned_from, len(history)))),
                    window,
                    self.max_messages - len(included) - shed_messages,
                    room_tokens,
                ),
            )
        return window

    @staticmethod
    def _answers_first(units: list[_Unit], chosen: list[int]) -> int:
        """How many of the `chosen` units (oldest first) come before the oldest user message
        among them: replies whose question the budget or the cap left out (or the history's
        preamble: `_preamble` keeps it). Sent, they would start the window with a reply,
        which chat templates that want the person's turn first (after the system prompt)
        refuse, and which reads as an answer to nothing. 0 when no user message was
        chosen."""
        for position, index in enumerate(chosen):
            if units[index][0].role is Role.USER:
                return position
        return 0

    def _preamble(
        self, history: Sequence[Message], units: list[_Unit], oldest: int, scanned_from: int
    ) -> bool:
        """Whether unit `oldest` comes before the person's first message (a greeting, a
        note): the history's preamble, kept, not a reply to a question left out. Looks in
        the units the walk collected, then, only when none of them says, before them."""
        if any(unit[0].role is Role.USER for unit in units[oldest + 1 :]):
            return False
        return scanned_from == 0 or self._find_user(history, scanned_from - 1)[1] is None

    # --- extending the last window -------------------------------------------------------

    def _extend(
        self, history: Sequence[Message], last: _Last, count: Callable[[Message], int]
    ) -> ContextWindow | None:
        """The window for `history` built from `last`, or None when the full walk must decide.

        The same history with nothing new gets the same window. An agent's turn appends
        replies and tool results, then windows again. When the history is the one `last`
        was built over with only such messages appended, and they fit the cap and the
        budget that were left, the full walk would keep everything it kept before and add
        them: no exchange closed (no user message), no older unit got room, none lost it.
        So they are appended to the last window.

        Anything else goes the full way: a user message, a display-only one, a tool result
        whose call is not among the new messages, a message saying the goal, no room, or a
        history in which a message the last walk looked at is no longer the same object in
        the same place (checked at C speed). Like `dropped` (see `_sendable_before`), this
        takes histories to grow at the end: what lies before the part looked at is not
        compared. `tests/gui_agent/test_memory.py` checks it against the full walk on
        thousands of random histories.
        """
        seen = last.seen
        start, end = last.start + len(seen), len(history)
        if end < start:
            return None
        # Item by item, not a slice: any Sequence will do, and only the tail is read.
        if not all(map(operator.is_, map(history.__getitem__, range(last.start, start)), seen)):
            return None
        window = last.window
        if end == start:  # nothing new (a front end showing the window again)
            return window
        goal_key = last.params[3]  # the goal's text, or the id of the message that set it
        cache = self._cache
        added: list[Message] = []
        calls: frozenset[str] = frozenset()  # calls of the newest assistant message added
        cost = 0
        tool, user = Role.TOOL, Role.USER
        for index in range(start, end):
            message = history[index]
            if message.role is user or message.display_only:
                return None
            if message.role is tool:
                if message.tool_call_id not in calls:
                    return None
            else:
                calls = frozenset([c.id for c in message.tool_calls])
            if goal_key is not None and (
                message.id == goal_key or message.content.strip() == goal_key
            ):
                return None
            known = cache.get(message.id)
            if known is None or known[0] != message.content:
                known = self._remember(message.id, message, count)
                cache = self._cache
            cost += known[1]
            added.append(message)
        room_tokens = last.room_tokens
        if len(added) > last.room_messages or (room_tokens is not None and cost > room_tokens):
            return None
        extended = ContextWindow(
            (*window.messages, *added),
            window.token_count + cost,
            window.token_estimated,
            window.goal,
            window.goal_pinned,
            window.dropped,
            (*window.message_ids, *[m.id for m in added]),
        )
        self._keep(
            history[0].id,
            _Last(
                last.params,
                last.start,
                (*seen, *added),
                extended,
                last.room_messages - len(added),
                None if room_tokens is None else room_tokens - cost,
            ),
        )
        return extended

    def _keep(self, key: str, last: _Last) -> None:
        windows = self._last
        windows.pop(key, None)  # re-inserted as the newest
        windows[key] = last
        self._last = _trim(windows, _MAX_WINDOWS)

    # --- walking the history -------------------------------------------------------------

    def _collect(
        self, history: Sequence[Message], k: int, count: Callable[[Message], int]
    ) -> tuple[list[_Unit], list[int], int | None, int, int]:
        """Units of the last `k` exchanges, newest first, stopping early once the message cap
        is reached. Returns (units, their tokens, index of the mandatory unit, first history
        index looked at, sendable messages from there on). The mandatory unit is the newest
        user message, or the newest unit without one.

        Every unit looked at is counted (at most the message cap's worth): counts are cached
        by message id, so each message is counted once."""
        units: list[_Unit] = []
        costs: list[int] = []
        cache = self._cache
        pending: list[Message] = []  # tool messages seen, newest first, awaiting their call
        collected = 0
        closed = 0
        sendable = 0
        mandatory: int | None = None
        tool, assistant, user = Role.TOOL, Role.ASSISTANT, Role.USER
        i = len(history) - 1
        while i >= 0:
            message = history[i]
            if message.display_only:
                i -= 1
                continue
            sendable += 1
            if message.role is tool:
                pending.append(message)
                i -= 1
                continue
            unit: _Unit = (message,)
            if pending:
                if message.role is assistant and message.tool_calls:
                    ids = {call.id for call in message.tool_calls}
                    unit = (message, *[t for t in reversed(pending) if t.tool_call_id in ids])
                pending.clear()  # tool messages not taken into the unit are orphans
            units.append(unit)
            cost = 0
            for part in unit:  # the token cache, inlined: this runs for every message looked at
                known = cache.get(part.id)
                if known is None or known[0] != part.content:
                    known = self._remember(part.id, part, count)
                    cache = self._cache  # may have been trimmed into a new dict
                cost += known[1]
            costs.append(cost)
            collected += len(unit)
            i -= 1
            if message.role is user:
                if mandatory is None:
                    mandatory = len(units) - 1
                closed += 1
                if closed >= k:
                    break
            if collected >= self.max_messages:
                # Nothing older fits the cap; only the newest user message may still be kept.
                if mandatory is None:
                    looked_from = i
                    i, found = self._find_user(history, i)
                    sendable += sum(
                        1 for j in range(i + 1, looked_from + 1) if not history[j].display_only
                    )
                    if found is not None:
                        units.append((found,))
                        costs.append(self._tokens(found.id, found, count))
                        mandatory = len(units) - 1
                break
        if mandatory is None and units:
            mandatory = 0
        return units, costs, mandatory, max(i + 1, 0), sendable

    @staticmethod
    def _find_user(history: Sequence[Message], i: int) -> tuple[int, Message | None]:
        """The newest sendable user message at or before index `i`, and the index before it
        (-1 and None when there is none)."""
        while i >= 0:
            message = history[i]
            i -= 1
            if message.role is Role.USER and not message.display_only:
                return i, message
        return i, None

    def _select(
        self,
        units: list[_Unit],
        costs: list[int],
        mandatory: int | None,
        budget_left: int | None,
    ) -> tuple[list[int], int]:
        """The mandatory unit (and the newest one, when it holds tool calls), then units
        newest first while the cap and budget allow. Returns the chosen unit indices and
        their tokens."""
        if mandatory is None:
            return [], 0
        chosen = [mandatory]
        used_messages, used_tokens = len(units[mandatory]), costs[mandatory]
        first = 0  # the first unit left to choose
        if mandatory and units[0][0].tool_calls:
            # The model's latest tool calls and their results are kept whatever they cost:
            # left out, the model would not see that the calls ran and would make them
            # again, step after step, until the turn's limit.
            chosen.append(0)
            used_messages += len(units[0])
            used_tokens += costs[0]
            first = 1
        cap = self.max_messages
        for index in range(first, len(units)):
            if index == mandatory:
                continue
            unit, cost = units[index], costs[index]
            if used_messages + len(unit) > cap or (
                budget_left is not None and used_tokens + cost > budget_left
            ):
                break
            chosen.append(index)
            used_messages += len(unit)
            used_tokens += cost
        return chosen, used_tokens

    def _sendable_before(self, history: Sequence[Message], end: int) -> int:
        """Sendable (not display-only) messages in `history[:end]`, for `dropped`.

        Histories grow at the end, so the count is remembered per history (keyed by its first
        message) and only the messages added since the last call are looked at. The
        remembered count is reused only while the message at its end is still in place.
        """
        if end <= 0:
            return 0
        key = history[0].id
        start = count = 0
        known = self._prefixes.get(key)
        if known is not None:
            index, last_id, value = known
            if index <= end and history[index - 1].id == last_id:
                start, count = index, value
        count += sum(1 for j in range(start, end) if not history[j].display_only)
        prefixes = self._prefixes
        prefixes.pop(key, None)  # re-inserted as the newest
        prefixes[key] = (end, history[end - 1].id, count)
        self._prefixes = _trim(prefixes, _MAX_PREFIXES)
        return count

    def _system_message(self, prompt: str, count: Callable[[Message], int]) -> tuple[Message, int]:
        """The SYSTEM message for `prompt` and its tokens, built once per prompt text:
        messages are immutable, so every window with this prompt can share it."""
        known = self._system.get(prompt)
        if known is not None:
            return known
        system = Message(role=Role.SYSTEM, content=prompt)
        entry = (system, count(system))
        self._system[prompt] = entry
        self._system = _trim(self._system, _MAX_PREFIXES)
        return entry

    # --- token costs ---------------------------------------------------------------------

    def _tokens(self, key: str, message: Message, count: Callable[[Message], int]) -> int:
        """Tokens `message` adds to a request, from the cache under `key` or counted now.
        (The walks inline this lookup: they run it for every message they look at.)"""
        known = self._cache.get(key)
        if known is None or known[0] != message.content:
            known = self._remember(key, message, count)
        return known[1]

    def _remember(
        self, key: str, message: Message, count: Callable[[Message], int]
    ) -> tuple[str, int]:
        """Count the tokens `message` adds to a request and cache them under `key` (its id).
        Messages are immutable; the stored content guards against an edited copy that kept
        its id.

        The cache is a plain dict, safe to share between threads without a lock (see
        `_trim`): a race can at worst count a message twice.
        """
        entry = (message.content, count(message))
        cache = self._cache
        cache[key] = entry
        if len(cache) > self._cache_size:
            self._cache = _trim(cache, self._cache_size)
        return entry
