"""`Handlers` and `ChatView` are each made of parts in modules of their own: a name defined
in two parts would silently hide one of them (the first in the method order wins), so a page
button would run other code than its module says."""

from __future__ import annotations

import inspect

from backends.gradio import handlers as handlers_module
from backends.gradio.handlers import Handlers
from backends.gradio.renderer import ChatView


def _own_names(cls: type) -> set[str]:
    return {name for name in vars(cls) if not (name.startswith("__") and name.endswith("__"))}


def _clashes(cls: type) -> dict[str, list[str]]:
    where: dict[str, list[str]] = {}
    for part in cls.__mro__[:-1]:  # (not `object`)
        for name in _own_names(part):
            where.setdefault(name, []).append(part.__qualname__)
    return {name: parts for name, parts in where.items() if len(parts) > 1}


def test_every_handler_is_defined_in_one_part_only() -> None:
    assert _clashes(Handlers) == {}
    assert _own_names(Handlers) == set(), "Handlers itself only puts its parts together"


def test_every_part_of_the_chat_view_is_defined_once() -> None:
    assert _clashes(ChatView) == {}


def test_the_page_callbacks_are_reached_through_handlers() -> None:
    callbacks = [
        "on_load",
        "new_chat",
        "open_session",
        "settle",
        "stop",
        "approver",
        "edit_last",
        "ask_clear",
        "cancel_clear",
        "clear",
        "attach",
        "detach",
        "hide_tray",
        "send",
        "give_back",
        "retry",
        "toggle_autochat",
    ]
    for name in callbacks:
        assert callable(getattr(Handlers, name)), name
    streaming = {"send", "retry", "toggle_autochat", "settle"}
    assert {n for n in callbacks if inspect.isasyncgenfunction(getattr(Handlers, n))} == streaming
    for name in handlers_module.__all__:
        assert hasattr(handlers_module, name), name
