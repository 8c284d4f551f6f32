"""Who may use GuiAgent: session tokens, the signing key, the users file (and watching it for
removed users), the bind check."""

from gui_agent.auth.revoked import REVOKED_FILE_NAME, RevokedTokens
from gui_agent.auth.secrets import SECRET_ENV_VAR, load_or_create_signing_key
from gui_agent.auth.throttle import LoginThrottle
from gui_agent.auth.tokens import Claims, TokenService
from gui_agent.auth.users import (
    USERS_FILE_NAME,
    ProxyHeaderAuth,
    UserDB,
    check_bind_safety,
    is_loopback,
)
from gui_agent.auth.watch import USERS_WATCH_S, UsersChange, UsersWatcher

__all__ = [
    "REVOKED_FILE_NAME",
    "SECRET_ENV_VAR",
    "USERS_FILE_NAME",
    "USERS_WATCH_S",
    "Claims",
    "LoginThrottle",
    "ProxyHeaderAuth",
    "RevokedTokens",
    "TokenService",
    "UserDB",
    "UsersChange",
    "UsersWatcher",
    "check_bind_safety",
    "is_loopback",
    "load_or_create_signing_key",
]
