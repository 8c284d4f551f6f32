"""Images attached to the next message on the page: checked, encoded, counted.

The browser uploads files; only real images are kept, recognised by their first bytes (a
file's name or the type the browser claims decide nothing). They wait in the tab's state as
`ImagePart` dicts until the next send takes them.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

from schema import ImagePart

__all__ = [
    "MAX_IMAGES",
    "MAX_IMAGE_BYTES",
    "add_images",
    "attachments_note",
    "image_parts",
    "sniff_image_type",
]

MAX_IMAGE_BYTES = 5 * 2**20
"""The largest image accepted (what vision APIs commonly take per image)."""
MAX_IMAGES = 8
"""Images one message can carry."""

_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def sniff_image_type(data: bytes) -> str | None:
    """The media type of PNG, JPEG, GIF or WebP data; None for anything else."""
    for magic, media_type in _SIGNATURES:
        if data.startswith(magic):
            return media_type
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def add_images(
    current: Sequence[dict[str, Any]], files: Sequence[bytes]
) -> tuple[list[dict[str, Any]], list[str]]:
    """`current` plus the usable images of `files`, and one problem per file refused."""
    kept = list(current)
    problems: list[str] = []
    for number, data in enumerate(files, start=1):
        media_type = sniff_image_type(data)
        if media_type is None:
            problems.append(f"file {number} is not a PNG, JPEG, GIF or WebP image")
        elif len(data) > MAX_IMAGE_BYTES:
            problems.append(
                f"file {number} has {len(data) / 2**20:.1f} MiB; the limit is "
                f"{MAX_IMAGE_BYTES // 2**20} MiB"
            )
        elif len(kept) >= MAX_IMAGES:
            problems.append(f"file {number}: a message carries at most {MAX_IMAGES} images")
        else:
            kept.append(
                ImagePart(media_type=media_type, data=base64.b64encode(data).decode()).model_dump()
            )
    return kept, problems


def image_parts(items: Sequence[Any]) -> tuple[ImagePart, ...]:
    """The tab's attachments as ImageParts (anything malformed is dropped)."""
    parts = []
    for item in items:
        if isinstance(item, dict):
            try:
                parts.append(ImagePart.model_validate(item))
            except ValueError:
                continue
    return tuple(parts)


def attachments_note(items: Sequence[Any]) -> str:
    count = len(items)
    if not count:
        return ""
    return f"📎 {count} image{'s' if count > 1 else ''} will go with your next message."
