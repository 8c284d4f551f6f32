"""Request bodies: read with a size cap (before any parsing), then validated with pydantic,
strictly typed (see `strict`), an id the path names refused when the body names another."""

from __future__ import annotations

import base64
import binascii
import json
import logging
import math
from collections.abc import Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit

from fastapi import Request
from pydantic import BaseModel, ValidationError
from starlette.requests import ClientDisconnect

from backends.api.errors import ApiError, describe_validation, shortened
from backends.api.strict import strictly
from gui_agent.log_text import loggable
from schema import ImagePart
from schema.requests import (
    IMAGE_MEDIA_TYPES,
    MAX_IMAGE_BYTES,
    MAX_IMAGES,
    MAX_MESSAGE_CHARS,
    image_bytes_problem,
)

logger = logging.getLogger(__name__)

_M = TypeVar("_M", bound=BaseModel)

_BASE64_IMAGE_CHARS = 4 * math.ceil(MAX_IMAGE_BYTES / 3)
_JSON_CHAR_BYTES = 12
"""The most a character of text can take in JSON: a surrogate pair's two `\\uXXXX` escapes."""
MAX_MESSAGE_BODY_BYTES = (
    MAX_IMAGES * (_BASE64_IMAGE_CHARS + 1024) + _JSON_CHAR_BYTES * MAX_MESSAGE_CHARS + 65_536
)
"""The largest body a message (or an edit) within every limit can need: `MAX_IMAGES` images
of `MAX_IMAGE_BYTES`, base64-encoded, and `MAX_MESSAGE_CHARS` of text however it is
escaped, with room for the rest (about 56 MiB). A smaller cap would refuse, as too large,
a message each of whose parts the API and the page take."""


def _too_large(size: int, limit: int) -> ApiError:
    return ApiError(
        413, "too_large", f"the request body is over {limit:,} bytes (got at least {size:,})"
    )


async def read_body(request: Request, limit: int) -> bytes:
    """The raw body, refused with 413 as soon as it is known to exceed `limit` bytes: from
    `Content-Length` before reading anything, else while streaming it in; then 415 if it is
    not empty and its Content-Type names anything but JSON. A client that hangs up before
    sending it all ends the request quietly (nobody is left to answer)."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.strip().isdigit():
            raise ApiError(400, "invalid_request", "the Content-Length header is not a number")
        if int(declared) > limit:
            raise _too_large(int(declared), limit)
    chunks: list[bytes] = []
    total = 0
    try:
        async for chunk in request.stream():
            total += len(chunk)
            if total > limit:
                raise _too_large(total, limit)
            chunks.append(chunk)
    except ClientDisconnect:
        logger.debug(
            "client hung up after %d bytes of the body of %s %s",
            total,
            loggable(request.method),
            loggable(request.url.path),
        )
        raise ApiError(
            400, "client_disconnected", "the connection closed before the whole body arrived"
        ) from None
    body = b"".join(chunks)
    if body.strip():
        _require_json(request.headers.get("content-type"))
    return body


def _require_json(content_type: str | None) -> None:
    """415 for a body declared as something other than JSON (`text/plain`, a form); a body
    sent without a Content-Type is read as JSON."""
    if content_type is None or not content_type.strip():
        return
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type == "application/json" or media_type.endswith("+json"):
        return
    raise ApiError(
        415,
        "unsupported_media_type",
        f"the request body must be JSON sent with 'Content-Type: application/json', not "
        f"{media_type!r}",
    )


def parse_object(raw: bytes) -> dict[str, Any]:
    """A JSON object from a body; 400 naming the problem otherwise."""
    if not raw.strip():
        raise ApiError(400, "invalid_json", "the request body is empty; send a JSON object")
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError
        raise ApiError(400, "invalid_json", f"the request body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ApiError(400, "invalid_json", "the request body must be a JSON object")
    return data


async def read_object(request: Request, limit: int, *, optional: bool = False) -> dict[str, Any]:
    """`read_body` then `parse_object`; with `optional`, an empty body is `{}`."""
    raw = await read_body(request, limit)
    if optional and not raw.strip():
        return {}
    return parse_object(raw)


NO_BODY_BYTES = 1024
"""The most an endpoint that takes no body reads of one before refusing it (413)."""


async def no_body(request: Request) -> None:
    """For an endpoint that takes no body: none, or an empty JSON object. Anything else is
    refused as every endpoint refuses a body it cannot read (413, 415, 400 `invalid_json`),
    and an object with fields is 400: a client that meant to send something learns that
    nothing of it was read."""
    data = await read_object(request, NO_BODY_BYTES, optional=True)
    if data:
        named = ", ".join(repr(name[:40]) for name in sorted(data)[:5])
        raise ApiError(400, "invalid_request", f"this endpoint takes no body (it was sent {named})")


def validate(model: type[_M], data: dict[str, Any], **from_path: str) -> _M:
    """`model` from `data`, strictly typed (see `strict`), with the ids the path names
    (`from_path`, e.g. the session id) filled in. ApiError 400 naming the field for a body
    that does not validate, and for one that names another id than its path: a client that
    built the URL from one id and the body from another has a bug, and acting on either id
    would hide it. The path's id in the body, or none (absent or null), is fine."""
    for name, value in from_path.items():
        sent = data.get(name)
        if sent is not None and sent != value:
            raise ApiError(
                400,
                "invalid_request",
                f"{name}: the body names {shortened(repr(sent))} but the path names "
                f"{value!r}; send the path's id in the body, or none",
            )
    try:
        return strictly(model, {**data, **from_path})
    except ValidationError as exc:
        raise ApiError(400, "invalid_request", describe_validation(exc)) from None


def check_images(images: Sequence[ImagePart]) -> tuple[ImagePart, ...]:
    """Images a person sends: at most `MAX_IMAGES`, each PNG, JPEG, GIF or WebP, as base64
    data of at most `MAX_IMAGE_BYTES` whose bytes are an image of the declared type (sniffed
    as the page's attach button does), or an http(s) URL; never a path or a `file:` URL the
    server might be tricked into reading. The same limits as the page's attach button.
    Returns them with their media type in its canonical lower case ("image/PNG" is taken as
    "image/png"): vision APIs refuse any other spelling, at every later turn too, since the
    history is sent again."""
    if len(images) > MAX_IMAGES:
        raise ApiError(
            400,
            "invalid_request",
            f"images: a message carries at most {MAX_IMAGES} images (got {len(images)})",
        )
    for index, image in enumerate(images):
        _check_image(image, f"images.{index}")
    return tuple(
        image
        if image.media_type == image.media_type.lower()
        else image.model_copy(update={"media_type": image.media_type.lower()})
        for image in images
    )


def _check_image(image: ImagePart, where: str) -> None:
    if image.media_type.lower() not in IMAGE_MEDIA_TYPES:
        kinds = ", ".join(sorted(IMAGE_MEDIA_TYPES))
        raise ApiError(
            400,
            "invalid_request",
            f"{where}: {image.media_type!r} is not accepted; send one of {kinds}",
        )
    if image.url is not None:
        parts = urlsplit(image.url)
        if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
            raise ApiError(400, "invalid_request", f"{where}: only http(s) image URLs are accepted")
    if image.data is not None:
        _check_image_data(image.media_type, image.data, where)


def _check_image_data(media_type: str, data: str, where: str) -> None:
    try:
        decoded = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise ApiError(400, "invalid_request", f"{where}: data must be base64-encoded") from None
    if len(decoded) > MAX_IMAGE_BYTES:
        raise ApiError(
            413,
            "too_large",
            f"{where}: the image has {len(decoded):,} bytes; the limit is {MAX_IMAGE_BYTES:,}",
        )
    if (problem := image_bytes_problem(media_type, decoded)) is not None:
        raise ApiError(400, "invalid_request", f"{where}: {problem}")
