"""What the page's handlers remember per tab stays bounded: the newest entries are kept and
the oldest dropped (a dict keeps the order its keys were inserted in)."""

from __future__ import annotations

from typing import TypeVar

__all__ = ["keep_latest"]

K = TypeVar("K")
V = TypeVar("V")


def keep_latest(kept: dict[K, V], key: K, value: V, limit: int) -> None:
    """`kept[key] = value`, as its newest entry; then the oldest entries past `limit` go."""
    kept.pop(key, None)
    kept[key] = value
    while len(kept) > limit:
        del kept[next(iter(kept))]
