"""The HTTP + SSE API that Streamlit, React and scripts use (see `backends.api.app`)."""

from backends.api.app import (
    DEFAULT_AUTH_RECHECK_S,
    DEFAULT_KEEPALIVE_S,
    DEFAULT_MAX_BODY_BYTES,
    create_api,
)
from backends.api.auth import LOCAL_USER, Authenticator, LoginThrottles
from backends.api.errors import ApiError

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
