"""API errors: one JSON shape, `{"error": {"code": ..., "message": ...}}`, for every failure.

Core exceptions map to HTTP statuses here and nowhere else: another user's session and an
unknown id are both 404 (never 403, so ids cannot be probed), a request that breaks the
contract is 400, one that clashes with what the session is doing now (a turn running, an
approval already answered; see `conflicts`) is 409, a refused token is 401 with
`WWW-Authenticate: Bearer`. Anything else raised while serving /api (a bug) is 500
`internal_error`, in the same shape, with the details in the server log only.

An error repeats at most `MAX_ECHO_CHARS` of anything taken from the request's path (a tool
name, an approval id, the path itself): longer, it is shortened with an ellipsis, in the
handlers here, whichever route or core error the message came from. A caller who sends a
20,000-character path segment gets an error of ordinary size, not their input back.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from gui_agent.exceptions import (
    AuthError,
    Conflict,
    IllegalTransition,
    InvalidRequest,
    StoreError,
    UserError,
)
from gui_agent.log_text import loggable
from gui_agent.manager import SessionNotFound

logger = logging.getLogger(__name__)

_STATUS_CODES = {
    400: "invalid_request",
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    429: "too_many_attempts",
}
MAX_ECHO_CHARS = 200
"""The most of one value from the request an error message repeats (see `shortened`)."""


class ApiError(Exception):
    """An HTTP error with a machine-readable `code` and a message for people."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = dict(headers or {})


def shortened(text: str, limit: int = MAX_ECHO_CHARS) -> str:
    """`text` as an error repeats it: cut to `limit` characters, the last an ellipsis."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _capped(message: str, request: Request) -> str:
    """`message` with each long path parameter it repeats shortened (`shortened`), however
    it was quoted: as is or as its repr (the `{name!r}` of most messages)."""
    for value in request.path_params.values():
        if isinstance(value, str) and len(value) > MAX_ECHO_CHARS:
            short = shortened(value)
            message = message.replace(repr(value), repr(short)).replace(value, short)
    return message


def unauthorized(message: str, *, invalid_token: bool = False) -> ApiError:
    challenge = 'Bearer error="invalid_token"' if invalid_token else "Bearer"
    return ApiError(401, "unauthorized", message, headers={"WWW-Authenticate": challenge})


def too_many_attempts(wait_s: float) -> ApiError:
    seconds = max(1, math.ceil(wait_s))
    return ApiError(
        429,
        "too_many_attempts",
        f"too many failed logins; try again in {seconds} s",
        headers={"Retry-After": str(seconds)},
    )


def not_found(message: str = "no such session") -> ApiError:
    return ApiError(404, "not_found", message)


def conflict(message: str) -> ApiError:
    """409: the request is well formed but clashes with what the session is doing now."""
    return ApiError(409, "conflict", message)


def error_response(
    status: int, code: str, message: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(
        {"error": {"code": code, "message": message}}, status_code=status, headers=headers
    )


def describe_validation(exc: ValidationError | RequestValidationError) -> str:
    """The first problem of a pydantic validation error, as one line naming the field.
    Fields the request does not have come first, all named: a misspelt name is usually what
    went wrong (`user` for `username`), and the field it left missing is only its echo."""
    errors = exc.errors(include_url=False) if isinstance(exc, ValidationError) else exc.errors()
    if not errors:
        return "the request is not valid"
    unknown = [e for e in errors if e.get("type") == "extra_forbidden"]
    if unknown:
        names = [_where(e) for e in unknown]
        said = f"unknown field(s) {', '.join(repr(n) for n in names[:5])}"
        rest = [e for e in errors if e.get("type") != "extra_forbidden"]
        if not rest:
            return said
        more = f" (and {len(rest) - 1} more problem(s))" if len(rest) > 1 else ""
        return f"{said}; {_where(rest[0])}: {rest[0].get('msg', 'invalid value')}{more}"
    first = errors[0]
    location = _where(first)
    message = str(first.get("msg", "invalid value"))
    more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
    return f"{location}: {message}{more}" if location else f"{message}{more}"


def _where(error: Mapping[str, Any]) -> str:
    """An error's field, dotted, without the `body` FastAPI puts first."""
    return ".".join(str(part) for part in error.get("loc", ()) if part != "body")


def _under_api(request: Request) -> bool:
    path = request.url.path.removeprefix(request.scope.get("root_path", "") or "")
    return path == "/api" or path.startswith("/api/")


def install_error_handlers(app: FastAPI) -> None:
    """Make every error of `app` answer in the one JSON shape. (A pydantic ValidationError
    from request data is turned into ApiError where the body is validated; any other is a
    bug and stays a 500.)"""

    async def api_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ApiError)
        return error_response(exc.status, exc.code, _capped(exc.message, request), exc.headers)

    async def http_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        code = _STATUS_CODES.get(exc.status_code, "error")
        message = exc.detail if isinstance(exc.detail, str) else code.replace("_", " ")
        return error_response(exc.status_code, code, _capped(message, request), exc.headers)

    async def validation_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return error_response(400, "invalid_request", _capped(describe_validation(exc), request))

    async def core_error(request: Request, exc: Exception) -> JSONResponse:
        message = _capped(str(exc), request)
        if isinstance(exc, SessionNotFound):
            return error_response(404, "not_found", "no such session")
        if isinstance(exc, AuthError):
            return error_response(401, "unauthorized", message, {"WWW-Authenticate": "Bearer"})
        if isinstance(exc, IllegalTransition | Conflict):
            return error_response(409, "conflict", message)
        if isinstance(exc, InvalidRequest | UserError):
            return error_response(400, "invalid_request", message)
        logger.error("store error while serving %s: %s", loggable(request.url.path), loggable(exc))
        return error_response(
            503, "store_unavailable", "the session store failed; the server log says why"
        )

    async def internal_error(request: Request, exc: Exception) -> Response:
        """A bug: 500 in the one shape under /api (a client reads every answer alike),
        naming nothing of the server's insides; the traceback goes to the log (Starlette
        raises the exception on after answering, and the server closes the connection)."""
        # The server closes the connection after a bug: say so, or the client's next
        # request on it (keep-alive) meets a reset connection instead of an answer.
        close = {"Connection": "close"}
        if not _under_api(request):
            return PlainTextResponse("Internal Server Error", status_code=500, headers=close)
        return error_response(
            500,
            "internal_error",
            "the server failed on this request; the server log says why",
            close,
        )

    app.add_exception_handler(Exception, internal_error)
    app.add_exception_handler(ApiError, api_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    for error in (UserError, AuthError, StoreError):
        app.add_exception_handler(error, core_error)
