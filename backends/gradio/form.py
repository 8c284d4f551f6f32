"""The chat form: the values a send reads (input box, role, model, settings, AutoChat
limits), checked into the schema's settings objects."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from backends.gradio.bases import Base
from backends.gradio.layout import SETTING_LABELS, Page
from gui_agent.exceptions import InvalidRequest
from schema import AutoChatSettings, SessionSettings

__all__ = [
    "SETTINGS_NOT_SAVED",
    "TEMPERATURE_RANGE",
    "Form",
    "based_fields",
    "form_fields",
    "take_each",
]

Settings = TypeVar("Settings", bound=BaseModel)

SETTINGS_NOT_SAVED = "{problem}. Not saved: the chat keeps that setting as it was until you fix it."


def _number(value: object, default: float) -> float:
    return float(value) if isinstance(value, int | float) else default


def _bounds(name: str) -> tuple[float, float]:
    """The range the schema allows the `SessionSettings` field `name` (its `ge` and `le`)."""
    low, high = -math.inf, math.inf
    for rule in SessionSettings.model_fields[name].metadata:
        low = float(getattr(rule, "ge", low))
        high = float(getattr(rule, "le", high))
    return low, high


TEMPERATURE_RANGE = _bounds("temperature")
"""What the temperature may be: the slider's range (layout.py) is the schema's."""


def _temperature(raw: object) -> float:
    """The temperature as typed, checked for its kind and range. The slider's number box
    takes any number, keeps it when left (page.js) and hands it on unchecked
    (typed_slider.py): the problem names the value and the range. Raises InvalidRequest."""
    span = "{:g} to {:g}".format(*TEMPERATURE_RANGE)
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        raise InvalidRequest(f"Temperature is empty: type a number from {span}")
    try:
        number = float(raw) if isinstance(raw, int | float | str) else math.nan
    except ValueError:
        number = math.nan
    if isinstance(raw, bool) or not math.isfinite(number):
        raise InvalidRequest(f"Temperature must be a number from {span}")
    low, high = TEMPERATURE_RANGE
    if not low <= number <= high:
        raise InvalidRequest(f"Temperature must be from {span}, not {number:g}")
    return number


def _typed_number(value: object) -> object:
    """A number box's value as typed: a number as a float (the browser sends 1 for 1.0),
    anything else (None for an empty box) as it is, for the check to name."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


def _limit(data: Mapping[Any, Any], component: Any, default: float) -> float | None:
    """An AutoChat limit: its number, the default when the form does not have the field
    (API callers, tests), None when the field is there but empty (the person cleared it)."""
    if component not in data:
        return default
    value = data[component]
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    return _number(value, default)


LIMIT_LABELS = {
    "max_turns": "Max automatic turns",
    "delay_s": "Delay between turns",
    "token_budget": "Token budget",
    "time_budget_s": "Time budget",
}
"""The AutoChat limits as the page labels them (problems name the field the person sees)."""

_LIMIT_ATTRIBUTES = {
    "max_turns": "max_turns",
    "delay_s": "delay",
    "token_budget": "token_budget",
    "time_budget_s": "time_budget",
}
"""Where the form keeps each limit as typed."""

_RULES = {"ge": "at least", "gt": "more than", "le": "at most", "lt": "less than"}


_WHOLE = frozenset({"max_tokens", "max_iterations", "memory_exchanges", "memory_token_budget"})
"""The Advanced settings that are counts (a fraction is refused, not rounded)."""
_WHOLE_LIMITS = frozenset({"max_turns", "token_budget"})
"""The AutoChat limits that are counts (a fraction is refused, not rounded)."""
_OPTIONAL = frozenset({"max_tokens", "memory_token_budget", "approval_timeout_s"})
"""The Advanced settings an empty field sets to None (no limit, the model's default)."""


_SETTING_NAMES = {**SETTING_LABELS, "system_prompt": "System prompt", "temperature": "Temperature"}
"""The settings as the page labels them."""


def _setting(name: str, raw: object) -> float | int | None:
    """An Advanced setting as typed, checked for its kind (the range is the schema's).
    Raises InvalidRequest naming the field."""
    label = SETTING_LABELS[name]
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        if name in _OPTIONAL:
            return None
        raise InvalidRequest(f"{label} is empty: type a number")
    try:
        number = float(raw) if isinstance(raw, int | float | str) else math.nan
    except ValueError:
        number = math.nan
    if isinstance(raw, bool) or not math.isfinite(number):
        raise InvalidRequest(f"{label} must be a number")
    if name in _WHOLE:
        if not number.is_integer():
            raise InvalidRequest(f"{label} must be a whole number")
        return int(number)
    return number


def _limit_error(exc: ValidationError, labels: Mapping[str, str] = LIMIT_LABELS) -> str:
    """ "Max automatic turns must be at least 1": the field's label and the rule it broke."""
    error = exc.errors(include_url=False)[0]
    name = str(error["loc"][0]) if error["loc"] else ""
    label = labels.get(name, name or "AutoChat")
    context = error.get("ctx") or {}
    for key, words in _RULES.items():
        bound = context.get(key)
        if isinstance(bound, int):  # (a token count's bound reads 2,147,483,647, not 2.1e+09)
            return f"{label} must be {words} {bound:,}"
        if isinstance(bound, float):
            return f"{label} must be {words} {bound:g}"
    return f"{label}: {error['msg']}"


@dataclass(frozen=True, slots=True)
class Form:
    """The values of the chat form (input box, role, settings, AutoChat limits)."""

    session_id: str = ""
    text: str = ""
    as_edit: bool = False
    role: str = ""
    model: str = ""
    system_prompt: str = ""
    temperature: object = 1.0
    """As typed (None: the box is empty); checked when saved (`session_setting`)."""
    autochat: bool = False
    max_turns: float | None = 5
    delay: float | None = 0.0
    token_budget: float | None = 0
    time_budget: float | None = 0
    """The AutoChat limits as typed (None: the field is empty)."""
    advanced: tuple[tuple[str, object], ...] = ()
    """The Advanced settings the form has, by `SessionSettings` field, as typed (a form
    without them, from an API caller or a test, keeps the session's)."""
    given: frozenset[str] = frozenset()
    """The settings and limits the form has a field for (`SessionSettings` and
    `AutoChatSettings` field names): what a send saves to its chat (`saves.py`)."""
    base: Base | None = None
    """What the tab's settings boxes last got from the server (bases.py; None: not said)."""

    @classmethod
    def read(cls, page: Page, data: Mapping[Any, Any]) -> Form:
        """The form from a handler's `{component: value}` input (missing ones default)."""

        def get(component: Any, default: Any) -> Any:
            value = data.get(component, default)
            return default if value is None else value

        return cls(
            session_id=str(get(page.session_id, "")),
            text=str(get(page.chat_input, "")),
            as_edit=bool(get(page.edit_mode, False)),
            role=str(get(page.role_picker, "")),
            model=str(get(page.model_picker, "")),
            system_prompt=str(get(page.system_prompt, SessionSettings().system_prompt)),
            temperature=_typed_number(data[page.temperature]) if page.temperature in data else 1.0,
            autochat=bool(get(page.autochat_toggle, False)),
            max_turns=_limit(data, page.max_turns, 5),
            delay=_limit(data, page.delay, 0.0),
            token_budget=_limit(data, page.token_budget, 0),
            time_budget=_limit(data, page.time_budget, 0),
            advanced=tuple(
                (name, data[component])
                for name, component in page.advanced_settings().items()
                if component in data
            ),
            given=frozenset(
                name for name, component in form_fields(page).items() if component in data
            ),
            base=Base.decode(data.get(page.form_base)),
        )

    def typed(self, name: str) -> object:
        """The field `name` (a settings or limit field) as the form has it, before it is
        checked: what its box shows."""
        if name in _LIMIT_ATTRIBUTES:
            return getattr(self, _LIMIT_ATTRIBUTES[name])
        if name in ("system_prompt", "temperature"):
            return getattr(self, name)
        return dict(self.advanced).get(name)

    def boxes(self) -> dict[str, object]:
        """The settings and limits the form has a field for, as their boxes show them."""
        return {name: self.typed(name) for name in self.given}

    def autochat_settings(self, *, enabled: bool | None = None) -> AutoChatSettings:
        """AutoChat settings from the form; 0 means "no budget". Raises InvalidRequest
        naming the first field that is wrong, as the page labels it ("Max automatic turns
        must be at least 1")."""
        on = self.autochat if enabled is None else enabled
        auto = AutoChatSettings(enabled=on)
        for name in LIMIT_LABELS:
            auto = self.autochat_limit(name, auto)
        return auto

    def autochat_limit(self, name: str, base: AutoChatSettings) -> AutoChatSettings:
        """`base` with only the form's limit `name` (an `AutoChatSettings` field), so that a
        field's save cannot undo another field saved meanwhile. Raises InvalidRequest
        naming the field when it is empty or out of range."""
        value = getattr(self, _LIMIT_ATTRIBUTES[name])
        label = LIMIT_LABELS[name]
        budget = name in ("token_budget", "time_budget_s")
        if value is None:
            hint = " (0 for none)" if budget else ""
            raise InvalidRequest(f"{label} is empty: type a number{hint}")
        if budget and value < 0:
            raise InvalidRequest(f"{label} must be 0 (none) or more")
        if name in _WHOLE_LIMITS and not float(value).is_integer():
            raise InvalidRequest(f"{label} must be a whole number")  # (not rounded)
        if name == "token_budget":
            value = int(value) if int(value) > 0 else None
        elif name == "time_budget_s":
            value = value if value > 0 else None
        elif name == "max_turns":
            value = int(value)
        try:
            return AutoChatSettings.model_validate({**base.model_dump(), name: value})
        except ValidationError as exc:
            raise InvalidRequest(_limit_error(exc)) from None

    def autochat_or(
        self, fallback: AutoChatSettings, *, enabled: bool | None = None
    ) -> tuple[AutoChatSettings, str | None]:
        """`fallback` with the form's on/off and the limits the form has a field for, a
        limit that is wrong keeping `fallback`'s value, and what is wrong with the first
        such limit."""
        on = self.autochat if enabled is None else enabled
        names = [name for name in LIMIT_LABELS if name in self.given]
        return take_each(names, self.autochat_limit, fallback.model_copy(update={"enabled": on}))

    def session_settings(self, base: SessionSettings) -> SessionSettings:
        """`base` with the form's system prompt, temperature and Advanced settings (those
        the form has a field for). Raises InvalidRequest naming the first field that is
        wrong, as the page labels it ("Max tokens must be at least 1")."""
        settings = base
        for name in _SETTING_NAMES:
            if name in self.given:
                settings = self.session_setting(name, settings)
        return settings

    def session_setting(self, name: str, base: SessionSettings) -> SessionSettings:
        """`base` with only the form's setting `name` (a `SessionSettings` field; `base`
        as it is when the form does not have that Advanced field), so that a field's save
        cannot undo another field saved meanwhile. Raises InvalidRequest naming the field."""
        value: object
        if name == "system_prompt":
            value = self.system_prompt
        elif name == "temperature":
            value = _temperature(self.temperature)
        else:
            typed = dict(self.advanced)
            if name not in typed:
                return base
            value = _setting(name, typed[name])
        try:
            return SessionSettings.model_validate({**base.model_dump(), name: value})
        except ValidationError as exc:
            raise InvalidRequest(_limit_error(exc, _SETTING_NAMES)) from None

    def problem(self, name: str | None = None, *, limit: bool = False) -> str | None:
        """What is wrong with the form's setting `name` (with `limit`, its AutoChat limit
        `name`; None: with any of its settings, or of its limits), in the page's words, or
        None when it is right."""
        try:
            if limit and name is not None:
                self.autochat_limit(name, AutoChatSettings())
            elif limit:
                self.autochat_settings()
            elif name is not None:
                self.session_setting(name, SessionSettings())
            else:
                self.session_settings(SessionSettings())
        except InvalidRequest as exc:
            return str(exc)
        return None

    def settings_or(self, base: SessionSettings) -> tuple[SessionSettings, str | None]:
        """`base` with the settings the form has a field for, a setting that is wrong
        keeping `base`'s value, and what is wrong with the first such setting."""
        names = [name for name in _SETTING_NAMES if name in self.given]
        return take_each(names, self.session_setting, base)


def form_fields(page: Page) -> dict[str, Any]:
    """The form's settings and AutoChat limits, by schema field."""
    return {
        "system_prompt": page.system_prompt,
        "temperature": page.temperature,
        **page.advanced_settings(),
        **page.autochat_limits(),
    }


def based_fields(page: Page) -> dict[str, Any]:
    """The boxes whose values the tab's base keeps (bases.py), by schema field: the form's,
    and the chat's title (its box under "Manage this chat", which a send does not read)."""
    return {**form_fields(page), "title": page.rename_box}


def take_each(
    names: Iterable[str],
    take: Callable[[str, Settings], Settings],
    base: Settings,
    *,
    keep: Callable[[str], bool] | None = None,
) -> tuple[Settings, str | None]:
    """`base` with each field of `names` that `take` finds right (and `keep` lets through:
    saves.py keeps only a tab's newest save of a field), and the problem of the first one
    it finds wrong."""
    problem: str | None = None
    for name in names:
        try:
            taken = take(name, base)
        except InvalidRequest as exc:
            problem = problem or str(exc)
            continue
        if keep is None or keep(name):
            base = taken
    return base, problem
