"""Where sessions and their messages are kept: the protocol, SQLite (the default) and memory."""

from gui_agent.store.base import MemoryStore, SessionStore, apply_retention
from gui_agent.store.migrations import SCHEMA_VERSION
from gui_agent.store.sqlite import DB_FILE_NAME, SQLiteStore, default_data_dir

__all__ = [
    "DB_FILE_NAME",
    "SCHEMA_VERSION",
    "MemoryStore",
    "SQLiteStore",
    "SessionStore",
    "apply_retention",
    "default_data_dir",
]
