"""The Gradio chat page: `create_app(manager, ...)` returns the Blocks to mount."""

from backends.gradio.gradio_import import import_gradio

import_gradio()  # before any module here imports it: see gradio_import

from backends.gradio.app import create_app  # noqa: E402

__all__ = ["create_app"]
