"""Images attached for the next message show before it is sent, each named by its file and
with a button of its own that takes it back; the bytes, not a file's name, decide what is an
image. Driven as the browser's events would run them (no browser; the page itself:
test_page_attach_preview.py)."""

from __future__ import annotations

import base64
import html
from collections.abc import Iterator
from pathlib import Path

import gradio as gr
import pytest
from gradio.data_classes import FileData, ListFiles

from backends.gradio.attach import MAX_IMAGE_BYTES, Trays, attachments_note, read_upload
from backends.gradio.handlers import tab_of
from backends.gradio.image_upload import ImageUploadButton, UploadedFile
from backends.gradio.tray_preview import taken_back, tray_preview
from schema import ImagePart
from tests.backends.gradio.kit import page_handlers, tiny_png
from tests.backends.gradio.test_temperature_range import assert_no_stub_written

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def warnings_said(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    said: list[str] = []
    monkeypatch.setattr(gr, "Warning", lambda message, *_a, **_k: said.append(message))
    yield said


def _keys(preview: str) -> list[str]:
    return [part.split('"', 1)[0] for part in preview.split('data-key="')[1:]]


async def test_uploads_are_kept_by_their_bytes_shown_by_name_and_taken_back_one_by_one(
    tmp_path: Path, warnings_said: list[str]
) -> None:
    """A picture whose name says nothing of its type ("holiday") is attached; a text file
    named as a picture is refused, by its name; each picture kept shows with its file's name,
    and its button takes that one back only."""
    page, manager, handlers = await page_handlers(tmp_path)
    try:
        holiday, notes, second = tmp_path / "holiday", tmp_path / "notes.png", tmp_path / "b.png"
        holiday.write_bytes(tiny_png())
        second.write_bytes(tiny_png())
        notes.write_text("not a picture")
        files = [
            UploadedFile(str(p), name)
            for p, name in ((holiday, "holiday <1>"), (notes, "notes.png"), (second, "b.png"))
        ]
        shown = await handlers.attach(files, None)  # type: ignore[arg-type]
        assert warnings_said == ["Not attached: notes.png is not a PNG, JPEG, GIF or WebP image."]
        assert shown[page.attach_note] == attachments_note(2)
        preview = shown[page.attach_preview]
        assert preview.count("<img ") == 2
        assert 'alt="holiday &lt;1&gt;"' in preview and "holiday <1>" not in preview
        assert 'aria-label="Remove b.png"' in preview
        first, last = _keys(preview)

        kept = await handlers.take_back(gr.EventData(None, {"key": first}), None)  # type: ignore[arg-type]
        assert kept[page.attach_note] == attachments_note(1)
        assert (
            _keys(kept[page.attach_preview]) == [last]
            and "holiday" not in kept[page.attach_preview]
        )
        again = await handlers.take_back(gr.EventData(None, {"key": first}), None)  # type: ignore[arg-type]
        assert _keys(again[page.attach_preview]) == [last], "pressed twice: nothing more goes"
        nothing = await handlers.take_back(gr.EventData(None, None), None)  # type: ignore[arg-type]
        assert _keys(nothing[page.attach_preview]) == [last]
        (image,) = handlers.trays.take(tab_of(None))
        assert base64.b64decode(image.data or "") == tiny_png()
        assert (await handlers.hide_tray())[page.attach_preview] == ""
    finally:
        await manager.close()


def test_an_upload_larger_than_the_limit_is_refused_unread(tmp_path: Path) -> None:
    """Its size is read, not its bytes (a film picked by mistake)."""
    big = tmp_path / "big.png"
    with big.open("wb") as file:
        file.write(tiny_png())
        file.truncate(MAX_IMAGE_BYTES + 1)
    upload = read_upload(str(big))
    assert (upload.name, upload.data, upload.size) == ("big.png", b"", MAX_IMAGE_BYTES + 1)
    count, problems = Trays().add("t", [upload])
    assert count == 0 and problems == ["big.png has 5.0 MiB; the limit is 5 MiB"]


def test_the_preview_links_pictures_by_address_and_names_unnamed_ones() -> None:
    trays = Trays()
    trays.put_back(
        "t", [ImagePart(media_type="image/png", data=base64.b64encode(tiny_png()).decode())]
    )
    (item,) = trays.shown("t")
    assert item.name == ""  # (put back from a message: no file)
    linked = tray_preview(trays.shown("t"), lambda image: "media/abc")
    assert 'src="media/abc"' in linked and 'alt="Image 1"' in linked
    inline = tray_preview(trays.shown("t"), None)
    assert 'src="data:image/png;base64,' in inline
    assert tray_preview(()) == ""
    assert html.unescape(inline).count("Remove Image 1") == 2  # (its label and its tip)


def test_the_preview_event_names_the_picture_it_takes_back() -> None:
    assert taken_back(gr.EventData(None, {"key": "a3"})) == "a3"
    assert taken_back(gr.EventData(None, {"key": 3})) is None
    assert taken_back(gr.EventData(None, {})) is None
    assert taken_back(gr.EventData(None, None)) is None


def test_the_upload_button_hands_over_every_file_with_its_name(tmp_path: Path) -> None:
    """Gradio's own button refuses the whole upload when one name does not look like an
    image (a pasted picture is named "pasted"); this one leaves that to the bytes, and is
    drawn by Gradio's own upload button."""
    button = ImageUploadButton("Attach", file_types=["image"], file_count="multiple", render=False)
    assert button.get_block_name() == "uploadbutton"
    pasted, named = tmp_path / "pasted", tmp_path / "a_b.png"
    payload = ListFiles(
        root=[
            FileData(path=str(pasted), orig_name="pasted"),
            FileData(path=str(named), orig_name="a/b.png"),
        ]
    )
    assert button.preprocess(payload) == [
        UploadedFile(str(pasted), "pasted"),
        UploadedFile(str(named), "a/b.png"),
    ]
    assert button.preprocess(FileData(path=str(pasted))) == [UploadedFile(str(pasted), "pasted")]
    assert button.preprocess(None) is None
    with pytest.raises(gr.Error):  # (why this button exists)
        gr.UploadButton(file_types=["image"], file_count="multiple", render=False).preprocess(
            payload
        )


def test_the_upload_button_class_writes_no_stub_next_to_its_module(tmp_path: Path) -> None:
    """As for the slider (test_temperature_range.py): checked in a fresh interpreter where
    Gradio was imported first, with a writer that only records."""
    assert_no_stub_written(tmp_path, "backends.gradio.image_upload", "ImageUploadButton")
