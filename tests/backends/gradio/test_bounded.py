"""`keep_latest`: the entry set is the newest, and the oldest past the limit go."""

from __future__ import annotations

from backends.gradio.bounded import keep_latest


def test_the_newest_entries_are_kept_and_a_key_set_again_counts_as_new() -> None:
    kept: dict[str, int] = {}
    for number, key in enumerate("abc"):
        keep_latest(kept, key, number, 3)
    keep_latest(kept, "a", 10, 3)  # set again: now the newest
    keep_latest(kept, "d", 3, 3)  # over the limit: the oldest ("b") goes
    assert list(kept.items()) == [("c", 2), ("a", 10), ("d", 3)]
