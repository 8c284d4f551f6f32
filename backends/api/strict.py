"""Request bodies read strictly typed: a value of another JSON type than its field's is
refused, never converted. pydantic's default (lax) mode reads `true` as 1, "0.5" or "1e1"
as a number and "yes" or 1 as `true`; a client that sent them has a bug, and a setting
saved that way (every reply cut after one token) hides it. Its strict mode, reading JSON,
refuses each as "Input should be a valid integer/number/boolean", while an enum still
takes its JSON string, a tuple its array, a datetime its ISO text and a decimal a whole
number. The request models are shared with the rest of GuiAgent (`schema`), so the
strictness is the API's: applied here, where it validates a body."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from pydantic_core import InitErrorDetails, PydanticSerializationError, to_json

__all__ = ["strictly"]

_M = TypeVar("_M", bound=BaseModel)
_Where = tuple[str | int, ...]


def strictly(model: type[_M], data: Mapping[str, Any]) -> _M:
    """`model` from `data`, a request's JSON as parsed, strictly typed (see the module
    docstring). Raises ValidationError naming the field.

    The values' own rules (a bound, a known word) are checked first, as wherever `model`
    is read (so a token count over the bound is refused here, not taken as the bound as a
    saved chat's is); then the types, on `data` as JSON. Text JSON cannot carry (half a
    surrogate pair, as `\\ud800` in a body reads) is refused naming its field: kept, it
    could be neither saved nor sent back. A part nested deeper than JSON is read here can
    only be one `model` leaves untyped (a `settings` object): the model that reads that
    part judges it."""
    validated = model.model_validate(data)
    try:
        as_json = to_json(data)
    except PydanticSerializationError:  # text that is not Unicode, or nested too deep
        found = _not_unicode(data)
        if found is None:
            return validated
        where, text = found
        error = InitErrorDetails(type="string_unicode", loc=where, input=text)
        raise ValidationError.from_exception_data(model.__name__, [error]) from None
    try:
        model.model_validate_json(as_json, strict=True)
    except ValidationError as exc:
        if exc.errors()[0]["type"] != "json_invalid":  # (nested too deep to read again)
            raise
    return validated


def _not_unicode(data: object) -> tuple[_Where, str] | None:
    """Where in `data` (parsed JSON) a text that is not Unicode is (a key or a value), and
    that text; None when every text is."""
    pending: list[tuple[_Where, object]] = [((), data)]
    while pending:
        where, value = pending.pop()
        if isinstance(value, str):
            if not _is_unicode(value):
                return where, value
        elif isinstance(value, Mapping):
            for key, item in value.items():
                if isinstance(key, str) and not _is_unicode(key):  # named as an escape
                    return (*where, key.encode("utf-8", "backslashreplace").decode()), key
                pending.append(((*where, key), item))
        elif isinstance(value, list):
            pending.extend(((*where, index), item) for index, item in enumerate(value))
    return None


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
