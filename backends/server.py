"""The server `gui-agent serve` runs: the HTTP + SSE API and the Gradio page on one app.

`build_server(config)` composes everything and returns the FastAPI app with its cleanup:

1. refuse `--share` (a public tunnel; `SHARE_REFUSED` says what to do instead), a
   non-loopback bind without login, and one whose user comes from a proxy's header (anyone
   reaching the port directly could send it) unless `--insecure-no-auth` says only the
   proxy can reach it (`check_bind_safety`);
2. resolve the models (explicit, environment, local servers, embedded, echo), each logged
   with where it came from (`--model`, the config file, `GUI_AGENT_MODEL`, ...);
3. open the data folder (0700) and the SQLite store in it (one process at a time), mark
   turns a crash left running as interrupted, apply retention (and again every
   `RETENTION_SWEEP_S` while serving, `SessionManager.expire`);
4. load or create the token signing key; set up login (users file or proxy header);
5. the API under /api, the React front end's build at /react/ (`mount_react`), then the
   Gradio page at / (same login, assets folder only); no
   other web site may read an answer from either (`NoCrossOrigin`: no CORS, whatever
   Gradio would allow) or have either do anything (`SameOriginWrites`: a POST, PUT,
   PATCH or DELETE that a browser sends from another origin is refused) or show either
   in a frame (`NotFramed`); only requests addressed to a loopback name, or to a name in
   `allowed_hosts`, are served with a proxy's user header, with a users file when the list
   is set, and (loopback names only) without login (`add_host_guard`: DNS rebinding);
6. with a users file, watch it (`UsersWatcher`): when `gui-agent users remove` takes someone
   out, their page logins end, and their running turns and AutoChat are stopped and their
   sessions closed, which ends their event streams (`_Removals`); when a new password is
   set (`UserDB.add(..., replace=True)`), that person's page logins end (their API tokens
   are refused already: each carries the old password's fingerprint). An API request
   that meets such a change before the watcher's next look has it applied at once.

`serve(config)` binds the port, runs uvicorn until SIGINT/SIGTERM and shuts down in order:
stop accepting, stop watching the users file, stop running turns and end event streams
(partial replies are saved, marked interrupted), let connections finish, close the store.
It returns the exit code: 0 after a clean shutdown, 2 when the configuration or the data
folder is refused (another server holds it, a database from a newer version), with one
clear line and no traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import gc
import importlib
import logging
import os
import signal
import socket
import stat
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI

from backends.api import LoginThrottles, create_api
from backends.api.guards import NoCrossOrigin, NotFramed, SameOriginWrites, add_host_guard
from backends.api.sse import DEFAULT_RECHECK_S
from backends.react_front import REACT_PATH, mount_react
from connectors.llama_local import LOCAL_MODEL_NOTICE
from connectors.registry import ModelRegistry, resolve_models
from gui_agent.agents import Architecture
from gui_agent.auth import (
    REVOKED_FILE_NAME,
    USERS_FILE_NAME,
    USERS_WATCH_S,
    LoginThrottle,
    ProxyHeaderAuth,
    RevokedTokens,
    TokenService,
    UserDB,
    UsersChange,
    UsersWatcher,
    check_bind_safety,
    load_or_create_signing_key,
)
from gui_agent.config import AppConfig, load_config_with_sources
from gui_agent.exceptions import AuthError, ConfigError, GuiAgentError
from gui_agent.export import MAX_IMPORT_BYTES
from gui_agent.log_text import loggable
from gui_agent.manager import SessionManager, with_agent
from gui_agent.store import DB_FILE_NAME, SQLiteStore, default_data_dir
from gui_agent.telemetry import tracing_from_env

__all__ = ["build_server", "serve", "served_url"]

logger = logging.getLogger(__name__)

GRACEFUL_SHUTDOWN_S = 5
"""How long open connections get to finish after a stop signal before they are cut."""
KEEP_ALIVE_S = 5
"""How long an idle connection is kept open for a client's next request (uvicorn's own
default). The API clients let theirs go well before (`client_http.KEEPALIVE_EXPIRY_S`)."""
MAX_UPLOAD = MAX_IMPORT_BYTES
"""The largest file the Gradio page accepts as an upload: every file an import takes."""
_OFFLINE_ENV = {
    "GRADIO_ANALYTICS_ENABLED": "False",
    "HF_HUB_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
}

SHARE_REFUSED = (
    "--share is refused: a Gradio share link sends the page through a public tunnel on "
    "Gradio's servers, which contacts them at startup and lets anyone with the link use the "
    "agent and its tools. To let other people in, configure login and listen on an address "
    "they can reach:\n"
    "  gui-agent users add NAME\n"
    "  gui-agent serve --host 0.0.0.0 --auth-file FILE\n"
    "or put GuiAgent behind your own reverse proxy (--trusted-proxy-header). Remove --share "
    "(or `share` from the config file, GUI_AGENT_SHARE from the environment) to start."
)
"""Why `share` (flag, config file or environment) stops the server from starting."""
EXPLICIT_MODELS = "--model flag"
"""Where explicit models come from when neither the config file nor the environment named
them (the name `gui-agent models` uses)."""

RETENTION_SWEEP_S = 3600.0
"""How often a running server applies retention (`--retention-days`) again, besides at
start: a server that runs for months still deletes what nobody touched for that long."""

REMOVED_REASON = "the user was removed"
"""Why a removed user's running turns and AutoChat stopped (in their events and history)."""

Cleanup = Callable[[], Awaitable[None]]


async def build_server(
    config: AppConfig,
    *,
    probe_local: bool = True,
    with_api: bool = True,
    models_source: str | None = None,
    retention_sweep_s: float = RETENTION_SWEEP_S,
    users_watch_s: float = USERS_WATCH_S,
    auth_recheck_s: float = DEFAULT_RECHECK_S,
    agent: Architecture | None = None,
) -> tuple[FastAPI, Cleanup]:
    """The app for `config` and the coroutine function that closes what it opened.

    Raises ConfigError (unsafe bind, bad users file, unknown model), StoreLocked (another
    server uses the data folder), StoreVersionError (a newer or damaged database) or
    AuthError (an unsafe signing key file) before anything is served; ConfigError too for
    `share`, which is refused (`SHARE_REFUSED`). `with_api` only decides whether the OpenAPI
    docs are served: the API itself is always there. `models_source` says where
    `config.models` came from (as `gui-agent models` says it); by default it is worked out
    from the environment (`_models_source`). With `config.retention_days`, retention is
    applied at start and then every `retention_sweep_s` seconds while the server runs.
    With a users file, it is looked at every `users_watch_s` seconds; an open event stream
    checks its caller every `auth_recheck_s` seconds. `agent` (your own, `--agent`) is
    offered beside the built-in roles, and new chats start in it.
    """
    if config.share:
        raise ConfigError(SHARE_REFUSED)
    users, proxy = await _login(config)
    check_bind_safety(
        config.host,
        login_configured=users is not None or proxy is not None,
        insecure_no_auth=config.insecure_no_auth,
        proxy_header=proxy.header if proxy is not None else None,
        users_file=(config.data_dir or default_data_dir()) / USERS_FILE_NAME,
    )
    registry = await resolve_models(
        explicit=config.models,
        explicit_source=models_source or _models_source(config, os.environ),
        probe_local=probe_local,
    )
    data_dir = await asyncio.to_thread(_private_dir, config.data_dir or default_data_dir())
    workspace_root = config.workspace_root or data_dir / "workspaces"
    await asyncio.to_thread(_private_dir, workspace_root)
    manager = SessionManager(
        models=registry,
        store=SQLiteStore(data_dir / DB_FILE_NAME),
        workspace_root=workspace_root,
        counter_factory=registry.token_counter,
        hooks=tracing_from_env(os.environ),
        **with_agent(agent),
    )
    await manager.start()
    closing = asyncio.Event()  # set first on shutdown: the page's open tabs let go at once
    shutdown = _Shutdown(manager, closing)
    try:
        if manager.interrupted_at_start:
            logger.warning(
                "%d session(s) were mid-turn when the server last stopped; their turns are "
                "marked interrupted",
                len(manager.interrupted_at_start),
            )
        await manager.expire(days=config.retention_days)  # with their working folders
        if config.retention_days is not None:
            shutdown.retention = asyncio.create_task(
                _keep_retention(manager, config.retention_days, retention_sweep_s),
                name="retention",
            )
        secret = await asyncio.to_thread(load_or_create_signing_key, data_dir)
        revoked = await asyncio.to_thread(RevokedTokens.load, data_dir / REVOKED_FILE_NAME)
        notice = _notice(registry)
        throttles = LoginThrottles()
        removals = _Removals(manager, None)
        watcher = (
            UsersWatcher(users, on_change=removals.apply, interval_s=users_watch_s)
            if users is not None and proxy is None
            else None
        )
        app = create_api(
            manager,
            TokenService(secret, ttl_s=config.token_hours * 3600),
            users=users,
            proxy=proxy,
            notice=notice,
            left_out=registry.left_out,
            docs=with_api,
            throttles=throttles,
            closing=closing,
            auth_recheck_s=auth_recheck_s,
            users_changed=watcher.check if watcher is not None else None,
            revoked=revoked,
        )
        mount_react(app)  # at /react/, before the page takes every other path
        page = _mount_page(
            app,
            manager,
            registry,
            config,
            users=users,
            proxy=proxy,
            notice=notice,
            throttle=throttles.by_user,
            closing=closing,
        )
        # The guards' middleware is added after the page's own (`EarlyScript`): outside it.
        add_host_guard(  # only names that are this machine's or listed (DNS rebinding)
            app,
            proxy_header=proxy.header if proxy is not None else None,
            users_file=users is not None,
            insecure_no_auth=config.insecure_no_auth,
            allowed=config.allowed_hosts,
        )
        app.add_middleware(SameOriginWrites)  # no other web site makes it do anything
        app.add_middleware(NoCrossOrigin)  # no other web site reads an answer
        app.add_middleware(NotFramed)  # outermost: nor shows one in a frame (refusals too)
        if watcher is not None:
            removals.page = page
            shutdown.watcher = watcher
            await _start_watching(watcher)
    except BaseException:
        await shutdown.run()
        raise
    logger.info("data folder %s (login: %s)", data_dir, _login_mode(users, proxy))
    return app, shutdown.run


class _Shutdown:
    """What closes a built server: the page's tabs and the API's chats-list streams are
    told first, the users file is no longer watched, then the sessions close."""

    def __init__(self, manager: SessionManager, closing: asyncio.Event) -> None:
        self.manager = manager
        self.closing = closing
        self.watcher: UsersWatcher | None = None
        self.retention: asyncio.Task[None] | None = None

    async def run(self) -> None:
        self.closing.set()
        retention, self.retention = self.retention, None
        if retention is not None:
            retention.cancel()
            await asyncio.wait({retention})
        if self.watcher is not None:
            await self.watcher.close()
        await self.manager.close()


async def _keep_retention(manager: SessionManager, days: int, every_s: float) -> None:
    """Apply retention every `every_s` seconds until cancelled; a failed sweep is logged
    and the next one runs as planned."""
    while True:
        await asyncio.sleep(every_s)
        try:
            await manager.expire(days=days)
        except GuiAgentError as exc:
            logger.error("retention: the sweep failed: %s", loggable(exc))


class _Removals:
    """What the server does when the users file changes (`UsersWatcher.on_change`).

    Someone removed: their page logins end first (the page's next request from them asks
    them to sign in), then `SessionManager.revoke` stops their running turns and AutoChat
    (the partial replies are saved, marked interrupted), closes their sessions, which ends
    their API event streams and page streams, and refuses them from then on. Their API
    tokens are refused already: every API request reads the users file. Someone added back
    is served again (after signing in anew). Someone given a new password has their page
    logins ended (their work goes on; they sign in again with the new password)."""

    def __init__(self, manager: SessionManager, page: Any | None) -> None:
        self.manager = manager
        self.page = page
        """The Gradio app mounted at / (its `tokens` map page cookies to users), if any."""

    async def apply(self, change: UsersChange) -> None:
        for name in sorted(change.added):
            self.manager.readmit(name)
            logger.info("%s is in the users file again: served after signing in", loggable(name))
        for name in sorted(change.password_changed):
            signed_out = _sign_out(self.page, name)
            logger.info("%s has a new password: %d page login(s) ended", loggable(name), signed_out)
        for name in sorted(change.removed):
            signed_out = _sign_out(self.page, name)
            stopped = await self.manager.revoke(name, reason=REMOVED_REASON)
            logger.info(
                "%s was removed from the users file: %d page login(s) ended, %d open "
                "session(s) stopped",
                loggable(name),
                signed_out,
                stopped,
            )


def _sign_out(page: Any | None, name: str) -> int:
    """End every page login of `name` (Gradio keeps them in its app's `tokens`)."""
    tokens = getattr(page, "tokens", None)
    if not isinstance(tokens, dict):
        return 0
    theirs = [token for token, user in tokens.items() if user == name]
    for token in theirs:
        del tokens[token]
    return len(theirs)


async def _start_watching(watcher: UsersWatcher) -> None:
    try:
        await watcher.start()
    except AuthError as exc:
        raise ConfigError(str(exc)) from None


def serve(
    config: AppConfig,
    *,
    probe_local: bool = True,
    with_api: bool = True,
    models_source: str | None = None,
    agent: Architecture | None = None,
) -> int:
    """Run the server until SIGINT or SIGTERM; the process exit code (0 clean, 2 refused).
    `models_source` and `agent` as for `build_server`."""
    for name, value in _OFFLINE_ENV.items():
        os.environ.setdefault(name, value)
    try:
        asyncio.run(
            _serve(
                config,
                probe_local=probe_local,
                with_api=with_api,
                models_source=models_source,
                agent=agent,
            )
        )
    except GuiAgentError as exc:
        logger.error("%s", exc)
        return 2
    except KeyboardInterrupt:  # Ctrl-C while starting, before the signal handlers are in
        logger.info("interrupted while starting")
        return 130
    return 0


async def _serve(
    config: AppConfig,
    *,
    probe_local: bool,
    with_api: bool,
    models_source: str | None,
    agent: Architecture | None,
) -> None:
    app, cleanup = await build_server(
        config,
        probe_local=probe_local,
        with_api=with_api,
        models_source=models_source,
        agent=agent,
    )
    # Everything built so far lives as long as the server: keep the collector off it, which
    # removes most garbage-collection pauses from streaming (p99 gap 165 -> 62 ms, 50 tabs).
    gc.collect()
    gc.freeze()
    try:
        listener = _bind(config.host, config.port)
    except BaseException:
        await cleanup()
        raise
    server = _Server(
        uvicorn.Config(
            app,
            log_config=None,
            log_level=config.log_level.lower(),
            access_log=config.log_level == "DEBUG",
            server_header=False,
            root_path=config.root_path,
            timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
            timeout_keep_alive=KEEP_ALIVE_S,
            lifespan="on",
        ),
        before_drain=cleanup,
        public_path=config.root_path,
    )
    handled = _handle_signals(server)
    try:
        await server.serve(sockets=[listener])
    finally:
        for sig in handled:
            asyncio.get_running_loop().remove_signal_handler(sig)
        listener.close()
        await cleanup()
    logger.info("GuiAgent stopped")


class _Server(uvicorn.Server):
    """uvicorn with the shutdown order GuiAgent needs and signals left to `_serve`."""

    def __init__(self, config: uvicorn.Config, *, before_drain: Cleanup, public_path: str) -> None:
        super().__init__(config)
        self._before_drain = before_drain
        self._public_path = public_path

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # uvicorn would re-raise the signal after shutting down, killing the process with
        # it; `_serve` installs loop handlers instead, so a signal ends in a clean return.
        yield

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            for listener in sockets or ():
                logger.info("GuiAgent is running at %s", served_url(listener, self._public_path))

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for listening in self.servers:  # no new connections while runs are being stopped
            listening.close()
        # Stopping every session ends its event streams (SSE and the page's), so open
        # connections can finish instead of waiting out the graceful timeout.
        await self._before_drain()
        await super().shutdown(sockets)


def _handle_signals(server: uvicorn.Server) -> list[signal.Signals]:
    loop = asyncio.get_running_loop()
    handled = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, server.handle_exit, int(sig), None)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread
            continue
        handled.append(sig)
    return handled


async def _login(config: AppConfig) -> tuple[UserDB | None, ProxyHeaderAuth | None]:
    proxy = None
    if config.trusted_proxy_header:
        proxy = ProxyHeaderAuth(trusted=True, header=config.trusted_proxy_header)
    if config.auth_file is None:
        return None, proxy
    users = UserDB(config.auth_file)
    try:
        names = await asyncio.to_thread(users.names)
    except AuthError as exc:
        raise ConfigError(str(exc)) from None
    if not names:
        raise ConfigError(
            f"the users file {config.auth_file} has no users; add one with:\n"
            f"  gui-agent users add NAME --auth-file {config.auth_file}"
        )
    return users, proxy


def _models_source(config: AppConfig, env: Mapping[str, str]) -> str:
    """Where `config.models` came from when the caller did not say: the config file named by
    `GUI_AGENT_CONFIG` or the `GUI_AGENT_MODEL` variable when they name exactly these models
    (as `load_config_with_sources` reports it), else the `--model` flag."""
    try:
        configured, sources = load_config_with_sources(None, env)
    except ConfigError:  # the caller read its configuration another way (`--config FILE`)
        return EXPLICIT_MODELS
    if config.models and configured.models == config.models and "models" in sources:
        return sources["models"]
    return EXPLICIT_MODELS


def _login_mode(users: UserDB | None, proxy: ProxyHeaderAuth | None) -> str:
    if proxy is not None:
        return f"user from the {proxy.header} header"
    if users is not None:
        return f"users file {users.path}"
    return "none, everyone is 'local'"


def _notice(registry: ModelRegistry) -> str | None:
    """What the page says up front: that the default model is the tiny offline one."""
    return LOCAL_MODEL_NOTICE if registry.spec(registry.default).kind == "local" else None


def _mount_page(
    app: FastAPI,
    manager: SessionManager,
    registry: ModelRegistry,
    config: AppConfig,
    *,
    users: UserDB | None,
    proxy: ProxyHeaderAuth | None,
    notice: str | None,
    throttle: LoginThrottle,
    closing: asyncio.Event,
) -> Any | None:
    """Mount the Gradio chat page at / with the same login (and failed-login counts, per
    user name) as the API. Returns the mounted Gradio app (None without Gradio)."""
    try:
        page = importlib.import_module("backends.gradio")
        assets = importlib.import_module("backends.gradio.assets")
        cache = importlib.import_module("backends.gradio.asset_cache")
        early = importlib.import_module("backends.gradio.early_script")
        pausing = importlib.import_module("backends.gradio.login_pause")
        shelves = importlib.import_module("backends.gradio.media")
    except ModuleNotFoundError as exc:
        if exc.name not in (
            "backends.gradio",
            "backends.gradio.assets",
            "backends.gradio.asset_cache",
            "backends.gradio.early_script",
            "backends.gradio.login_pause",
            "backends.gradio.media",
            "gradio",
        ):
            raise
        logger.warning("the Gradio page is not available (%s); serving the HTTP API only", exc)
        return None
    import gradio as gr

    media = shelves.MediaShelf()  # the chats' images, by address (not inline in every update)
    blocks = page.create_app(
        manager,
        models=registry.describe(),
        notice=notice,
        closing=closing,
        media=media,
        left_out=registry.left_out,  # (the log says it too: the page's people see this)
    )
    shelves.add_media_route(app, media)
    login: dict[str, Any] = {}
    if proxy is not None:
        login["auth_dependency"] = _proxy_dependency(proxy)
    elif users is not None:
        login["auth"] = _password_check(users, throttle)
        login["auth_message"] = _login_note(throttle)
    gr.mount_gradio_app(
        app,
        blocks,
        path="/",
        server_name=config.host,
        server_port=config.port,
        root_path=config.root_path or None,
        allowed_paths=[str(assets.ASSETS_DIR)],
        max_file_size=MAX_UPLOAD,
        # No "Use via API" link: every page event is private; the API is /api (README).
        footer_links=["gradio", "settings"],
        **login,
    )
    # (before Gradio's scripts: an idle page draws no frames; not in the React front end)
    early.add_early_script(app, skip=(REACT_PATH,))
    if users is not None and proxy is None:  # (a paused name's login says so: not Gradio's
        pausing.add_login_pause(app, throttle)  # "Incorrect credentials")
    cache.add_asset_cache(app)  # (Gradio's build files, read and compressed once)
    return shelves.mounted_page(app)


def _login_note(throttle: LoginThrottle) -> str:
    """What the login form says under its title: the throttle, explained up front (a paused
    name's login says so too: login_pause.py)."""
    pause = throttle.max_delay_s
    longest = f"{pause / 60:g} minutes" if pause >= 60 else f"{pause:g} seconds"
    return (
        f"Sign in to GuiAgent. After {throttle.free_attempts} wrong passwords for a name, "
        f"signing in with it pauses, a little longer each time (at most {longest})."
    )


def _password_check(
    users: UserDB, throttle: LoginThrottle
) -> Callable[[str, str], Coroutine[Any, Any, bool]]:
    """Gradio's login check (awaited on the event loop). Gradio passes no request, so only
    the user name is throttled here. A paused name's login is answered before it comes
    here, saying so (login_pause.py); one paused in between is refused here too."""

    async def check(username: str, password: str) -> bool:
        wait = throttle.retry_after(username)
        if wait > 0:
            logger.warning(
                "page login for %r refused for %.0f s more: too many failures", username, wait
            )
            return False
        # Counted as failed before the check (no await in between): guesses sent at once
        # are throttled like guesses in a row. A success clears the count.
        throttle.failed(username)
        try:
            ok = await users.verify_async(username, password)
        except AuthError as exc:  # an unreadable users file refuses everyone, loudly
            logger.error("login refused: %s", exc)
            return False
        if ok:
            throttle.succeeded(username)
        return ok

    return check


def _proxy_dependency(proxy: ProxyHeaderAuth) -> Callable[[Any], str | None]:
    def user(request: Any) -> str | None:
        try:
            return proxy.user_from(request.headers)
        except AuthError as exc:
            logger.warning("page request refused: %s", exc)
            return None

    return user


def _private_dir(path: Path) -> Path:
    """`path`, created with mode 0700 if missing; a warning if others can read it."""
    path = Path(path).expanduser()
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError as exc:
        raise ConfigError(
            f"cannot use the folder {path}: {exc.strerror or exc}; choose another with --data-dir"
        ) from None
    if mode & 0o077:
        logger.warning(
            "%s can be read by other users (mode %04o); restrict it with: chmod 700 %s",
            path,
            mode,
            path,
        )
    return path.resolve()


def _bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (IPv6 when the host has a colon, as uvicorn does), or
    ConfigError saying what to change."""
    name = host.strip("[]")
    family = socket.AF_INET6 if ":" in name else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((name, port))
    except OSError as exc:
        listener.close()
        raise ConfigError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}; {_bind_advice(exc)}"
        ) from None
    return listener


def _bind_advice(exc: OSError) -> str:
    """What to change when a bind failed: the host for a name that does not resolve or an
    address this machine lacks, else the port (blamed for a bad host name, it sent people
    to look for a program that was not there)."""
    if isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL:
        return "this machine has no such address: check --host (127.0.0.1, or 0.0.0.0 for all)"
    if exc.errno == errno.EACCES:
        return "ports below 1024 need more rights: choose another with --port"
    return "stop whatever uses that port or choose another with --port"


def served_url(listener: socket.socket, path: str) -> str:
    """Where the app answers, as a browser would be given it. On every address (0.0.0.0,
    ::) that is this machine's name, which colleagues can type; 0.0.0.0 they cannot."""
    host, port = listener.getsockname()[:2]
    if host in ("0.0.0.0", "::"):
        return f"http://{socket.gethostname()}:{port}{path}/ (every address of this machine)"
    if listener.family == socket.AF_INET6:
        host = f"[{host}]"
    return f"http://{host}:{port}{path}/"
