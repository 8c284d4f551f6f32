"""The real `gui-agent serve` process: what an operator sees when starting, stopping,
crashing and restarting it. The tests run the installed command in a subprocess and talk
to it over HTTP on a free loopback port; the last one checks the same composition
(`build_server`) in process."""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from backends.server import build_server, served_url
from gui_agent.auth import UserDB
from gui_agent.config import AppConfig
from gui_agent.manager import INTERRUPTED_NOTE
from schema import MessageStatus, MessageType, Role, TextDelta
from tests.backends.api.live import Api, ServerThread, free_port, is_idle

GUI_AGENT = Path(sys.executable).with_name("gui-agent")
READY_TIMEOUT_S = 90.0
ECHO_PREFIX = "I am the built-in echo model"


def _env() -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("GUI_AGENT_", "OPENAI_", "ANTHROPIC_"))
    }
    env.update(GRADIO_ANALYTICS_ENABLED="False", HF_HUB_OFFLINE="1", HF_HUB_DISABLE_TELEMETRY="1")
    return env


def serve_args(
    data_dir: Path, port: int, *extra: str, host: str = "127.0.0.1", model_flag: bool = True
) -> list[str]:
    """`gui-agent serve` on host:port; with `--model scripted:echo` unless not `model_flag`
    (the model then comes from the environment or a config file)."""
    return [
        str(GUI_AGENT),
        "serve",
        "--host",
        host,
        "--port",
        str(port),
        "--data-dir",
        str(data_dir),
        *(("--model", "scripted:echo") if model_flag else ()),
        "--no-probe",
        *extra,
    ]


@dataclass
class ServerProcess:
    process: subprocess.Popen[bytes]
    port: int
    log_path: Path
    clients: list[Api] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_ready(self) -> httpx.Response:
        """Poll GET / until the server answers (bounded; fails early if the process exits)."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"the server exited with {self.process.returncode}:\n{self.log()}")
            try:
                return httpx.get(self.base_url + "/", timeout=2.0)
            except httpx.TransportError:
                time.sleep(0.1)
        pytest.fail(f"the server did not answer within {READY_TIMEOUT_S} s:\n{self.log()}")

    def client(self) -> Api:
        api = Api(self.base_url).login()
        self.clients.append(api)
        return api

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        return self.wait()

    def wait(self) -> int:
        """Close this test's clients and wait for the process to exit; its exit code."""
        for api in self.clients:
            api.close()
        return self.process.wait(timeout=60)


class Servers:
    """Starts server processes and makes sure none outlives the test."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.started: list[ServerProcess] = []

    def start(
        self,
        data_dir: Path,
        *extra: str,
        host: str = "127.0.0.1",
        ready: bool = True,
        model_flag: bool = True,
        env: dict[str, str] | None = None,
    ) -> ServerProcess:
        port = free_port()
        log_path = self.tmp_path / f"server-{len(self.started)}.log"
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                serve_args(data_dir, port, *extra, host=host, model_flag=model_flag),
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.tmp_path,
                env={**_env(), **(env or {})},
            )
        server = ServerProcess(process, port, log_path)
        self.started.append(server)
        if ready:
            server.wait_ready()
        return server

    def run(
        self,
        data_dir: Path,
        *extra: str,
        host: str = "127.0.0.1",
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run a server that is expected to refuse to start."""
        return subprocess.run(
            serve_args(data_dir, free_port(), *extra, host=host),
            capture_output=True,
            text=True,
            timeout=120,
            cwd=self.tmp_path,
            env={**_env(), **(env or {})},
            check=False,
        )

    def cleanup(self) -> None:
        for server in self.started:
            for api in server.clients:
                api.close()
            if server.process.poll() is None:
                server.process.kill()
                server.process.wait(timeout=30)


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[Servers]:
    running = Servers(tmp_path)
    try:
        yield running
    finally:
        running.cleanup()


def chat(api: Api, session_id: str, text: str) -> None:
    """Send a message and read the event stream until the turn is over."""
    with api.events(session_id) as stream:
        api.send(session_id, text)
        stream.until(is_idle)


# -- (a) the bind check -------------------------------------------------------------------


def test_a_public_bind_without_login_is_refused_with_how_to(
    servers: Servers, tmp_path: Path
) -> None:
    refused = servers.run(tmp_path / "data", host="0.0.0.0")
    assert refused.returncode == 2
    assert "gui-agent users add NAME" in refused.stderr
    assert f"--auth-file {tmp_path / 'data' / 'users.json'}" in refused.stderr  # (the default)
    assert "Traceback" not in refused.stderr
    assert not (tmp_path / "data").exists()  # refused before touching anything


def test_a_server_on_every_address_is_said_to_run_at_this_machines_name() -> None:
    with socket.socket() as listener:
        listener.bind(("0.0.0.0", 0))
        port = listener.getsockname()[1]
        said = served_url(listener, "")
    assert said.startswith(f"http://{socket.gethostname()}:{port}/")
    assert "0.0.0.0" not in said
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        assert (
            served_url(listener, "/chat") == f"http://127.0.0.1:{listener.getsockname()[1]}/chat/"
        )


def test_share_is_refused_with_why_and_what_to_do_instead(servers: Servers, tmp_path: Path) -> None:
    """A Gradio share link would phone home and put the page on the internet: asking for
    one (flag, config file or environment) stops the server before it touches anything."""
    config = tmp_path / "share.toml"
    config.write_text("share = true\n")
    for extra, env in (
        (("--share",), {}),
        ((), {"GUI_AGENT_SHARE": "true"}),
        ((), {"GUI_AGENT_CONFIG": str(config)}),
    ):
        refused = servers.run(tmp_path / "data", *extra, env=env)
        assert refused.returncode == 2, (extra, env, refused.stderr)
        assert "--share is refused" in refused.stderr
        assert "public tunnel" in refused.stderr and "--auth-file" in refused.stderr
        assert "Traceback" not in refused.stderr
        assert not (tmp_path / "data").exists()  # refused before touching anything


def test_the_log_says_where_each_model_really_came_from(servers: Servers, tmp_path: Path) -> None:
    """`serve` names the true source of its models, as `gui-agent models` does: the
    environment variable or the config file, never "--model flag" for either."""
    config = tmp_path / "models.toml"
    config.write_text('models = ["scripted:echo"]\n')
    cases: list[tuple[dict[str, str], tuple[str, ...], str]] = [
        ({"GUI_AGENT_MODEL": "scripted:echo"}, (), "GUI_AGENT_MODEL in environment"),
        ({"GUI_AGENT_CONFIG": str(config)}, (), f"config file {config}"),
        ({}, ("--config", str(config)), f"config file {config}"),
    ]
    # All four start at once (each its own data folder), then each is waited for in turn.
    started = [
        (
            servers.start(tmp_path / f"data{n}", *extra, model_flag=False, env=env, ready=False),
            source,
        )
        for n, (env, extra, source) in enumerate(cases)
    ]
    flagged = servers.start(tmp_path / "data-flagged", ready=False)
    for server, source in started:
        server.wait_ready()
        assert server.stop() == 0
        log = server.log()
        assert f"model scripted:echo [default] ({source})" in log, log
        assert "--model flag" not in log
    flagged.wait_ready()
    assert flagged.stop() == 0
    assert "model scripted:echo [default] (--model flag)" in flagged.log()


def test_insecure_no_auth_serves_a_public_bind_with_a_warning(
    servers: Servers, tmp_path: Path
) -> None:
    server = servers.start(tmp_path / "data", "--insecure-no-auth", host="0.0.0.0")
    assert "WARNING" in server.log() and "--insecure-no-auth" in server.log()
    api = server.client()
    assert api.get("/api/models").json()["default"] == "scripted:echo"
    assert server.stop() == 0
    assert "GuiAgent stopped" in server.log()


def test_login_from_a_users_file(servers: Servers, tmp_path: Path) -> None:
    users_file = tmp_path / "users.json"
    empty = servers.run(tmp_path / "data", "--auth-file", str(users_file))
    assert empty.returncode == 2 and "gui-agent users add NAME" in empty.stderr
    added = subprocess.run(
        [str(GUI_AGENT), "users", "add", "alice", "--auth-file", str(users_file)],
        input="correct-horse-battery\n",
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(),
        check=False,
    )
    assert added.returncode == 0, added.stderr

    server = servers.start(tmp_path / "data", "--auth-file", str(users_file), host="0.0.0.0")
    http = httpx.Client(base_url=server.base_url, timeout=20)
    with http:
        wrong = http.post("/api/login", json={"username": "alice", "password": "nope-nope"})
        assert wrong.status_code == 401
        ok = http.post(
            "/api/login", json={"username": "alice", "password": "correct-horse-battery"}
        )
        assert ok.status_code == 200 and ok.json()["user"] == "alice"
        token = ok.json()["token"]
        listed = http.get("/api/sessions", headers={"Authorization": f"Bearer {token}"})
        assert listed.status_code == 200
    assert server.stop() == 0


def users_cli(users_file: Path, *args: str, stdin: str | None = None) -> None:
    done = subprocess.run(
        [str(GUI_AGENT), "users", *args, "--auth-file", str(users_file)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(),
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_a_user_removed_while_serving_has_their_turn_stopped(
    servers: Servers, tmp_path: Path
) -> None:
    users_file = tmp_path / "users.json"
    users_cli(users_file, "add", "bob", "--password-stdin", stdin="bob-password-22\n")
    server = servers.start(tmp_path / "data", "--auth-file", str(users_file))
    bob = Api(server.base_url).login("bob", "bob-password-22")
    server.clients.append(bob)
    session_id = bob.create_session()
    long_text = " ".join(f"word{i}" for i in range(3000))  # ~30 s of echo
    with bob.events(session_id) as stream:
        bob.send(session_id, long_text)
        while not isinstance(stream.next(), TextDelta):
            pass
        users_cli(users_file, "remove", "bob")
        ended = []
        for item in stream.sse:
            if item.id is None:  # the `closed` event
                break
            ended.append(item.parsed())
        assert item.event == "closed" and next(stream.sse, None) is None
    finished = [(e.outcome.value, e.detail) for e in ended if e.type == "run_finished"]
    assert finished == [("interrupted", "the user was removed")]
    assert "bob was removed from the users file" in server.log()
    assert server.stop() == 0  # the users file watcher ends with the server
    assert "Traceback" not in server.log() and "Task was destroyed" not in server.log()


# -- (b) restart -------------------------------------------------------------------------


def test_sessions_survive_a_restart(servers: Servers, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    first = servers.start(data_dir)
    api = first.client()
    session_id = api.create_session()
    chat(api, session_id, "remember the blue door")
    token = api.token
    signed_out = first.client()  # another tab's login, signed out before the restart
    assert signed_out.post("/api/logout").status_code == 204
    assert signed_out.get("/api/sessions").status_code == 401
    assert first.stop() == 0

    second = servers.start(data_dir)
    api = Api(second.base_url, token)  # the signing key persisted: the old token still works
    second.clients.append(api)
    gone = Api(second.base_url, signed_out.token)
    second.clients.append(gone)
    refused = gone.get("/api/sessions")
    assert refused.status_code == 401 and "signed out" in refused.json()["error"]["message"]
    listed = api.get("/api/sessions").json()["sessions"]
    assert [(s["id"], s["title"]) for s in listed] == [(session_id, "remember the blue door")]
    messages = api.messages(session_id)
    assert [m.role for m in messages] == [Role.USER, Role.ASSISTANT]
    assert messages[0].content == "remember the blue door"
    assert messages[1].content.startswith(ECHO_PREFIX)
    assert messages[1].content.endswith("remember the blue door")
    assert all(m.status is MessageStatus.COMPLETE for m in messages)
    assert second.stop() == 0


PLUGGED = """
async def agent(messages):
    yield "bot heard: "
    yield messages[-1]["content"]
"""


def test_your_own_agent_named_with_agent_answers_in_the_app_and_the_terminal(
    servers: Servers, tmp_path: Path
) -> None:
    (tmp_path / "mybot.py").write_text(PLUGGED)  # (the servers run in tmp_path)
    refused = servers.run(tmp_path / "refused", "--agent", "mybot:nothing")
    assert refused.returncode == 2 and "mybot has no 'nothing'" in refused.stderr

    server = servers.start(tmp_path / "data", "--agent", "mybot.py:agent")
    api = server.client()
    agents = api.get("/api/agents").json()
    offered = [a["name"] for a in agents["agents"]]
    assert offered[0] == agents["default"] == "OTHER"  # first (the page picks it for you)
    assert "AGENT_EXECUTOR" in offered  # beside the built-in roles
    page = api.http.get("/config").json()["components"]
    [picker] = [c["props"] for c in page if c.get("props", {}).get("elem_id") == "role-picker"]
    assert picker["value"] == "OTHER" and ["Other", "OTHER"] in picker["choices"]
    session_id = api.create_session()
    assert api.session(session_id)["session"]["agent"] == "OTHER"  # new chats start in it
    chat(api, session_id, "hello there")
    reply = api.messages(session_id)[-1]
    assert (reply.role, reply.content) == (Role.ASSISTANT, "bot heard: hello there")
    assert "offered as the role OTHER" in server.log()
    assert server.stop() == 0

    terminal = subprocess.run(
        [str(GUI_AGENT), "chat", "--model=scripted:echo", "--no-probe", "--agent=mybot.py:agent"],
        input="and in the terminal\n",
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**_env(), "GUI_AGENT_DATA_DIR": str(tmp_path / "terminal")},
        check=False,
    )
    assert terminal.returncode == 0, terminal.stderr
    assert "bot heard: and in the terminal" in terminal.stdout


# -- (c) a crash mid-stream ---------------------------------------------------------------


def test_a_kill_mid_stream_keeps_what_was_said_and_marks_the_turn_interrupted(
    servers: Servers, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    first = servers.start(data_dir)
    api = first.client()
    session_id = api.create_session()
    # The echo model repeats the message one word per 10 ms: about 40 s for this one.
    long_text = " ".join(f"word{i}" for i in range(3000))
    with api.events(session_id) as stream:
        api.send(session_id, long_text)
        deltas = 0
        while deltas < 150:  # 1.5 s of streaming: the partial reply has been saved
            if isinstance(stream.next(), TextDelta):
                deltas += 1
        # Sent while the reply streams: it waits for the agent (on disk too) when the kill
        # comes, and is kept, unanswered, as a Stop keeps it.
        waiting = api.post(f"/api/sessions/{session_id}/messages", json={"text": "one more"})
        assert waiting.status_code == 202 and waiting.json()["queued"] is True
        assert first.stop(signal.SIGKILL) == -signal.SIGKILL

    second = servers.start(data_dir)
    api = second.client()
    detail = api.session(session_id)
    assert detail["state"] == "STOP"
    messages = api.messages(session_id)
    user, partial, kept, note = messages
    assert (kept.id, kept.content) == (waiting.json()["message_id"], "one more")
    assert kept.role is Role.USER and kept.metadata == {"unanswered": True}
    assert user.content == long_text and user.status is MessageStatus.COMPLETE
    assert partial.role is Role.ASSISTANT and partial.status is MessageStatus.INTERRUPTED
    assert partial.content.startswith(ECHO_PREFIX) and "word0 word1" in partial.content
    assert not partial.content.endswith("word2999")
    assert note.type is MessageType.MESSAGE and note.content == INTERRUPTED_NOTE
    assert "interrupted" in second.log()

    chat(api, session_id, "are you still there?")
    reply = api.messages(session_id)[-1]
    assert reply.status is MessageStatus.COMPLETE
    assert reply.content.endswith("are you still there?")
    assert second.stop() == 0


def test_a_graceful_stop_mid_stream_saves_the_partial_reply_and_ends_streams(
    servers: Servers, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    first = servers.start(data_dir)
    api = first.client()
    session_id = api.create_session()
    long_text = " ".join(f"word{i}" for i in range(3000))
    with api.events(session_id) as stream:
        api.send(session_id, long_text)
        while not isinstance(stream.next(), TextDelta):
            pass
        started = time.monotonic()
        first.process.send_signal(signal.SIGTERM)
        # The stream shows the turn ending, then closes; it does not hang the shutdown.
        rest = stream.until(is_idle)
        with pytest.raises(StopIteration):
            stream.next()
    assert first.wait() == 0
    assert time.monotonic() - started < 4.0, "shutdown waited for the stream to time out"
    interrupted = [
        e for e in rest if e.type == "message_completed" and e.message.status.value == "interrupted"
    ]
    assert len(interrupted) == 1

    second = servers.start(data_dir)
    _user, partial = second.client().messages(session_id)
    assert partial.status is MessageStatus.INTERRUPTED
    assert partial.content == interrupted[0].message.content
    assert "mid-turn" not in second.log()
    assert second.stop() == 0


# -- (d) one server per data folder -------------------------------------------------------


def test_a_second_server_on_the_same_data_folder_is_refused(
    servers: Servers, tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    first = servers.start(data_dir)
    refused = servers.run(data_dir)
    assert refused.returncode == 2
    assert "in use by another GuiAgent process" in refused.stderr
    assert f"pid {first.process.pid}" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert first.client().get("/api/sessions").status_code == 200
    assert first.stop() == 0


def test_a_damaged_database_or_a_busy_port_is_refused_with_a_clear_message(
    servers: Servers, tmp_path: Path
) -> None:
    damaged = tmp_path / "damaged"
    damaged.mkdir(mode=0o700)
    (damaged / "gui-agent.db").write_bytes(b"this is not a database" * 100)
    refused = servers.run(damaged)
    assert refused.returncode == 2
    assert "not a GuiAgent database or is damaged" in refused.stderr
    assert "Traceback" not in refused.stderr

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = subprocess.run(
            serve_args(tmp_path / "data", port),
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
            env=_env(),
            check=False,
        )
    assert busy.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in busy.stderr and "--port" in busy.stderr
    assert "Traceback" not in busy.stderr


# -- (e) the page --------------------------------------------------------------------------


@pytest.mark.skipif(
    importlib.util.find_spec("backends.gradio") is None, reason="backends.gradio not built yet"
)
def test_the_root_serves_the_gradio_page(servers: Servers, tmp_path: Path) -> None:
    server = servers.start(tmp_path / "data")
    page = httpx.get(server.base_url + "/", timeout=20)
    assert page.status_code == 200
    assert "text/html" in page.headers["content-type"]
    assert "gradio" in page.text.lower()
    assert "server" not in {key.lower() for key in page.headers}
    # The page's own script comes first in its head, before any of Gradio's (early_script.py).
    head = page.text.split("<head>", 1)[1]
    assert head.lstrip().startswith("<script>// Runs in the page's <head>, before Gradio")
    assert int(page.headers["content-length"]) == len(page.content)
    asked = httpx.head(server.base_url + "/", timeout=20)  # the same length, no body
    assert asked.status_code == 200 and asked.content == b""
    assert asked.headers["content-length"] == page.headers["content-length"]
    # Without login, a request addressed to another name is refused (DNS rebinding).
    rebound = httpx.get(server.base_url + "/", headers={"Host": "evil.example"}, timeout=20)
    assert rebound.status_code == 421
    assert server.stop() == 0


# -- the same composition, in process ------------------------------------------------------


def test_build_server_composes_the_api_and_the_page(tmp_path: Path) -> None:
    config = AppConfig(models=("scripted:echo",), data_dir=tmp_path / "data", port=0, token_hours=3)
    server = ServerThread(lambda: build_server(config, probe_local=False)).start()
    api = Api(server.base_url).login()
    try:
        login = api.http.post("/api/login", json={}).json()  # (lasts `token_hours`)
        lasts = datetime.fromisoformat(login["expires_at"]) - datetime.now(UTC)
        assert timedelta(hours=2, minutes=55) < lasts <= timedelta(hours=3)
        assert api.get("/api/models").json()["default"] == "scripted:echo"
        session_id = api.create_session()
        chat(api, session_id, "hello in process")
        assert api.messages(session_id)[-1].content.endswith("hello in process")
        page = api.http.get("/")
        if importlib.util.find_spec("backends.gradio") is not None:
            assert page.status_code == 200 and "text/html" in page.headers["content-type"]
        assert (tmp_path / "data" / "gui-agent.db").exists()
        assert stat.S_IMODE((tmp_path / "data").stat().st_mode) == 0o700
    finally:
        api.close()
        server.stop()


@pytest.mark.parametrize("team", [False, True], ids=["no-login", "users-file"])
def test_no_other_web_site_may_read_an_answer(tmp_path: Path, team: bool) -> None:
    """No CORS, whatever the page's library would allow: under a real host name (team mode)
    Gradio grants any origin, with credentials, and locally any localhost origin; a page on
    such a site could then read a signed-in person's chats and approve tool calls."""
    extra: dict[str, Any] = {}
    host = "127.0.0.1:7860"
    if team:
        users = UserDB(tmp_path / "users.json")
        users.add("alice", "alice-password-1")
        extra = {"auth_file": users.path, "host": "0.0.0.0"}
        host = "chat.example.com"
    config = AppConfig(models=("scripted:echo",), data_dir=tmp_path / "data", port=0, **extra)
    server = ServerThread(lambda: build_server(config, probe_local=False)).start()
    http = httpx.Client(base_url=server.base_url, timeout=20, headers={"Host": host})
    try:
        assert "access-control-allow-origin" not in http.get("/").headers  # no Origin: as ever
        for origin in ("https://evil.example", "http://localhost:3000", "null"):
            for path in ("/", "/gradio_api/info", "/api/health", "/api/sessions"):
                answer = http.get(path, headers={"Origin": origin})
                assert answer.status_code < 500, (path, answer.text)
                granted = {k for k in answer.headers if k.startswith("access-control-")}
                assert not granted, (origin, path, answer.headers)
                preflight = http.options(
                    path,
                    headers={
                        "Origin": origin,
                        "Access-Control-Request-Method": "POST",
                        "Access-Control-Request-Headers": "content-type, authorization",
                    },
                )
                assert preflight.status_code == 403, (origin, path, preflight.text)
                assert "access-control-allow-origin" not in preflight.headers
                assert "other web sites" in preflight.text
        body = {"username": "alice", "password": "alice-password-1"} if team else None
        login = http.post("/api/login", json=body, headers={"Origin": f"http://{host}"})
        assert login.status_code == 200, login.text  # the app's own pages and programs: fine
    finally:
        http.close()
        server.stop()
