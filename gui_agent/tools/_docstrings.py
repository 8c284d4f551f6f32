"""Read a function's docstring: the prose description and one description per parameter.

Understands the three common layouts:

- Google: an ``Args:`` (or ``Arguments:`` / ``Parameters:``) section of ``name (type): text``;
- Sphinx: ``:param name: text`` or ``:param type name: text`` fields;
- NumPy: a ``Parameters`` header underlined with dashes, ``name : type`` then indented text.

Continuation lines (indented deeper than the entry) are joined with single spaces.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field

_PARAM_HEADERS = frozenset(
    {
        "args",
        "arguments",
        "parameters",
        "params",
        "keyword args",
        "keyword arguments",
        "other parameters",
    }
)
_OTHER_HEADERS = frozenset(
    {
        "returns",
        "return",
        "yields",
        "yield",
        "raises",
        "raise",
        "example",
        "examples",
        "note",
        "notes",
        "warning",
        "warnings",
        "see also",
        "attributes",
        "todo",
        "references",
    }
)
_GOOGLE_ENTRY = re.compile(r"^\*{0,2}(?P<name>\w+)\s*(?:\([^)]*\))?\s*:\s*(?P<text>.*)$")
_NUMPY_ENTRY = re.compile(r"^\*{0,2}(?P<name>\w+)\s*(?::.*)?$")
_SPHINX_PARAM = re.compile(
    r"^:(?:param|parameter|arg|argument|key|keyword)\s+(?:[^:]*\s)?\*{0,2}(?P<name>\w+)\s*:"
    r"\s*(?P<text>.*)$"
)
_SPHINX_FIELD = re.compile(r"^:\w+[^:]*:")
_UNDERLINE = re.compile(r"^\s*-{3,}\s*$")


@dataclass(frozen=True, slots=True)
class Docstring:
    description: str = ""
    params: dict[str, str] = field(default_factory=dict)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _header(lines: list[str], index: int) -> tuple[str, bool] | None:
    """The lower-cased section name at `index` and whether it is NumPy-underlined, or None."""
    text = lines[index].strip()
    underlined = index + 1 < len(lines) and bool(_UNDERLINE.match(lines[index + 1]))
    if underlined:
        name = text.lower()
    elif text.endswith(":") and _indent(lines[index]) == 0:
        name = text[:-1].strip().lower()
    else:
        return None
    if name in _PARAM_HEADERS or name in _OTHER_HEADERS:
        return name, underlined
    return None


def _join(parts: list[str]) -> str:
    return " ".join(part.strip() for part in parts if part.strip())


def _parse_section(lines: list[str], numpy: bool, params: dict[str, str]) -> None:
    """Collect entries of one parameter section (its body lines, header excluded)."""
    base: int | None = None
    current: str | None = None
    parts: list[str] = []

    def flush() -> None:
        if current is not None:
            params[current] = _join(parts)

    for line in lines:
        if not line.strip():
            continue
        indent = _indent(line)
        if base is None:
            base = indent
        if indent < base:
            break
        if indent == base:
            match = (_NUMPY_ENTRY if numpy else _GOOGLE_ENTRY).match(line.strip())
            if match is None:
                continue
            flush()
            current = match["name"]
            parts = [] if numpy else [match["text"]]
        elif current is not None:
            parts.append(line)
    flush()


def parse_docstring(doc: str | None) -> Docstring:
    """Split a docstring into its description and per-parameter descriptions."""
    if not doc:
        return Docstring()
    lines = inspect.cleandoc(doc).splitlines()
    params: dict[str, str] = {}
    description: list[str] = []
    in_description = True
    index = 0
    while index < len(lines):
        line = lines[index]
        header = _header(lines, index)
        if header is not None:
            in_description = False
            name, numpy = header
            start = index + (2 if numpy else 1)
            end = start
            while end < len(lines) and _header(lines, end) is None:
                if _SPHINX_FIELD.match(lines[end].strip()) and _indent(lines[end]) == 0:
                    break
                end += 1
            if name in _PARAM_HEADERS:
                _parse_section(lines[start:end], numpy, params)
            index = end
            continue
        sphinx = _SPHINX_PARAM.match(line.strip())
        if sphinx is not None or _SPHINX_FIELD.match(line.strip()):
            in_description = False
            parts = [sphinx["text"]] if sphinx else []
            index += 1
            while index < len(lines) and lines[index].strip() and _indent(lines[index]) > 0:
                parts.append(lines[index])
                index += 1
            if sphinx is not None:
                params[sphinx["name"]] = _join(parts)
            continue
        if in_description:
            description.append(line.rstrip())
        index += 1
    return Docstring(description="\n".join(description).strip(), params=params)
