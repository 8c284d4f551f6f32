"""What a reader that opens a chat mid-reply is told of each reply being written."""

from __future__ import annotations

from schema.events import ModelRetrying
from schema.messages import Message


class StreamingReply(Message):
    """A reply being written, as it stands: its text so far (status INTERRUPTED, as it would
    be kept if the turn stopped now) and, while its model is asked again before a word of it
    streamed, the latest notice of that (`retrying`).

    The session detail and the event stream's `hello` carry these (`streaming`); a reader
    follows on from their `last_seq`, so events up to it are in the snapshot, not replayed.
    Without `retrying` there, a reader that came after the notice (a reload, another tab, a
    front end that reads the detail right after sending) showed a blank reply until the
    next notice: a minute later on a rate limit, or never when the first retry works."""

    retrying: ModelRetrying | None = None
    """The latest `model_retrying` of this reply, its `wait_s` the wait left when the
    snapshot was taken (not the whole wait, which has partly gone by); null when there is
    none, and once the reply's text or reasoning has begun."""
