"""The chat form: the values a send reads (input box, role, model, settings, AutoChat
limits), checked into the schema's settings objects."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from backends.gradio.layout import SETTING_LABELS, Page
from gui_agent.exceptions import InvalidRequest
from schema import AutoChatSettings, SessionSettings

__all__ = ["SETTINGS_NOT_SAVED", "Form"]

SETTINGS_NOT_SAVED = "{problem}. Not saved: the chat keeps its previous settings until you fix it."


def _number(value: object, default: float) -> float:
    return float(value) if isinstance(value, int | float) else default


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

_RULES = {"ge": "at least", "gt": "more than", "le": "at most", "lt": "less than"}


_WHOLE = frozenset({"max_tokens", "max_iterations", "memory_exchanges", "memory_token_budget"})
"""The Advanced settings that are counts (a fraction is refused, not rounded)."""
_OPTIONAL = frozenset({"max_tokens", "memory_token_budget", "approval_timeout_s"})
"""The Advanced settings an empty field sets to None (no limit, the model's default)."""


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
        if isinstance(bound, int | float):
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
    temperature: float = 1.0
    autochat: bool = False
    max_turns: float | None = 5
    delay: float | None = 0.0
    token_budget: float | None = 0
    time_budget: float | None = 0
    """The AutoChat limits as typed (None: the field is empty)."""
    advanced: tuple[tuple[str, object], ...] = ()
    """The Advanced settings the form has, by `SessionSettings` field, as typed (a form
    without them, from an API caller or a test, keeps the session's)."""

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
            temperature=_number(get(page.temperature, 1.0), 1.0),
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
        )

    def autochat_settings(self, *, enabled: bool | None = None) -> AutoChatSettings:
        """AutoChat settings from the form; 0 means "no budget". Raises InvalidRequest
        naming the field as the page labels it ("Max automatic turns must be at least 1")."""
        max_turns, delay = self.max_turns, self.delay
        token_budget, time_budget = self.token_budget, self.time_budget
        if max_turns is None or delay is None:
            name = "max_turns" if max_turns is None else "delay_s"
            raise InvalidRequest(f"{LIMIT_LABELS[name]} is empty: type a number")
        if token_budget is None or time_budget is None:
            name = "token_budget" if token_budget is None else "time_budget_s"
            raise InvalidRequest(f"{LIMIT_LABELS[name]} is empty: type a number (0 for none)")
        for name, value in (("token_budget", token_budget), ("time_budget_s", time_budget)):
            if value < 0:
                raise InvalidRequest(f"{LIMIT_LABELS[name]} must be 0 (none) or more")
        tokens = int(token_budget)
        try:
            return AutoChatSettings(
                enabled=self.autochat if enabled is None else enabled,
                max_turns=int(max_turns),
                delay_s=delay,
                token_budget=tokens if tokens > 0 else None,
                time_budget_s=time_budget if time_budget > 0 else None,
            )
        except ValidationError as exc:
            raise InvalidRequest(_limit_error(exc)) from None

    def autochat_or(
        self, fallback: AutoChatSettings, *, enabled: bool | None = None
    ) -> tuple[AutoChatSettings, str | None]:
        """The form's AutoChat settings, or (when a limit is out of range) `fallback`'s
        limits with the form's on/off, and what is wrong."""
        on = self.autochat if enabled is None else enabled
        try:
            return self.autochat_settings(enabled=on), None
        except InvalidRequest as exc:
            return fallback.model_copy(update={"enabled": on}), str(exc)

    def session_settings(self, base: SessionSettings) -> SessionSettings:
        """`base` with the form's system prompt, temperature and Advanced settings. Raises
        InvalidRequest naming the field as the page labels it ("Max tokens must be at
        least 1")."""
        advanced = {name: _setting(name, raw) for name, raw in self.advanced}
        labels = {**SETTING_LABELS, "system_prompt": "System prompt", "temperature": "Temperature"}
        try:
            return SessionSettings.model_validate(
                {
                    **base.model_dump(),
                    "system_prompt": self.system_prompt,
                    "temperature": self.temperature,
                    **advanced,
                }
            )
        except ValidationError as exc:
            raise InvalidRequest(_limit_error(exc, labels)) from None

    def settings_or(self, base: SessionSettings) -> tuple[SessionSettings, str | None]:
        """The form's settings, or (when one is out of range) `base` with only the form's
        system prompt and temperature, and what is wrong."""
        try:
            return self.session_settings(base), None
        except InvalidRequest as exc:
            plain = dataclasses.replace(self, advanced=())
            try:
                return plain.session_settings(base), str(exc)
            except InvalidRequest:
                return base, str(exc)
