"""The line being typed as a terminal shows it, wrapped, below what the chat writes.

What `LineDisplay` writes is played on a small screen (`screen.Screen`) and the screen is
checked: the rows a person would see and where the cursor is.
"""

from __future__ import annotations

import pytest

from gui_agent import line_display
from gui_agent.line_display import CLEAR_BELOW, LineDisplay, cell_width, last_row, place
from gui_agent.line_editor import Key, LineEditor
from tests.gui_agent.screen import Screen

Spots = list[tuple[int, int]]

COLUMNS = 12


class Typing:
    """A display, an editor and a screen, fed as the chat feeds them."""

    def __init__(self, columns: int = COLUMNS) -> None:
        self.screen = Screen(columns, lines=10)
        self.display = LineDisplay(lambda: columns)
        self.editor = LineEditor()

    def keys(self, *keys: str | Key) -> None:
        for key in keys:
            done = self.editor.press(key)
            if isinstance(done, str):
                self.display.text = done
                self.screen.feed(self.display.finish("\n"))
            else:
                self.screen.feed(self.display.edit(self.editor.text, self.editor.cursor))

    def show(self, text: str) -> None:
        self.screen.feed(self.display.output(text))

    def ask(self, prompt: str) -> None:
        self.screen.feed(self.display.ask(prompt))


def test_columns_are_counted_as_a_terminal_counts_them() -> None:
    assert [cell_width(c) for c in "a漢\u0301\u200b"] == [1, 2, 0, 0]
    assert place("abcd", 4)[-1] == (0, 4)  # the cursor waits on the last column
    assert place("abcde", 4)[-1] == (1, 1)
    assert place("abc漢", 4)[-1] == (1, 2)  # a wide character that does not fit wraps
    assert place("a\tb\nc", 20)[-1] == (1, 1)
    assert last_row("abcdefg\nhijklm", 4) == "lm"
    assert last_row("abcd", 4) == "abcd"


def test_a_long_line_wraps_and_the_cursor_moves_across_rows() -> None:
    typing = Typing()
    typing.ask("\nyou> ")
    typing.keys("abcdefghijklmnopqrst")
    assert typing.screen.rows == ["", "you> abcdefg", "hijklmnopqrs", "t"]
    assert typing.screen.cursor == (3, 1)
    for _ in range(14):
        typing.keys(Key.LEFT)
    assert typing.screen.cursor == (1, 11)  # on the g, the row above
    typing.keys("XY")
    assert typing.screen.rows == ["", "you> abcdefX", "Yghijklmnopq", "rst"]
    assert typing.screen.cursor == (2, 1)
    typing.keys(Key.END, Key.BACKSPACE, Key.BACKSPACE, Key.BACKSPACE, Key.BACKSPACE)
    assert typing.screen.rows == ["", "you> abcdefX", "Yghijklmnop"]
    typing.keys(Key.ENTER)
    assert typing.screen.cursor == (3, 0)
    typing.show("[bot] hi")
    assert typing.screen.rows[-1] == "[bot] hi"


def test_output_while_a_line_is_typed_goes_above_it_and_the_line_is_whole_again() -> None:
    typing = Typing()
    typing.show("[bot] one ")
    typing.keys("/stp", Key.LEFT)
    assert typing.screen.rows == ["[bot] one /s", "tp"]
    typing.show("two three\nfour ")
    assert typing.screen.rows == ["[bot] one tw", "o three", "four /stp"]
    assert typing.screen.cursor == (2, 8)  # still before the p
    typing.keys("o", Key.ENTER)
    typing.show("(stopped)")
    assert typing.screen.rows == ["[bot] one tw", "o three", "four /stop", "(stopped)"]


def test_a_prompt_alone_stays_where_it_is_when_output_follows() -> None:
    typing = Typing()
    typing.ask("\nyou> ")
    typing.show("\n  (SIGTERM)\n")
    assert typing.screen.rows == ["", "you>", "  (SIGTERM)"]


def test_a_line_typed_ahead_moves_behind_the_next_prompt() -> None:
    typing = Typing()
    typing.show("[bot] done")
    typing.keys("next")
    typing.ask("\nyou> ")
    assert typing.screen.rows == ["[bot] done", "you> next"]
    assert typing.screen.cursor == (1, 9)


def test_a_line_that_fills_its_row_and_wide_characters_at_the_edge() -> None:
    typing = Typing(columns=8)
    typing.ask("you> ")
    typing.keys("abc")
    assert typing.screen.rows == ["you> abc"]
    typing.keys("漢", Key.LEFT)
    assert typing.screen.rows == ["you> abc", "漢"]
    assert typing.screen.cursor == (1, 0)
    typing.keys(Key.HOME)
    assert typing.screen.cursor == (0, 5)


def test_ctrl_c_leaves_the_dropped_line_shown_with_a_mark() -> None:
    typing = Typing()
    typing.ask("\nyou> ")
    typing.keys("half")
    typing.editor.clear()
    typing.screen.feed(typing.display.finish("^C"))
    typing.show("\n  (Ctrl-C)")
    assert typing.screen.rows == ["", "you> half^C", "  (Ctrl-C)"]


def test_a_log_record_goes_on_rows_of_its_own_and_the_line_comes_back_below_it() -> None:
    typing = Typing()
    typing.ask("\nyou> ")
    typing.keys("hello world", *[Key.LEFT] * 6)  # the cursor after "hello"
    typing.screen.feed(typing.display.above("W: disk\nalmost full\n"))
    assert typing.screen.rows == ["", "W: disk", "almost full", "you> hello w", "orld"]
    assert typing.screen.cursor == (3, 10)  # where it stood, before the space
    typing.keys(",", Key.ENTER)
    assert typing.screen.rows[-2:] == ["you> hello,", "world"]  # rows shown without trailing blanks


def test_a_log_record_takes_the_place_of_an_unfinished_row_which_goes_on_below_it() -> None:
    typing = Typing()
    typing.show("[bot] one ")
    typing.screen.feed(typing.display.above("W: late"))  # a line break is added
    assert typing.screen.rows == ["W: late", "[bot] one"]
    typing.show("two")
    assert typing.screen.rows == ["W: late", "[bot] one tw", "o"]


def test_what_the_terminal_echoed_before_the_line_was_edited_is_taken_back() -> None:
    typing = Typing()
    typing.screen.feed("first line\r\nsecond line, long")  # as the terminal echoed it
    assert typing.screen.rows == ["first line", "second line,", " long"]
    typing.screen.feed(typing.display.take_back("first line\nsecond line, long"))
    assert typing.screen.rows == []
    assert typing.screen.cursor == (0, 0)
    typing.screen.feed("exactly12chr")  # a full row: the cursor waits on its last column
    typing.screen.feed(typing.display.take_back("exactly12chr"))
    assert typing.screen.rows == []
    assert typing.display.take_back("") == ""


# -- a long line pasted in pieces ------------------------------------------------------------


class Measured:
    """A display whose `place` calls are counted, by the characters they measure."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, columns: int = 80) -> None:
        self.placed = 0
        self.display = LineDisplay(lambda: columns)

        def counting(text: str, width: int, start: tuple[int, int] = (0, 0)) -> Spots:
            self.placed += len(text)
            return place(text, width, start)

        monkeypatch.setattr(line_display, "place", counting)


def test_a_line_pasted_in_pieces_writes_and_measures_each_piece_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A paste arrives a few kB at a time. Each piece was written and measured with the whole
    line again (the line redrawn), so a 200,000-character line took minutes to take, and
    Ctrl-C waited for it."""
    measured = Measured(monkeypatch)
    display = measured.display
    display.ask("\nyou> ")
    piece, pieces = "x" * 4096, 50
    written = []
    for count in range(1, pieces + 1):
        written.append(display.edit(piece * count, len(piece) * count))
    assert written[1:] == [piece] * (pieces - 1)  # each piece alone, nothing drawn again
    assert measured.placed < 2 * len(piece) * pieces
    assert display.finish("\n") == "\n"  # shown whole already: Enter only ends it
    assert measured.placed < 2 * len(piece) * pieces


def test_typing_at_the_end_piece_by_piece_shows_what_drawing_the_line_at_once_shows() -> None:
    """Only the added text is written and measured: where it wraps (a full row, a wide
    character that does not fit, a tab, a combining mark) must agree with a whole drawing,
    and so must where the cursor is for the next edit."""
    text = "abc漢字\tde\u0301fghij漢klmnopq\trs漢tuvwxyz"  # (rows enough: nothing scrolls)
    for columns in (7, 8, 9):
        typing, whole = Typing(columns), Typing(columns)
        typing.ask("\nyou> ")
        typing.keys(*text)  # one key at a time, each added at the end
        whole.ask("\nyou> ")
        whole.screen.feed(whole.display.edit(text, len(text)))
        assert typing.screen.rows == whole.screen.rows
        assert typing.screen.cursor == whole.screen.cursor
        typing.keys(*[Key.LEFT] * 5, "!")  # drawn whole from where the line starts
        edited = text[:-5] + "!" + text[-5:]
        whole.screen.feed(whole.display.edit(edited, len(edited) - 5))
        assert typing.screen.rows == whole.screen.rows
        assert typing.screen.cursor == whole.screen.cursor


def test_after_the_window_is_resized_text_typed_at_the_end_redraws_the_line() -> None:
    """What was measured at the old width is no guide to the new one."""
    columns = [12]
    display = LineDisplay(lambda: columns[0])
    display.ask("you> ")
    display.edit("abcdefghij", 10)
    assert display.edit("abcdefghijk", 11) == "k"
    columns[0] = 8
    written = display.edit("abcdefghijkl", 12)
    assert CLEAR_BELOW in written and written.endswith("you> abcdefghijkl")  # drawn whole


def test_a_line_drawn_already_is_drawn_whole_again_when_asked() -> None:
    """After Ctrl-Z and `fg` the shell may have written over it: nothing added is no reason
    to write nothing."""
    display = LineDisplay(lambda: COLUMNS)
    display.ask("you> ")
    display.edit("half typed", 10)
    assert display.edit("half typed", 10) == ""
    assert display.redraw("half typed", 10).endswith("\r" + CLEAR_BELOW + "you> half typed")
