"""Session tokens: HS256 JWTs with a subject, an expiry and an optional password fingerprint
(`pwf`: which password the login was checked against, so a new password can end the tokens
issued under the old one; see `gui_agent.auth.users`).

A token grants everything its subject may do. Nothing here issues a narrower token, so a
claim that would narrow it (`sid`, a session scope) is refused rather than ignored: a
client holding such a token would believe it limited when it is not, and a claim nobody
issues is only something to forge.
"""

from __future__ import annotations

import math
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from jose import jwt
from jose.exceptions import JWTError

from gui_agent.exceptions import AuthError

ALGORITHM = "HS256"
DEFAULT_TTL_S = 12 * 3600
MAX_TOKEN_CHARS = 8192
CLOCK_SKEW_S = 60
"""How far in the future an `iat` (or `nbf`) may be before the token is refused."""
UNISSUED_CLAIMS = frozenset({"sid"})
"""Claims that would narrow a token to less than its subject's rights; never issued, so a
token carrying one is refused (it cannot be honoured as the scope it claims)."""


@dataclass(frozen=True, slots=True)
class Claims:
    """What a verified token says."""

    subject: str
    expires_at: datetime
    issued_at: datetime
    token_id: str
    password_fingerprint: str | None = None


class TokenService:
    """Issues and verifies session tokens signed with one secret.

    Only HS256 is accepted: a token whose header names any other algorithm (`none`, HS512,
    RS256, ...) is refused before its signature is looked at. `clock` returns seconds since
    the epoch and decides expiry (`exp`), `iat` and `nbf`. A time claim that is not a
    finite number within the years 1-9999 makes the token invalid, like a bad signature.
    """

    def __init__(
        self,
        secret: str,
        *,
        ttl_s: int = DEFAULT_TTL_S,
        issuer: str = "gui-agent",
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not secret:
            raise AuthError("the token signing secret is empty")
        if ttl_s <= 0:
            raise ValueError(f"ttl_s must be positive, not {ttl_s}")
        self._secret = secret
        self._ttl_s = ttl_s
        self._issuer = issuer
        self._clock = clock

    @property
    def ttl_s(self) -> int:
        return self._ttl_s

    def issue(
        self,
        subject: str,
        *,
        password_fingerprint: str | None = None,
    ) -> str:
        """A signed token for `subject`, valid for `ttl_s` seconds; `password_fingerprint`
        ties it to the password it was issued for."""
        if not subject:
            raise AuthError("a token needs a subject")
        now = int(self._clock())
        claims: dict[str, Any] = {
            "sub": subject,
            "iat": now,
            "exp": now + self._ttl_s,
            "iss": self._issuer,
            "jti": secrets.token_hex(16),
        }
        if password_fingerprint is not None:
            claims["pwf"] = password_fingerprint
        return jwt.encode(claims, self._secret, algorithm=ALGORITHM)

    def verify(self, token: str) -> Claims:
        """The token's claims; AuthError when it is not a valid, current token of ours."""
        if not isinstance(token, str) or not token or len(token) > MAX_TOKEN_CHARS:
            raise AuthError("malformed token")
        try:
            header = jwt.get_unverified_header(token)
        except JWTError as exc:
            raise AuthError("malformed token") from exc
        algorithm = header.get("alg")
        if algorithm != ALGORITHM:
            raise AuthError(f"token algorithm {algorithm!r} is not accepted")
        try:
            claims = jwt.decode(
                token,
                self._secret,
                algorithms=[ALGORITHM],
                issuer=self._issuer,
                options={
                    # exp, iat and nbf are checked below, against the injected clock (a
                    # `require_exp` here would make jose check exp against the real time).
                    "verify_exp": False,
                    "verify_iat": False,
                    "verify_nbf": False,
                    "verify_aud": False,
                    "require_sub": True,
                    "require_iss": True,
                },
            )
        except JWTError as exc:
            raise AuthError(f"invalid token: {exc}") from exc
        except (ValueError, TypeError, OverflowError) as exc:  # jose lets a few through raw
            raise AuthError("malformed token") from exc
        return self._check_claims(claims)

    def _check_claims(self, claims: dict[str, Any]) -> Claims:
        subject, token_id = claims.get("sub"), claims.get("jti")
        if not isinstance(subject, str) or not subject:
            raise AuthError("token has no subject")
        if UNISSUED_CLAIMS & claims.keys():
            names = ", ".join(sorted(UNISSUED_CLAIMS & claims.keys()))
            raise AuthError(f"token carries a claim this server never issues ({names})")
        expires, expires_at = _time(claims, "exp")
        issued, issued_at = _time(claims, "iat")
        fingerprint = claims.get("pwf")
        if fingerprint is not None and not isinstance(fingerprint, str):
            raise AuthError("token has an invalid password fingerprint")
        now = self._clock()
        if now >= expires:
            raise AuthError("token expired")
        if issued > now + CLOCK_SKEW_S:
            raise AuthError("token issued in the future")
        if "nbf" in claims and _time(claims, "nbf")[0] > now + CLOCK_SKEW_S:
            raise AuthError("token not valid yet")
        return Claims(
            subject=subject,
            expires_at=expires_at,
            issued_at=issued_at,
            token_id=token_id if isinstance(token_id, str) else "",
            password_fingerprint=fingerprint,
        )


def _time(claims: dict[str, Any], name: str) -> tuple[float, datetime]:
    """A time claim as seconds and as a datetime; AuthError unless it is a number that is a
    real date (`1e12`, `1e308`, infinity and NaN are not)."""
    value = claims.get(name)
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise AuthError(f"token has no valid {name!r} claim")
    try:
        seconds = float(value)
        if not math.isfinite(seconds):
            raise ValueError(name)
        return seconds, datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        raise AuthError(f"token has an out-of-range {name!r} claim") from None
