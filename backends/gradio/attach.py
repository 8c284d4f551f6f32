"""Images attached to the next message on the page: checked, encoded, counted, shown.

The browser uploads files; only real images are kept, recognised by their first bytes (a
file's name or the type the browser claims decide nothing). They wait on the server, in the
tab's tray (`Trays`, keyed by Gradio's session hash), until the next send takes them all at
once. Not in a `gr.State`: a streaming event that outlives the send can write an old state
value back, and a picture taken back could travel with the next message anyway. Each keeps
the name of the file it came from and a key of its own, so the page shows it before it is
sent (tray_preview.py) and the person can take back one picture without the others.
"""

from __future__ import annotations

import base64
import itertools
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gui_agent.wording import counted
from schema import ImagePart
from schema.requests import MAX_IMAGE_BYTES, MAX_IMAGES, sniff_image_type

__all__ = [
    "MAX_IMAGES",
    "MAX_IMAGE_BYTES",
    "Attached",
    "Trays",
    "Upload",
    "accepted_images",
    "add_images",
    "attachments_note",
    "read_upload",
    "sniff_image_type",
]


@dataclass(frozen=True, slots=True)
class Upload:
    """A file the browser uploaded: its name, and its bytes (none when it is too large to
    be read: `size` says how large)."""

    name: str
    data: bytes = b""
    size: int | None = None
    """Its size in bytes (None: `len(data)`)."""


def read_upload(path: str, name: str | None = None) -> Upload:
    """The file Gradio saved an upload to, named `name` (by default as the saved file is),
    read only when it is small enough to be attached. Blocking: run it in a thread."""
    file = Path(path)
    named = file.name if name is None else name
    size = file.stat().st_size
    if size > MAX_IMAGE_BYTES:
        return Upload(named, size=size)
    return Upload(named, file.read_bytes())


def add_images(
    current: Sequence[ImagePart], files: Sequence[bytes | Upload]
) -> tuple[list[ImagePart], list[str]]:
    """`current` plus the usable images of `files`, and one problem per file refused."""
    kept, problems = accepted_images(len(current), files)
    return [*current, *(image for image, _name in kept)], problems


def accepted_images(
    count: int, files: Sequence[bytes | Upload]
) -> tuple[list[tuple[ImagePart, str]], list[str]]:
    """The usable images of `files` for a tray that holds `count`, each with the name of its
    file, and one problem per file refused."""
    kept: list[tuple[ImagePart, str]] = []
    problems: list[str] = []
    for number, file in enumerate(files, start=1):
        upload = file if isinstance(file, Upload) else Upload("", file)
        checked = _image_or_problem(upload, number, count + len(kept))
        if isinstance(checked, str):
            problems.append(checked)
        else:
            kept.append((checked, upload.name))
    return kept, problems


def _image_or_problem(upload: Upload, number: int, count: int) -> ImagePart | str:
    """`upload` (the `number`th file) as an image for a tray of `count` images, or why it is
    not attached."""
    named = upload.name or f"file {number}"
    size = len(upload.data) if upload.size is None else upload.size
    if size > MAX_IMAGE_BYTES:
        return f"{named} has {size / 2**20:.1f} MiB; the limit is {MAX_IMAGE_BYTES // 2**20} MiB"
    media_type = sniff_image_type(upload.data)
    if media_type is None:
        return f"{named} is not a PNG, JPEG, GIF or WebP image"
    if count >= MAX_IMAGES:
        return f"{named}: a message carries at most {MAX_IMAGES} images"
    return ImagePart(media_type=media_type, data=base64.b64encode(upload.data).decode())


def attachments_note(count: int) -> str:
    if not count:
        return ""
    return f"📎 {counted(count, 'image')} will go with your next message."


@dataclass(frozen=True, slots=True)
class Attached:
    """An image in a tab's tray: the image, the name of the file it came from ("" when not
    known: an image put back from a message), and its key in the tray (`Trays.remove`)."""

    image: ImagePart
    name: str
    key: str


class Trays:
    """The images each tab has attached for its next message.

    Bounded: at most `max_tabs` trays and `max_bytes` of image data in all; past either,
    the trays touched longest ago are emptied (a tab closed with pictures attached leaves
    its tray behind until then). For one event loop: not thread-safe.
    """

    def __init__(self, *, max_tabs: int = 256, max_bytes: int = 256 * 2**20) -> None:
        self.max_tabs = max_tabs
        self.max_bytes = max_bytes
        self._trays: OrderedDict[str, list[Attached]] = OrderedDict()
        self._keys = itertools.count(1)

    def add(self, tab: str, files: Sequence[bytes | Upload]) -> tuple[int, list[str]]:
        """Attach `files` to `tab`'s tray; (images now in it, one problem per file refused)."""
        tray = self._trays.get(tab, [])
        kept, problems = accepted_images(len(tray), files)
        added = [self._item(image, name) for image, name in kept]
        return self._keep(tab, [*tray, *added]), problems

    def put_back(self, tab: str, images: Sequence[ImagePart]) -> int:
        """Return images a refused send took to the front of `tab`'s tray (within the
        count cap); how many images the tray holds then."""
        back = [self._item(image, "") for image in images]
        return self._keep(tab, [*back, *self._trays.get(tab, ())][:MAX_IMAGES])

    def restore(self, tab: str, images: Sequence[ImagePart]) -> int:
        """Put a sent message's images (to edit it) at the front of `tab`'s tray, once: an
        image already there is not added twice (Edit pressed again). How many it holds."""
        there = {attached.image for attached in self._trays.get(tab, ())}
        return self.put_back(tab, [image for image in images if image not in there])

    def take(self, tab: str) -> tuple[ImagePart, ...]:
        """Everything in `tab`'s tray, which is then empty."""
        return tuple(attached.image for attached in self._trays.pop(tab, ()))

    def remove(self, tab: str, key: str) -> int:
        """Take the image `key` out of `tab`'s tray (gone already: nothing); how many are
        left."""
        left = [attached for attached in self._trays.get(tab, ()) if attached.key != key]
        if not left:
            self._trays.pop(tab, None)
            return 0
        self._trays[tab] = left
        return len(left)

    def shown(self, tab: str) -> tuple[Attached, ...]:
        """What `tab`'s tray holds, in the order the images go with the message."""
        return tuple(self._trays.get(tab, ()))

    def count(self, tab: str) -> int:
        return len(self._trays.get(tab, ()))

    def _item(self, image: ImagePart, name: str) -> Attached:
        return Attached(image, name, f"a{next(self._keys)}")

    def _keep(self, tab: str, tray: list[Attached]) -> int:
        if tray:
            self._trays[tab] = tray
            self._trays.move_to_end(tab)
            self._evict(keep=tab)
        return len(tray)

    def _evict(self, *, keep: str) -> None:
        def size() -> int:
            return sum(len(a.image.data or "") for tray in self._trays.values() for a in tray)

        while len(self._trays) > 1 and (
            len(self._trays) > self.max_tabs or size() > self.max_bytes
        ):
            oldest = next(iter(self._trays))
            if oldest == keep:
                break
            del self._trays[oldest]
