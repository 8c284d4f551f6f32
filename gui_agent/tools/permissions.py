"""Whether a tool call may run freely, must be refused, or needs a person's approval, and
how each tool of a chat stands (`standings`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass
from types import MappingProxyType

from gui_agent.exceptions import ConfigError
from gui_agent.tools.definition import Tool
from schema import PermissionMode


def _coerce(name: str, mode: PermissionMode | str) -> PermissionMode:
    try:
        return PermissionMode(mode)
    except ValueError:
        choices = ", ".join(repr(m.value) for m in PermissionMode)
        raise ConfigError(
            f"permission for tool {name!r} is {mode!r}; use one of {choices}"
        ) from None


class PermissionPolicy:
    """Per-tool modes over defaults chosen by the tool's `destructive` flag. Immutable.

    Order of precedence in `decide`:

    1. an explicit ALLOW or DENY for the tool;
    2. the person allowed the tool for this session (`session_allowed`) -> ALLOW; this also
       lifts an explicit ASK, since "allow for this session" is that person's later answer;
    3. an explicit ASK;
    4. `destructive_default` for destructive tools, `safe_default` for the rest.
    """

    __slots__ = ("_destructive_default", "_modes", "_safe_default")

    def __init__(
        self,
        modes: Mapping[str, PermissionMode | str] | None = None,
        *,
        destructive_default: PermissionMode = PermissionMode.ASK,
        safe_default: PermissionMode = PermissionMode.ALLOW,
    ) -> None:
        self._modes: Mapping[str, PermissionMode] = MappingProxyType(
            {name: _coerce(name, mode) for name, mode in (modes or {}).items()}
        )
        self._destructive_default = _coerce("<destructive default>", destructive_default)
        self._safe_default = _coerce("<safe default>", safe_default)

    @property
    def modes(self) -> Mapping[str, PermissionMode]:
        """The explicit per-tool modes (read-only)."""
        return self._modes

    @property
    def destructive_default(self) -> PermissionMode:
        return self._destructive_default

    @property
    def safe_default(self) -> PermissionMode:
        return self._safe_default

    def decide(self, tool: Tool, *, session_allowed: Set[str] = frozenset()) -> PermissionMode:
        """The mode for one call of `tool`."""
        explicit = self._modes.get(tool.name)
        if explicit in (PermissionMode.ALLOW, PermissionMode.DENY):
            return explicit
        if tool.name in session_allowed:
            return PermissionMode.ALLOW
        if explicit is not None:
            return explicit
        return self._destructive_default if tool.destructive else self._safe_default

    def with_modes(self, modes: Mapping[str, PermissionMode]) -> PermissionPolicy:
        """A copy with `modes` laid over this policy's per-tool modes (theirs win); this policy
        itself when `modes` is empty (it is immutable)."""
        if not modes:
            return self
        return PermissionPolicy(
            {**self._modes, **modes},
            destructive_default=self._destructive_default,
            safe_default=self._safe_default,
        )

    def __repr__(self) -> str:
        return (
            f"PermissionPolicy({dict(self._modes)!r}, destructive_default="
            f"{self._destructive_default.value!r}, safe_default={self._safe_default.value!r})"
        )


@dataclass(frozen=True, slots=True)
class ToolStanding:
    """How one tool of a chat is treated now."""

    name: str
    description: str
    destructive: bool
    """It changes things (runs code, writes files): by default it asks first."""
    mode: PermissionMode
    """What its next call does: runs (ALLOW), is refused (DENY) or asks the person (ASK)."""
    chosen: PermissionMode | None
    """The mode set for this chat (its settings' `permissions`); None: the app's own."""
    allowed_for_session: bool
    """The person allowed it for the session ("Allow for this session")."""


def with_mode(
    modes: Mapping[str, PermissionMode], tool: str, mode: PermissionMode | None
) -> dict[str, PermissionMode]:
    """`modes` with `tool`'s set to `mode` (None: taken out, so the app decides)."""
    changed = {name: value for name, value in modes.items() if name != tool}
    if mode is not None:
        changed[tool] = mode
    return changed


def standings(
    policy: PermissionPolicy,
    tools: Iterable[Tool],
    chosen: Mapping[str, PermissionMode],
    allowed: Set[str],
) -> tuple[ToolStanding, ...]:
    """Each of `tools` as a chat with the modes `chosen` for it (over `policy`) and the tools
    `allowed` for its session treats it, in the tools' order."""
    chat = policy.with_modes(chosen)
    return tuple(
        ToolStanding(
            name=tool.name,
            description=tool.description,
            destructive=tool.destructive,
            mode=chat.decide(tool, session_allowed=allowed),
            chosen=chosen.get(tool.name),
            allowed_for_session=tool.name in allowed,
        )
        for tool in tools
    )
