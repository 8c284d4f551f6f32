"""Images attached to the next message on the page: checked, encoded, counted.

The browser uploads files; only real images are kept, recognised by their first bytes (a
file's name or the type the browser claims decide nothing). They wait on the server, in the
tab's tray (`Trays`, keyed by Gradio's session hash), until the next send takes them all at
once. Not in a `gr.State`: a streaming event that outlives the send can write an old state
value back, and a picture taken back could travel with the next message anyway.
"""

from __future__ import annotations

import base64
from collections import OrderedDict
from collections.abc import Sequence

from gui_agent.wording import counted
from schema import ImagePart
from schema.requests import MAX_IMAGE_BYTES, MAX_IMAGES, sniff_image_type

__all__ = [
    "MAX_IMAGES",
    "MAX_IMAGE_BYTES",
    "Trays",
    "add_images",
    "attachments_note",
    "sniff_image_type",
]


def add_images(
    current: Sequence[ImagePart], files: Sequence[bytes]
) -> tuple[list[ImagePart], list[str]]:
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
            kept.append(ImagePart(media_type=media_type, data=base64.b64encode(data).decode()))
    return kept, problems


def attachments_note(count: int) -> str:
    if not count:
        return ""
    return f"📎 {counted(count, 'image')} will go with your next message."


class Trays:
    """The images each tab has attached for its next message.

    Bounded: at most `max_tabs` trays and `max_bytes` of image data in all; past either,
    the trays touched longest ago are emptied (a tab closed with pictures attached leaves
    its tray behind until then). For one event loop: not thread-safe.
    """

    def __init__(self, *, max_tabs: int = 256, max_bytes: int = 256 * 2**20) -> None:
        self.max_tabs = max_tabs
        self.max_bytes = max_bytes
        self._trays: OrderedDict[str, list[ImagePart]] = OrderedDict()

    def add(self, tab: str, files: Sequence[bytes]) -> tuple[int, list[str]]:
        """Attach `files` to `tab`'s tray; (images now in it, one problem per file refused)."""
        kept, problems = add_images(self._trays.get(tab, []), files)
        if kept:
            self._trays[tab] = kept
            self._trays.move_to_end(tab)
            self._evict(keep=tab)
        return len(kept), problems

    def put_back(self, tab: str, images: Sequence[ImagePart]) -> int:
        """Return images a refused send took to the front of `tab`'s tray (within the
        count cap); how many images the tray holds then."""
        kept = [*images, *self._trays.get(tab, ())][:MAX_IMAGES]
        if kept:
            self._trays[tab] = kept
            self._trays.move_to_end(tab)
            self._evict(keep=tab)
        return len(kept)

    def restore(self, tab: str, images: Sequence[ImagePart]) -> int:
        """Put a sent message's images (to edit it) at the front of `tab`'s tray, once: an
        image already there is not added twice (Edit pressed again). How many it holds."""
        return self.put_back(
            tab, [image for image in images if image not in self._trays.get(tab, ())]
        )

    def take(self, tab: str) -> tuple[ImagePart, ...]:
        """Everything in `tab`'s tray, which is then empty."""
        return tuple(self._trays.pop(tab, ()))

    def count(self, tab: str) -> int:
        return len(self._trays.get(tab, ()))

    def _evict(self, *, keep: str) -> None:
        def size() -> int:
            return sum(len(i.data or "") for tray in self._trays.values() for i in tray)

        while len(self._trays) > 1 and (
            len(self._trays) > self.max_tabs or size() > self.max_bytes
        ):
            oldest = next(iter(self._trays))
            if oldest == keep:
                break
            del self._trays[oldest]
