"""How the server serves the React front end (`backends.react_front.mount_react`): its build
at /react/ with the same guards as every other answer, the folder's address without its
slash sent on (relatively, so a proxy's path prefix is kept), nothing outside the build, and
a server without a build saying how to make one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from backends.react_front import NOT_BUILT, REACT_DIST, mount_react
from backends.server import build_server
from gui_agent.config import AppConfig
from tests.backends.api.live import ServerThread


def served(dist: Path) -> TestClient:
    app = Starlette()
    mount_react(app, dist)
    return TestClient(app, follow_redirects=False)


def test_without_a_build_the_page_says_how_to_make_one(tmp_path: Path) -> None:
    client = served(tmp_path / "dist")
    for path in ("/react/", "/react/assets/index.js"):
        answer = client.get(path)
        assert answer.status_code == 404 and answer.text == NOT_BUILT
    assert "scripts/build-react.sh" in NOT_BUILT


def test_a_build_is_served_and_nothing_beside_it(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    (dist / "assets").mkdir(parents=True)
    (dist / "index.html").write_text('<script src="./assets/app.js"></script>')
    (dist / "assets" / "app.js").write_text("export {};")
    (tmp_path / "secret.txt").write_text("not for the web")
    client = served(dist)
    moved = client.get("/react")
    assert moved.status_code == 307 and moved.headers["location"] == "react/"
    page = client.get("/react/")
    assert page.status_code == 200 and "./assets/app.js" in page.text
    script = client.get("/react/assets/app.js")
    assert script.status_code == 200 and "javascript" in script.headers["content-type"]
    for escape in (
        "/react/../secret.txt",
        "/react/%2e%2e/secret.txt",
        "/react/assets/../../secret.txt",
    ):
        answer = client.get(escape)
        assert "not for the web" not in answer.text


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerThread]:
    config = AppConfig(models=("scripted:echo",), data_dir=tmp_path / "data")
    running = ServerThread(lambda: build_server(config, probe_local=False)).start()
    try:
        yield running
    finally:
        running.stop()


def test_gui_agent_serve_serves_the_build_with_its_guards(server: ServerThread) -> None:
    assert (REACT_DIST / "index.html").is_file(), "build it first: scripts/build-react.sh"
    page = httpx.get(f"{server.base_url}/react/")
    assert page.status_code == 200
    assert page.text == (REACT_DIST / "index.html").read_text()  # not the Gradio page at /
    assert page.headers["x-frame-options"] == "DENY"  # the server's guards hold here too
    assert httpx.get(f"{server.base_url}/").status_code == 200  # and the page is still at /
    # another web site cannot read it
    other = httpx.get(f"{server.base_url}/react/", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in other.headers
