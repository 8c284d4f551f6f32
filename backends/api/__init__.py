"""The HTTP + SSE API that Streamlit, React and scripts use (see `backends.api.app`).

The server's names are loaded on first use (PEP 562): `import backends.api.client` runs
this file too, and a program that only talks to a server must not load FastAPI, the store
and the interpreter to do so. Type checkers read the imports under TYPE_CHECKING;
`from backends.api import X` works for every X in `__all__`.
"""

import typing

from gui_agent.lazy_names import listing as _listing
from gui_agent.lazy_names import loader as _loader

if typing.TYPE_CHECKING:
    from backends.api.app import (
        DEFAULT_AUTH_RECHECK_S,
        DEFAULT_KEEPALIVE_S,
        DEFAULT_MAX_BODY_BYTES,
        create_api,
    )
    from backends.api.auth import LOCAL_USER, Authenticator, LoginThrottles
    from backends.api.errors import ApiError

_LAZY = {
    "DEFAULT_AUTH_RECHECK_S": "backends.api.app",
    "DEFAULT_KEEPALIVE_S": "backends.api.app",
    "DEFAULT_MAX_BODY_BYTES": "backends.api.app",
    "LOCAL_USER": "backends.api.auth",
    "ApiError": "backends.api.errors",
    "Authenticator": "backends.api.auth",
    "LoginThrottles": "backends.api.auth",
    "create_api": "backends.api.app",
}

__all__ = [
    "DEFAULT_AUTH_RECHECK_S",
    "DEFAULT_KEEPALIVE_S",
    "DEFAULT_MAX_BODY_BYTES",
    "LOCAL_USER",
    "ApiError",
    "Authenticator",
    "LoginThrottles",
    "create_api",
]


if not typing.TYPE_CHECKING:
    # Hidden from type checkers, which would otherwise take any misspelt name imported from
    # here for an `Any`; they see the real names in the imports above.
    __getattr__ = _loader(__name__, _LAZY, globals())

__dir__ = _listing(globals(), __all__)
