"""Who is calling: `POST /api/login` issues a bearer token, every other endpoint checks it.
The login also sets the token as an HttpOnly cookie that only the event streams accept, for
a browser's EventSource (`TOKEN_COOKIE`).

Three modes, chosen by the server's configuration:

- users file: login with a user name and password (checked in a worker thread, about as
  slowly for an unknown name as for a wrong password);
- trusted proxy header: the token is issued to the user the proxy names;
- neither (loopback development): the token is issued to "local" with no password.

Where no password is checked (the proxy named the user, or there is no login) the body is
still read: none, `{}` or a login's fields are fine, anything else (not JSON, not an object,
a field of the wrong type or name) is the 400 any endpoint gives a bad body (`LoginFields`).
A user name or password sent there is not checked, and the answer's `notice` says so.

Failed password logins are throttled per user name and per client address
(`gui_agent.auth.LoginThrottle`): past a few free attempts, 429 with `Retry-After`, and the
password is not even checked until then. A successful login forgets its name's failures, and
takes off its address's count only those made at that name from that address. An attempt
counts as failed from the moment it is let through until its password proves right, so a
burst of guesses sent at once is throttled exactly like the same guesses sent one after
another.

Tokens are HS256 JWTs from `gui_agent.auth.TokenService`; anything else (no token, a bad
signature, `alg: none`, an expired token, a removed user, a password changed since the
token was issued) is 401 with `WWW-Authenticate`. A password login's token carries the
fingerprint of the password hash it was checked against, and the users file is read on
every check, so removing a user or setting a new password (from another process) takes
effect at the next request; an event stream already open runs the same check again at a
bounded interval and ends when it fails (see `sse`). The server also watches the file
(`gui_agent.auth.UsersWatcher`, wired in `backends.server`): a removed user's running work
is stopped and their sessions closed, which ends their streams at once. A request that
finds its token's user gone, or their password changed, before the watcher has looked asks
it to look at once (`users_changed`) and is refused only when that is done; so an event
stream refused this way has the removed user's turn stopping in it before its end. A
users file that cannot be read (others may read it, half-written JSON) makes login and
every check 503 `login_unavailable`: the server's fault, not a wrong password; the reason,
which names the file, goes to the server log only.

`POST /api/logout` signs the token it carries out (its Authorization header, else the
login cookie): from then on that token is refused, until it would have expired anyway, a
restart included (`gui_agent.auth.RevokedTokens`); an event stream open with it ends at its
next check. The person's other tokens (other tabs, other devices) stay good.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from fastapi import Request, Response
from pydantic import BaseModel, ConfigDict, Field

from backends.api.bodies import read_object, validate
from backends.api.errors import ApiError, too_many_attempts, unauthorized
from backends.api.openapi import TOKEN_COOKIE
from backends.api.responses import AuthMode, LoginAnswer
from gui_agent.auth import LoginThrottle, ProxyHeaderAuth, TokenService, UserDB
from gui_agent.auth.revoked import RevokedTokens
from gui_agent.exceptions import AuthError

logger = logging.getLogger(__name__)

LOCAL_USER = "local"
"""The identity everyone shares when no login is configured (as on the Gradio page)."""

MAX_LOGIN_BYTES = 16_384
NEEDS_PASSWORD = (
    'this server signs in with a user name and password: send {"username": ..., "password": ...}'
)
"""A login sent without them (no body, or `{}`) to a server with a users file: 400 (a
request that cannot succeed as sent; 401 stays "wrong user name or password")."""

# The login's token is also set as a cookie, TOKEN_COOKIE (HttpOnly, SameSite=Strict,
# Path=/api), for a browser's EventSource, which cannot send an Authorization header. Only
# the event streams (reads) take it; every other endpoint wants the header, so the cookie
# can make no change happen, and another site's page can neither send it (SameSite) nor
# read a stream (no CORS). `POST /api/logout` removes it.


def set_token_cookie(response: Response, answer: LoginAnswer, *, secure: bool) -> Response:
    """`response` (a login's) carrying `answer`'s token as the login cookie, kept until the
    token expires (Secure over HTTPS)."""
    expires = datetime.fromisoformat(answer.expires_at)
    response.set_cookie(
        TOKEN_COOKIE,
        answer.token,
        max_age=max(int((expires - datetime.now(UTC)).total_seconds()), 0),
        path="/api",
        secure=secure,
        httponly=True,
        samesite="strict",
    )
    return response


def clear_token_cookie(response: Response, *, secure: bool) -> Response:
    """`response` removing the login cookie (the token itself is signed out by
    `Authenticator.sign_out`)."""
    response.delete_cookie(
        TOKEN_COOKIE, path="/api", secure=secure, httponly=True, samesite="strict"
    )
    return response


def _credentials(request: Request, *, cookie: bool) -> tuple[str, str] | None:
    """(scheme, token) of the request's Authorization header; without one, with `cookie`,
    the login cookie's token as a bearer token; None when it has neither."""
    header = request.headers.get("authorization", "")
    if header:
        scheme, _, token = header.partition(" ")
        return scheme, token
    if cookie and request.cookies.get(TOKEN_COOKIE):
        return "bearer", request.cookies[TOKEN_COOKIE]
    return None


_FIELD_WORDS = {"username": "user name", "password": "password"}
"""The login's fields as a person reads them."""


class LoginBody(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    username: str = Field(min_length=1, max_length=64)
    password: str = Field(min_length=1, max_length=4096)


class LoginFields(BaseModel):
    """A login's body where no password is checked: `LoginBody`'s fields, neither needed."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    username: str | None = None
    password: str | None = None


def _unchecked(fields: LoginFields, proxy_user: str | None) -> str | None:
    """What a login's answer says of the user name or password it was sent and did not
    check (the server has no login, or its proxy names the user); None when it was sent
    neither. A caller who typed them learns they made no difference."""
    if fields.username is None and fields.password is None:
        return None
    if proxy_user is not None:
        return (
            f"this server signs people in through its proxy, as {proxy_user!r}: the user "
            "name and password sent were not checked"
        )
    return (
        f"this server has no login: the user name and password sent were not checked, and "
        f"the token is for {LOCAL_USER!r}, as everyone's is here"
    )


def login_unavailable(problem: AuthError) -> ApiError:
    """503 for a users file that cannot be read (its mode, half-written JSON): the server's
    fault, not a wrong password. The reason names the file, so it goes to the server log,
    not to a caller who may not even be signed in."""
    logger.error("login is unavailable: %s", problem)
    return ApiError(
        503,
        "login_unavailable",
        "login is unavailable: the server cannot read its users file; the server log says why",
    )


@dataclass(frozen=True, kw_only=True)
class LoginThrottles:
    """Failed-login counters: per user name, and (more lenient, since people behind one
    proxy or NAT share an address) per client address."""

    by_user: LoginThrottle = field(default_factory=LoginThrottle)
    by_address: LoginThrottle = field(default_factory=lambda: LoginThrottle(free_attempts=20))


@dataclass(frozen=True, kw_only=True)
class Authenticator:
    tokens: TokenService
    users: UserDB | None = None
    proxy: ProxyHeaderAuth | None = None
    throttles: LoginThrottles = field(default_factory=LoginThrottles)
    users_changed: Callable[[], Awaitable[object]] | None = None
    """Applies a change of the users file now (the server's `UsersWatcher.check`), when a
    request finds one the server has not acted on yet."""
    revoked: RevokedTokens = field(default_factory=RevokedTokens)
    """Tokens signed out (`sign_out`); the server's is kept in its data folder."""

    @property
    def mode(self) -> AuthMode:
        if self.proxy is not None and self.proxy.trusted:
            return "proxy"
        if self.users is not None:
            return "password"
        return "none"

    def _proxy_user(self, request: Request) -> str | None:
        if self.proxy is None:
            return None
        try:
            return self.proxy.user_from(request.headers)
        except AuthError as exc:
            raise unauthorized(str(exc)) from None

    async def login(self, request: Request) -> LoginAnswer:
        """The body of a successful `POST /api/login`; ApiError 401 otherwise."""
        user = self._proxy_user(request)
        fingerprint: str | None = None
        notice: str | None = None
        if user is None and self.users is not None:
            sent = await read_object(request, MAX_LOGIN_BYTES, optional=True)
            if not sent:  # no body, or `{}`: a client that did not know this server's mode
                raise ApiError(400, "invalid_request", NEEDS_PASSWORD)
            if empty := [_FIELD_WORDS[k] for k in _FIELD_WORDS if sent.get(k) == ""]:
                # (a sign-in form sent as it was left: say so, not the validator's words)
                said = " and the ".join(empty)
                said += " is empty: type it" if len(empty) == 1 else " are empty: type them"
                raise ApiError(400, "invalid_request", f"the {said} to sign in")
            body = validate(LoginBody, sent)
            address = request.client.host if request.client else "unknown"
            by_user, by_address = self.throttles.by_user, self.throttles.by_address
            wait = max(by_user.retry_after(body.username), by_address.retry_after(address))
            if wait > 0:
                raise too_many_attempts(wait)
            # Counted as failed before the password is checked (no await in between), so
            # guesses sent all at once meet the throttle as guesses in a row do; a success
            # clears the name's count and takes its own failures off the address's (its
            # wait running again from the last failure still counted).
            pair = f"{address}\0{body.username}"  # this name's failures from this address
            by_user.failed(body.username)
            by_address.failed(address, pair)
            try:
                fingerprint = await self.users.check_async(body.username, body.password)
            except AuthError as exc:  # an unreadable users file: the server's fault
                raise login_unavailable(exc) from None
            if fingerprint is None:
                raise unauthorized("wrong user name or password")
            # The address's count forgets only the failures made at this name from this
            # address: a success on one account must not wipe the guesses made at other
            # names from the same address (password spraying with one's own account).
            by_user.succeeded(body.username)
            by_address.forgive(address, by_address.succeeded(pair))
            user = body.username
        elif user is None and self.mode == "proxy":
            header = self.proxy.header if self.proxy else "user"
            raise unauthorized(f"the request has no {header} header from the proxy")
        else:  # not needed, but a client's broken request must not read as fine
            sent = await read_object(request, MAX_LOGIN_BYTES, optional=True)
            fields = validate(LoginFields, sent)
            notice = _unchecked(fields, user)
            user = user if user is not None else LOCAL_USER
        token = self.tokens.issue(user, password_fingerprint=fingerprint)
        claims = self.tokens.verify(token)
        return LoginAnswer(
            token=token, expires_at=claims.expires_at.isoformat(), user=user, notice=notice
        )

    async def sign_out(self, request: Request) -> bool:
        """Refuse the token `request` carries (its Authorization header, else the login
        cookie) from now on. False when it carries none that is good (nothing to sign
        out). A sign-out that cannot be written to the data folder still holds until the
        server stops (logged)."""
        found = _credentials(request, cookie=True)
        if found is None or found[0].lower() != "bearer" or not found[1].strip():
            return False
        try:
            claims = self.tokens.verify(found[1].strip())
        except AuthError:
            return False
        if not claims.token_id or claims.token_id in self.revoked:
            return False
        try:
            expires = claims.expires_at.timestamp()
            await asyncio.to_thread(self.revoked.revoke, claims.token_id, expires)
        except OSError as exc:
            logger.error("could not keep a sign-out in the data folder: %s", exc)
        logger.info("user %r signed out a token", claims.subject)
        return True

    async def owner(self, request: Request, *, cookie: bool = False) -> str:
        """The user a request's bearer token names. FastAPI dependency for every endpoint
        but login. With `cookie` (the event streams only), the login cookie stands in for
        a missing Authorization header: a browser's EventSource cannot send one."""
        found = _credentials(request, cookie=cookie)
        if found is None:
            raise unauthorized("this endpoint needs 'Authorization: Bearer <token>'")
        scheme, token = found
        if scheme.lower() != "bearer" or not token.strip():
            raise unauthorized("the Authorization header must read 'Bearer <token>'")
        try:
            claims = self.tokens.verify(token.strip())
        except AuthError as exc:
            raise unauthorized(f"the token was refused: {exc}", invalid_token=True) from None
        if claims.token_id in self.revoked:
            raise unauthorized(
                "the token was refused: it was signed out; log in again", invalid_token=True
            )
        subject = claims.subject
        if self.mode == "proxy":
            # Every request must come through the proxy, naming the token's user.
            if self._proxy_user(request) != subject:
                raise unauthorized("the token does not match the proxy's user", invalid_token=True)
        elif self.users is not None:
            # The users file is read afresh, so removing a user or setting a new password
            # revokes their tokens.
            try:
                current = await asyncio.to_thread(self.users.fingerprints)
            except AuthError as exc:
                raise login_unavailable(exc) from None
            if subject not in current:
                await self._apply_users_change()
                raise unauthorized("the token's user no longer exists", invalid_token=True)
            if claims.password_fingerprint != current[subject]:
                await self._apply_users_change()
                raise unauthorized(
                    "the password was changed after this token was issued; log in again",
                    invalid_token=True,
                )
        return subject

    async def _apply_users_change(self) -> None:
        """Before refusing a user the file no longer has as the token says: have the server
        act on that change first (stop a removed user's turns, end page logins), so that
        what the refused caller was reading shows it. The look runs to its end even if
        the request is given up meanwhile (a client hanging up must not leave a removal
        half done). A look that fails is logged; the request is refused all the same."""
        if self.users_changed is not None:
            await asyncio.shield(self._apply_logged(self.users_changed))

    @staticmethod
    async def _apply_logged(apply: Callable[[], Awaitable[object]]) -> None:
        try:
            await apply()
        except Exception:  # (also when nobody awaits it any more: the request was given up)
            logger.exception("applying a change of the users file failed")
