"""What a chat of photos costs the page to open: inline images against linked ones.

A chat of N person messages, each with one photo of full size (5 MiB by default, random
bytes: incompressible, as a camera's JPEG), each answered. For each way of showing images
the benchmark builds the chat's view from its history (`ChatView.from_history`, as a tab
that opens the chat does) and encodes the chatbot's value as JSON (what Gradio sends),
three times: the first time, and again (a second tab, or the same tab reopening it).

- inline: every image as a `data:` URL inside the chat's Markdown (the page before the
  media shelf, and `create_app` without one);
- linked: every image as a `media/<token>` address on a `MediaShelf` (the served page).

Run: python tests/bench/bench_media.py [--photos N] [--mib M]. The last line is one JSON
object.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from backends.gradio.markdown import MediaLink
from backends.gradio.media import MediaShelf
from backends.gradio.renderer import ChatView
from schema import ImagePart, Message, Role


def history(photos: int, size: int) -> list[Message]:
    messages = []
    for number in range(photos):
        data = base64.b64encode(os.urandom(size)).decode("ascii")
        image = ImagePart(media_type="image/jpeg", data=data)
        messages.append(Message(role=Role.USER, content=f"photo {number}", images=(image,)))
        messages.append(Message(role=Role.ASSISTANT, content=f"I see photo {number}."))
    return messages


def open_chat(messages: list[Message], link: MediaLink | None) -> tuple[float, int]:
    """Milliseconds to build the view and encode it, and the encoded bytes."""
    started = time.perf_counter()
    view = ChatView.from_history(messages, media=link)
    encoded = json.dumps(view.messages())
    return (time.perf_counter() - started) * 1000, len(encoded.encode())


def measure(messages: list[Message], link: MediaLink | None) -> dict[str, float]:
    first_ms, size = open_chat(messages, link)
    again = [open_chat(messages, link)[0] for _ in range(3)]
    return {
        "first_open_ms": round(first_ms, 1),
        "open_again_ms": round(statistics.median(again), 1),
        "chat_json_bytes": size,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--photos", type=int, default=10)
    parser.add_argument("--mib", type=float, default=5.0, help="size of each photo")
    args = parser.parse_args()
    messages = history(args.photos, int(args.mib * 2**20))
    inline = measure(messages, None)
    linked = measure(messages, MediaShelf().linker("local"))
    print(f"a chat of {args.photos} photos of {args.mib:g} MiB, each answered")
    print(f"{'images':>8} {'first open':>11} {'open again':>11} {'chat JSON':>12}")
    for name, row in (("inline", inline), ("linked", linked)):
        print(
            f"{name:>8} {row['first_open_ms']:>9} ms {row['open_again_ms']:>8} ms "
            f"{row['chat_json_bytes']:>12,} B"
        )
    print("open = build the chat's view from its history and encode it as JSON, as a tab does")
    print(
        json.dumps(
            {
                "bench": "media",
                "photos": args.photos,
                "photo_mib": args.mib,
                "inline": inline,
                "linked": linked,
            }
        )
    )


if __name__ == "__main__":
    main()
