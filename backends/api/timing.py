"""Timings the API server and its clients agree on.

Kept apart from `app` (which re-exports them) so that the clients can size their timeouts
from the server's own numbers without importing the server.
"""

from __future__ import annotations

__all__ = ["DEFAULT_KEEPALIVE_S"]

DEFAULT_KEEPALIVE_S = 15.0
"""How often a quiet event stream sends a comment line so proxies keep it open; the clients
take four of these in silence for a dead connection (`client_http.STREAM_READ_TIMEOUT_S`)."""
