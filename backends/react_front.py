"""The React front end (`backends/react`, a Vite project) as the server serves it: its build
(`backends/react/dist`, made by `scripts/build-react.sh`) at /react/, from the same origin
as the API it speaks to, which refuses other web sites. Without a build, /react/ says how to
make one. The page loads the API's browser client from the server (`/api/client.js`), so it
always speaks this server's version of the API.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Final

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

logger = logging.getLogger(__name__)

REACT_PATH: Final = "/react"
REACT_DIST: Final = Path(__file__).resolve().parent / "react" / "dist"
NOT_BUILT: Final = (
    "The React front end is not built on this server: run scripts/build-react.sh "
    "(it needs Node.js and npm), then start the server again."
)


def mount_react(app: Starlette, dist: Path = REACT_DIST) -> bool:
    """Serve the build in `dist` at /react/ (before any app mounted at /). True when there
    is a build to serve."""
    built = (dist / "index.html").is_file()

    async def to_folder(request: Request) -> Response:
        # relative, so a reverse proxy's path prefix is kept
        return RedirectResponse("react/", status_code=307)

    app.router.routes.append(Route(REACT_PATH, to_folder))
    if built:
        app.router.routes.append(Mount(REACT_PATH, StaticFiles(directory=dist, html=True)))
    else:
        logger.info("no React front end at /react/: %s is not built", dist)

        async def not_built(request: Request) -> Response:
            return PlainTextResponse(NOT_BUILT, status_code=404)

        app.router.routes.append(Mount(REACT_PATH, routes=[Route("/{rest:path}", not_built)]))
    return built
