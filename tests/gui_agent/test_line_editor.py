"""The keys a terminal sends and what they do to the line and its history (no terminal)."""

from __future__ import annotations

from gui_agent.cli import ReadEnd
from gui_agent.line_editor import Key, KeyDecoder, LineEditor


def typed(editor: LineEditor, *keys: str | Key) -> list[str | ReadEnd]:
    """What the keys gave (lines, ends of input), in order."""
    given = []
    for key in keys:
        done = editor.press(key)
        if done is not None:
            given.append(done)
    return given


def test_escape_sequences_cut_between_reads_are_still_one_key() -> None:
    decoder = KeyDecoder()
    assert decoder.feed("ab\x1b") == ["ab"]
    assert decoder.feed("[") == []
    assert decoder.feed("Dc") == [Key.LEFT, "c"]
    assert decoder.feed("\x1bO") == []
    assert decoder.feed("H\x1b[3~\x1b[1;5C\x1b[4~") == [
        Key.HOME,
        Key.DELETE,
        Key.WORD_RIGHT,
        Key.END,
    ]


def test_enter_is_a_carriage_return_or_a_line_feed_and_a_pair_is_one() -> None:
    decoder = KeyDecoder()
    assert decoder.feed("a\rb\nc\r\nd\n\n") == [
        "a",
        Key.ENTER,
        "b",
        Key.ENTER,
        "c",
        Key.ENTER,
        "d",
        Key.ENTER,
        Key.ENTER,
    ]


def test_a_lone_escape_and_unknown_controls_type_nothing() -> None:
    decoder = KeyDecoder()
    assert decoder.feed("\x1b") == []
    assert decoder.feed("x\x07\x1b[99Zy\tz") == ["x", "y\tz"]  # the key after Esc counts
    assert decoder.feed("\x1bb\x1bf\x17") == [Key.WORD_LEFT, Key.WORD_RIGHT, Key.KILL_WORD]


def test_keys_edit_where_the_cursor_is() -> None:
    editor = LineEditor()
    typed(editor, "helo", Key.LEFT, "l", Key.END, " wrld", Key.WORD_LEFT, Key.RIGHT, "o")
    assert (editor.text, editor.cursor) == ("hello world", 8)
    typed(editor, Key.HOME, Key.DELETE, "H", Key.END, Key.BACKSPACE, "D")
    assert editor.text == "Hello worlD"
    typed(editor, Key.KILL_WORD)
    assert (editor.text, editor.cursor) == ("Hello ", 6)
    typed(editor, Key.LEFT, Key.LEFT, Key.KILL_TO_END)
    assert editor.text == "Hell"
    typed(editor, Key.LEFT, Key.KILL_TO_START)
    assert (editor.text, editor.cursor) == ("l", 0)
    assert typed(editor, Key.ENTER) == ["l"]
    assert (editor.text, editor.cursor) == ("", 0)


def test_ctrl_d_ends_input_only_on_an_empty_line() -> None:
    editor = LineEditor()
    assert typed(editor, "ab", Key.HOME, Key.CTRL_D) == []
    assert editor.text == "b"
    assert typed(editor, Key.BACKSPACE, Key.CTRL_D) == []  # at the line's start: deletes
    assert editor.text == ""
    assert typed(editor, Key.CTRL_D) == [ReadEnd.EOF]


def test_up_and_down_walk_what_was_remembered_and_keep_the_line_being_typed() -> None:
    editor = LineEditor()
    typed(editor, "first", Key.ENTER, "answer", Key.ENTER, "second", Key.ENTER)
    assert editor.history == ()  # entering a line does not remember it: the chat decides
    for line in ("first", "second", "second", "  "):
        editor.remember(line)  # a repeat of the newest and a blank line are not kept
    assert editor.history == ("first", "second")
    typed(editor, "draft", Key.UP)
    assert editor.text == "second"
    typed(editor, Key.UP, Key.UP)  # past the oldest: stays there
    assert (editor.text, editor.cursor) == ("first", 5)
    typed(editor, Key.DOWN, Key.DOWN, Key.DOWN)
    assert editor.text == "draft"
    typed(editor, Key.UP)
    editor.remember("third")  # remembered while a line is brought back: that line stays
    typed(editor, Key.DOWN)
    assert editor.text == "third"


def test_the_oldest_lines_go_first_and_ctrl_c_starts_again_from_the_newest() -> None:
    editor = LineEditor(history_size=2)
    for line in ("one", "two", "three"):
        editor.remember(line)
    assert editor.history == ("two", "three")
    typed(editor, Key.UP, Key.UP)
    editor.clear()
    assert editor.text == ""
    typed(editor, Key.UP)
    assert editor.text == "three"
