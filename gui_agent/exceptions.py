"""The one error tree of GuiAgent.

GuiAgentError
├── UserError                 misuse: fix the call or the configuration
│   ├── ConfigError           bad configuration (unknown model, missing key, unsafe bind)
│   ├── IllegalTransition     a state change the interpreter's machine does not allow
│   ├── FellBehind            a reader of `chat()` stopped reading; the turn went on without it
│   ├── ToolDefinitionError   a function that cannot become a tool
│   └── InvalidRequest        a request that breaks the contract (empty, too long, unknown id)
│       ├── SessionNotFound   no such session for this owner, or it was closed meanwhile
│       └── Conflict          fine, but not now: a turn runs, or another edit is being made
├── RunError                  something failed while a turn ran
│   ├── ModelError            a provider failed; connectors translate vendor errors to these
│   │   ├── ModelAuthError        the key was refused (names the variable to set)
│   │   ├── ModelNotFound         the server does not know the model
│   │   ├── ModelRateLimited      429; carries retry_after when the server said
│   │   ├── ModelServerError      5xx; carries retry_after too (503, 529) when the server said
│   │   ├── ModelTimeout          no answer in time
│   │   ├── ModelConnectionError  could not reach the server
│   │   ├── ModelResponseError    garbage, or a response over the size cap
│   │   └── CircuitOpen           too many recent failures; not calling for a while
│   ├── ToolExecutionError    a tool could not be run at all (not: a tool that raised)
│   └── PathEscape            a file path outside the session's folder
├── StoreError                the session store failed
│   ├── StoreVersionError     the database is newer than this program, or corrupt
│   └── StoreLocked           another server holds the database
└── AuthError                 a token or a login was refused
"""

from __future__ import annotations


class GuiAgentError(Exception):
    """Base of every error GuiAgent raises on purpose."""


class UserError(GuiAgentError):
    """The caller misused the library or configured it wrongly."""


class ConfigError(UserError):
    pass


class IllegalTransition(UserError):
    """The interpreter's state machine refused a transition; nothing changed."""

    def __init__(self, trigger: str, state: str) -> None:
        super().__init__(f"cannot {trigger!r} while the interpreter is {state}")
        self.trigger = trigger
        self.state = state


class ToolDefinitionError(UserError):
    pass


class FellBehind(UserError):
    """The code reading `Interpreter.chat()` stopped taking events for so long that more
    than `events.MAX_BEHIND` waited unread: the hub ended its subscription. The turn goes
    on; the session's history holds everything it says."""


class InvalidRequest(UserError):
    pass


class SessionNotFound(InvalidRequest):
    """No session with that id for this owner (it may exist for someone else), or it was
    closed (deleted, or unloaded while idle) while the request held it."""


class Conflict(InvalidRequest):
    """Well formed, but it clashes with what the session is doing now (a running turn, or
    another change being made); the same request may succeed later."""


class RunError(GuiAgentError):
    """A turn failed while running."""


class ModelError(RunError):
    """A provider failed. `retryable` says whether trying again may help; `retry_after` is
    how long the server asked to wait (its `Retry-After`), when it said."""

    retryable = False

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        provider: str = "",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.provider = provider
        self.retry_after = retry_after


class ModelAuthError(ModelError):
    pass


class ModelNotFound(ModelError):
    pass


class ModelRateLimited(ModelError):
    retryable = True

    def __init__(
        self,
        message: str,
        *,
        status: int | None = 429,
        provider: str = "",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, status=status, provider=provider, retry_after=retry_after)


class ModelServerError(ModelError):
    retryable = True


class ModelTimeout(ModelError):
    """The server stayed silent too long. `mid_reply`: what to say instead when it had
    begun the reply (it did answer, then stopped sending); empty when nothing says it."""

    retryable = True
    mid_reply: str = ""


class ModelConnectionError(ModelError):
    retryable = True


class ModelResponseError(ModelError):
    pass


class CircuitOpen(ModelError):
    pass


class ToolExecutionError(RunError):
    pass


class PathEscape(RunError):
    pass


class StoreError(GuiAgentError):
    pass


class StoreVersionError(StoreError):
    pass


class StoreLocked(StoreError):
    pass


class AuthError(GuiAgentError):
    pass
