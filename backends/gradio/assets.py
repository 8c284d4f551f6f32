"""The page's static parts from the repository's `assets/` folder: role icons, CSS, JS.

Icons are embedded as data URLs and the CSS and JS are inlined, so the page needs no file
route at all; a server that does serve files should allow only `ASSETS_DIR`.
"""

from __future__ import annotations

import base64
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from schema import MAX_MESSAGE_CHARS, AgentName

__all__ = ["ASSETS_DIR", "PageAssets", "icon_file", "load_assets"]

logger = logging.getLogger(__name__)

ASSETS_DIR: Final = Path(__file__).resolve().parents[2] / "assets"
"""The folder of icons and page files (the only folder the app serves files from)."""

_CSS_PLACEHOLDER = "__GUI_AGENT_CSS__"
_MAX_CHARS_PLACEHOLDER = "__GUI_AGENT_MAX_CHARS__"


def icon_file(agent: AgentName, folder: Path = ASSETS_DIR) -> Path:
    """The SVG icon of an agent role: `assets/<role in lower case>.svg`."""
    return folder / f"{agent.value.lower()}.svg"


@dataclass(frozen=True, slots=True)
class PageAssets:
    icons: dict[str, str]
    """Agent role → icon as a `data:image/svg+xml` URL."""
    page_js: str
    """Runs once on page load: installs the CSS and the keyboard shortcuts. What it needs of
    the page's layout (the boxes whose typing it keeps) is filled in by `create_app`
    (`unsaved.with_unsaved`)."""
    download_js: str
    """Turns an export into a file download in the browser."""


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        logger.warning("page asset %s is missing; the page works without it", path)
        return ""


def load_assets(folder: Path = ASSETS_DIR) -> PageAssets:
    """Read the assets once (at app creation, never per request)."""
    icons: dict[str, str] = {}
    for agent in AgentName:
        svg = _read(icon_file(agent, folder))
        if svg:
            encoded = base64.b64encode(svg.encode("utf-8")).decode("ascii")
            icons[agent.value] = f"data:image/svg+xml;base64,{encoded}"
    css = _read(folder / "app.css")
    page_js = _read(folder / "page.js").strip() or "() => {}"
    download_js = _read(folder / "download.js").strip() or "() => {}"
    return PageAssets(
        icons=icons,
        page_js=page_js.replace(_CSS_PLACEHOLDER, json.dumps(css)).replace(
            _MAX_CHARS_PLACEHOLDER, str(MAX_MESSAGE_CHARS)
        ),
        download_js=download_js,
    )
