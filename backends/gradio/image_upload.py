"""The "Attach images" button: every file the browser uploads reaches the handler, with the
name the person's file had, whatever that name says.

Gradio's upload button either hands its handler the files' bytes (no names) or their paths,
and then first refuses the whole upload if one file's name does not look like an image
("Invalid file type", said for all the files picked together). Here the bytes decide what
is an image (attach.py), file by file, and the preview names each picture by its file
(tray_preview.py): so the handler gets each file's path and name, unchecked. The browser's
file chooser still offers images first (`file_types`).
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import gradio as gr
from gradio.data_classes import FileData, ListFiles

from backends.gradio.gradio_import import no_stub_written

__all__ = ["ImageUploadButton", "UploadedFile"]


class UploadedFile(NamedTuple):
    """A file the browser uploaded: where the server keeps it, and its name as the person's
    file had it."""

    path: str
    name: str


with no_stub_written():  # (no image_upload.pyi: gradio_import.py)

    class ImageUploadButton(gr.UploadButton):
        """`gr.UploadButton`, drawn by the same browser component, whose handlers get every
        uploaded file (`UploadedFile`), none refused for its name."""

        is_template = True
        """Gradio's mark of a component drawn as its base class (here the upload button)."""

        def preprocess(  # type: ignore[override]
            self, payload: ListFiles | FileData | None
        ) -> list[UploadedFile] | None:
            """The files as uploaded, in the order they were picked (None: none)."""
            if payload is None:
                return None
            files = list(payload) if isinstance(payload, ListFiles) else [payload]
            return [UploadedFile(f.path, f.orig_name or Path(f.path).name) for f in files]
