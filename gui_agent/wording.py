"""Counts said in words: "1 message", "2 messages"."""

from __future__ import annotations

__all__ = ["counted"]


def counted(number: int, noun: str) -> str:
    """`number` (with thousands separators) and `noun`, plural unless it is one of it."""
    return f"{number:,} {noun}{'' if number == 1 else 's'}"
