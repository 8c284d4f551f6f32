"""Front ends: the Gradio chat page, the HTTP + SSE API and other clients of the core."""

__all__: list[str] = []
