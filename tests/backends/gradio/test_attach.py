"""Images for the next message: recognised by their bytes, capped in size and number, kept
per tab on the server until a send takes them."""

from __future__ import annotations

import base64

from backends.gradio.attach import (
    MAX_IMAGE_BYTES,
    MAX_IMAGES,
    Trays,
    add_images,
    attachments_note,
    sniff_image_type,
)

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 16
GIF = b"GIF89a" + b"\x00" * 16
WEBP = b"RIFF\x10\x00\x00\x00WEBPVP8 " + b"\x00" * 8


def test_types_come_from_the_bytes_not_the_name() -> None:
    assert [sniff_image_type(d) for d in (PNG, JPEG, GIF, WEBP)] == [
        "image/png",
        "image/jpeg",
        "image/gif",
        "image/webp",
    ]
    for other in (b"", b"%PDF-1.7", b"<svg xmlns='http://www.w3.org/2000/svg'/>", b"RIFFxxxxWAVE"):
        assert sniff_image_type(other) is None


def test_kept_images_are_base64_image_parts() -> None:
    kept, problems = add_images([], [PNG, b"hello"])
    assert problems == ["file 2 is not a PNG, JPEG, GIF or WebP image"]
    (part,) = kept
    assert part.media_type == "image/png" and base64.b64decode(part.data or "") == PNG
    assert attachments_note(1) == "📎 1 image will go with your next message."
    assert attachments_note(2).startswith("📎 2 images")
    assert attachments_note(0) == ""


def test_size_and_count_caps() -> None:
    big = PNG + b"\x00" * MAX_IMAGE_BYTES
    kept, problems = add_images([], [big])
    assert kept == [] and "the limit is 5 MiB" in problems[0]
    kept, problems = add_images([], [PNG] * (MAX_IMAGES + 2))
    assert len(kept) == MAX_IMAGES and len(problems) == 2
    assert "at most 8 images" in problems[0]


def test_trays_are_per_tab_taken_whole_and_bounded() -> None:
    trays = Trays(max_tabs=2)
    assert trays.add("a", [PNG]) == (1, [])
    assert trays.add("a", [GIF]) == (2, [])
    assert trays.add("b", [b"nope"])[0] == 0 and trays.count("b") == 0
    assert [i.media_type for i in trays.take("a")] == ["image/png", "image/gif"]
    assert trays.take("a") == () and trays.count("a") == 0
    for tab in ("x", "y", "z"):
        trays.add(tab, [PNG])
    assert (trays.count("x"), trays.count("y"), trays.count("z")) == (0, 1, 1)


def test_trays_bound_the_bytes_held() -> None:
    trays = Trays(max_bytes=3 * len(base64.b64encode(PNG)))
    for tab in ("a", "b", "c", "d"):
        trays.add(tab, [PNG])
    assert [trays.count(t) for t in "abcd"] == [0, 1, 1, 1]
