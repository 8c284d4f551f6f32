"""The Gradio chat page: `create_app(manager, ...)` returns the Blocks to mount."""

from backends.gradio.app import create_app

__all__ = ["create_app"]
