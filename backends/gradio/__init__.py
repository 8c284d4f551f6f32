"""The Gradio chat page: `create_app(manager, ...)` returns the Blocks to mount."""

from backends.gradio import gradio_import

gradio_import.import_gradio()  # before any module here imports Gradio: see gradio_import

from backends.gradio.app import create_app  # noqa: E402

__all__ = ["create_app"]
