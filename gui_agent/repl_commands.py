"""The terminal chat's slash commands: /stop, /auto, /role, /model, /window, /allowed, /help.

A command acts on the session and returns the line to show; a mistyped one raises
InvalidRequest with one line saying what is accepted. /quit is the chat loop's own (it
ends the loop), and so are the blocks that three double quotes open (`BLOCK`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Final

from pydantic import ValidationError

from gui_agent.agents.roles import parse_role, role_label
from gui_agent.exceptions import InvalidRequest
from gui_agent.interpreter import Interpreter
from gui_agent.manager import SessionManager
from gui_agent.wording import counted
from schema import AutoChatSettings

HELP = (
    "commands: /stop /auto [on|off] /auto LIMIT VALUE /role NAME /model NAME /window "
    "/allowed [forget [TOOL]] /help /quit"
)
ALLOWED_USAGE = (
    "usage: /allowed shows the tools you allowed for this chat (they run without asking); "
    "/allowed forget makes them all ask again, /allowed forget TOOL one of them"
)
KEYS = "keys: Ctrl-C stops the reply (at the prompt: press twice to leave), Ctrl-D leaves"
EDITING_KEYS = (
    "editing (in a terminal): Left/Right, Home/End and Ctrl-A/E move in the line, "
    "Ctrl-U/K/W delete, Up/Down bring back what you typed before in this chat"
)
AUTO_USAGE = (
    "usage: /auto on|off; /auto shows AutoChat and its limits; /auto turns N, "
    "/auto tokens N|off, /auto time SECONDS|off, /auto delay SECONDS set them"
)
BLOCK = '"""'
BLOCKS = f"{BLOCK} at the start of a line opens a message of several lines; {BLOCK} ends it"

AUTO_LIMITS: Final[Mapping[str, tuple[str, type[int] | type[float]]]] = {
    "turns": ("max_turns", int),
    "tokens": ("token_budget", int),
    "time": ("time_budget_s", float),
    "delay": ("delay_s", float),
}
"""`/auto NAME VALUE`: the AutoChat limit each name sets, and the kind of number it takes."""


NOT_RUNNING: Final = "not running: your next message starts it, /auto on starts it now"
"""AutoChat switched on with no run going (none yet, or the last one stopped): the switch
alone does not make turns run, so `/auto` says what will."""


def autochat_summary(settings: AutoChatSettings, running: bool | None = None, turn: int = 0) -> str:
    """AutoChat's switch and every limit, in one line; with `running`, whether a run is
    going (at automatic turn `turn`, 0 before the first): the switch can be on while
    nothing runs, after a run stopped at a limit, on Stop or `task_complete`."""
    tokens = f"{settings.token_budget:,} tokens" if settings.token_budget else "no token budget"
    time = f"{settings.time_budget_s:g} s in all" if settings.time_budget_s else "no time budget"
    state = "on" if settings.enabled else "off"
    if running:
        state += f" (running: {_progress(turn, settings.max_turns)})"
    elif settings.enabled and running is not None:
        state += f" ({NOT_RUNNING})"
    return (
        f"AutoChat {state}: at most {settings.max_turns} "
        f"turn{'' if settings.max_turns == 1 else 's'}, "
        f"{tokens}, {time}, {settings.delay_s:g} s between turns"
    )


def _progress(turn: int, max_turns: int) -> str:
    if not turn:
        return "its automatic turns follow this one"
    return f"automatic turn {turn} of {max_turns}"


def parse_limit(name: str, value: str, current: AutoChatSettings) -> AutoChatSettings:
    """`current` with the limit `/auto NAME VALUE` sets, or InvalidRequest saying why not."""
    if name not in AUTO_LIMITS:
        raise InvalidRequest(AUTO_USAGE)
    field, kind = AUTO_LIMITS[name]
    number: int | float | None
    if value.lower() in ("off", "none") and field in ("token_budget", "time_budget_s"):
        number = None
    else:
        try:
            number = kind(value)
        except ValueError:
            raise InvalidRequest(f"/auto {name}: expected a number, got {value!r}") from None
    try:
        return AutoChatSettings.model_validate({**current.model_dump(), field: number})
    except ValidationError as exc:
        raise InvalidRequest(f"/auto {name}: {exc.errors()[0]['msg']}") from None


Command = Callable[[list[str], Interpreter, SessionManager], Awaitable[str]]
"""A slash command: its arguments, the chat's session and manager; the text to show."""


async def run_command(
    name: str, args: list[str], interpreter: Interpreter, manager: SessionManager
) -> str:
    """Run one slash command and return what to show; InvalidRequest (one line, with the
    choices) when it is wrong."""
    handler = COMMANDS.get(name.lower())
    if handler is None:
        raise InvalidRequest(f"unknown command {name}; {HELP}")
    return await handler(args, interpreter, manager)


async def _stop(args: list[str], interpreter: Interpreter, manager: SessionManager) -> str:
    return "" if await interpreter.stop() else "nothing is running\n"


def _summary(interpreter: Interpreter) -> str:
    """`autochat_summary` of the session as it is now, a run going or not."""
    settings, turn = interpreter.session.autochat, interpreter.autochat_turns
    return autochat_summary(settings, interpreter.autochat_active, turn) + "\n"


async def _auto(args: list[str], interpreter: Interpreter, manager: SessionManager) -> str:
    current = interpreter.session.autochat
    if not args:
        return _summary(interpreter)
    if len(args) == 1 and args[0].lower() == "on":
        return await _auto_on(interpreter)
    if len(args) == 1 and args[0].lower() == "off":
        await interpreter.update(autochat=current.model_copy(update={"enabled": False}))
        return "AutoChat off\n"
    if len(args) != 2:
        raise InvalidRequest(AUTO_USAGE)
    await interpreter.update(autochat=parse_limit(args[0].lower(), args[1], current))
    return _summary(interpreter)


async def _auto_on(interpreter: Interpreter) -> str:
    """Run AutoChat toward the person's latest message (`Interpreter.start_autochat`: a
    switch left on by a run that stopped starts a new run too), and say truly what
    happens."""
    if interpreter.autochat_active:
        turns = interpreter.session.autochat.max_turns
        return f"AutoChat is running: {_progress(interpreter.autochat_turns, turns)}\n"
    busy = interpreter.busy
    if not await interpreter.start_autochat():
        return "AutoChat on: your next message starts it, toward what that message asks\n"
    if busy:
        return "AutoChat on: it goes on when this turn ends\n"
    return "AutoChat on\n"  # its turns follow, shown as they run


async def _role(args: list[str], interpreter: Interpreter, manager: SessionManager) -> str:
    if len(args) != 1:
        choices = ", ".join(role_label(agent) for agent in interpreter.architectures)
        raise InvalidRequest(f"usage: /role NAME; roles: {choices}")
    role = parse_role(args[0], interpreter.architectures)
    await interpreter.set_agent(role)
    return f"role: {role_label(role)}\n"


async def _model(args: list[str], interpreter: Interpreter, manager: SessionManager) -> str:
    names = manager.models.names()
    if len(args) != 1:
        raise InvalidRequest(f"usage: /model NAME; models: {', '.join(names)}")
    if args[0] not in names:
        raise InvalidRequest(f"unknown model {args[0]!r}; choose one of: {', '.join(names)}")
    await manager.set_model(interpreter, args[0])
    return f"model: {args[0]}\n"


async def _window(args: list[str], interpreter: Interpreter, manager: SessionManager) -> str:
    window = interpreter.window()
    return (
        f"{counted(len(window.messages), 'message')}, "
        f"{counted(window.token_count, 'token')} in the window\n"
    )


async def _allowed(args: list[str], interpreter: Interpreter, manager: SessionManager) -> str:
    if args and (args[0].lower() != "forget" or len(args) > 2):
        raise InvalidRequest(ALLOWED_USAGE)
    before = interpreter.allowed_tools
    if args:
        tool = args[1] if len(args) == 2 else None
        if tool is not None and tool not in before:
            allowed = ", ".join(before) or "none"
            raise InvalidRequest(f"{tool!r} is not allowed for this chat; allowed: {allowed}")
        if not before:
            return "no tool was allowed for this chat\n"
        interpreter.forget_allowed_tools(tool)
        forgotten = ", ".join(sorted(set(before) - set(interpreter.allowed_tools)))
        return f"asks again before it runs: {forgotten}\n"
    if not before:
        return "no tool allowed for this chat: each that changes things asks first\n"
    return f"run without asking in this chat: {', '.join(before)}\n"


async def _help(args: list[str], interpreter: Interpreter, manager: SessionManager) -> str:
    return f"{HELP}\n{AUTO_USAGE}\n{ALLOWED_USAGE}\n{KEYS}\n{EDITING_KEYS}\n{BLOCKS}\n"


COMMANDS: Final[Mapping[str, Command]] = {
    "/stop": _stop,
    "/auto": _auto,
    "/role": _role,
    "/model": _model,
    "/window": _window,
    "/allowed": _allowed,
    "/help": _help,
}
