"""`gui-agent`: serve the browser app (default), chat in the terminal, list models, manage users.

This module is the composition root: it reads configuration, resolves the models and wires
them into the core and the chosen front end. Nothing else reaches across layers.
"""

from __future__ import annotations

import argparse
import asyncio
import codecs
import contextlib
import enum
import errno
import getpass
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gui_agent.config import LOG_LEVELS, AppConfig, load_config_with_sources
from gui_agent.exceptions import ConfigError, GuiAgentError, InvalidRequest
from gui_agent.log_text import TracebackFormatter, loggable_traceback, shows_tracebacks_whole

if TYPE_CHECKING:
    from gui_agent.agents import Architecture
    from gui_agent.auth.users import UserDB

logger = logging.getLogger("gui_agent")


def log_level(text: str) -> str:
    """`--log-level`: one of LOG_LEVELS, any case (argparse reports anything else)."""
    level = text.strip().upper()
    if level not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"expected one of {', '.join(LOG_LEVELS)}, got {text!r}")
    return level


def existing_folder(text: str) -> Path:
    """`--workdir`: a folder that exists (argparse reports anything else)."""
    path = Path(text).expanduser()
    if not path.is_dir():
        problem = "is not a folder" if path.exists() else "does not exist"
        raise argparse.ArgumentTypeError(f"{text} {problem}")
    return path.resolve()


LOG_LEVEL_HELP = (
    "DEBUG, INFO, WARNING, ERROR or CRITICAL (default INFO; for chat WARNING, so that log "
    "lines do not land among the replies; log_level in the config file or "
    "GUI_AGENT_LOG_LEVEL counts first)"
)
"""The same words before and after the command: `chat --help` shows only the latter, and
"as above" said there that chat logs at INFO, which it does not."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gui-agent",
        description="A browser chat application for LLM agents. With no command: serve.",
    )
    parser.add_argument("--config", type=Path, help="a TOML configuration file")
    parser.add_argument("--log-level", type=log_level, default=None, help=LOG_LEVEL_HELP)
    # The same two after the command (`gui-agent serve --config FILE`), where people type
    # them; SUPPRESS leaves the value given before the command when not given again.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--config", type=Path, default=argparse.SUPPRESS, help="a TOML configuration file"
    )
    common.add_argument(
        "--log-level", type=log_level, default=argparse.SUPPRESS, help=LOG_LEVEL_HELP
    )
    sub = parser.add_subparsers(dest="command")

    def model_args(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--model",
            action="append",
            help="openai:NAME, anthropic:NAME, openai-compatible:URL#NAME, local:smollm2 or "
            "scripted:echo; repeat to offer several (the first is the default)",
        )
        p.add_argument(
            "--no-probe", action="store_true", help="do not look for a local model server"
        )
        p.add_argument(
            "--agent",
            metavar="SPEC",
            help="your own agent, offered as the role Other and picked for new chats: "
            "MODULE:NAME or FILE.py:NAME (an agent role, an object with chat_core(), or a "
            "callable that streams chunks); its code runs with this process's rights",
        )

    serve = sub.add_parser("serve", help="serve the chat page (the default)", parents=[common])
    model_args(serve)
    serve.add_argument("--host", help="address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default 7860)")
    serve.add_argument("--root-path", help="URL prefix when behind a reverse proxy")
    serve.add_argument("--data-dir", type=Path, help="where sessions are stored")
    serve.add_argument("--auth-file", type=Path, help="users file (see `gui-agent users add`)")
    serve.add_argument(
        "--insecure-no-auth",
        action="store_true",
        help=(
            "allow a non-loopback bind without login (everyone shares one identity), or with "
            "--trusted-proxy-header when only the proxy can reach the port"
        ),
    )
    serve.add_argument(
        "--trusted-proxy-header",
        help=(
            "take the user from this header (on a non-loopback host this also needs "
            "--insecure-no-auth: anyone reaching the port could send it)"
        ),
    )
    serve.add_argument(
        "--allowed-hosts",
        metavar="NAMES",
        help=(
            "comma-separated host names (or *.example.com) to answer besides localhost, as "
            "GUI_AGENT_ALLOWED_HOSTS; with --trusted-proxy-header, list the name the proxy "
            "passes on (the browser's); ignored without login"
        ),
    )
    serve.add_argument("--retention-days", type=int, help="delete sessions untouched this long")
    serve.add_argument(
        "--token-hours",
        type=int,
        metavar="N",
        help="how long an API login (its token) lasts, 1 to 720 hours (default 12)",
    )
    serve.add_argument(
        "--share",
        action="store_true",
        help="refused: a Gradio share link is a public tunnel; use --host with --auth-file",
    )
    serve.add_argument(
        "--api", action="store_true", help="also serve the API's OpenAPI docs at /api/docs"
    )

    chat = sub.add_parser("chat", help="chat in the terminal", parents=[common])
    model_args(chat)
    chat.add_argument(
        "--workdir",
        type=existing_folder,
        help="an existing folder the agent's tools work in (default: a new folder per chat)",
    )
    chat.add_argument("--auto", action="store_true", help="switch AutoChat on")

    front = sub.add_parser(
        "streamlit",
        help="run the Streamlit front end against a running server",
        parents=[common],
    )
    front.add_argument(
        "--url",
        default=os.environ.get("GUI_AGENT_URL", "http://127.0.0.1:7860"),
        help="the GuiAgent server (default: GUI_AGENT_URL, else http://127.0.0.1:7860)",
    )
    front.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    front.add_argument("--port", type=int, default=8501, help="port (default 8501)")
    front.add_argument(
        "--insecure-no-auth",
        action="store_true",
        help="allow a non-loopback bind when the server has no login",
    )

    models = sub.add_parser(
        "models", help="show the configured models and the default", parents=[common]
    )
    model_args(models)

    users = sub.add_parser("users", help="manage login users")
    users_sub = users.add_subparsers(dest="users_command", required=True)
    add = users_sub.add_parser("add", help="add a user (with --replace: set a new password)")
    add.add_argument("name")
    add.add_argument("--auth-file", type=Path, help="users file (default: DATA_DIR/users.json)")
    add.add_argument("--data-dir", type=Path)
    add.add_argument(
        "--password-stdin", action="store_true", help="read the password from standard input"
    )
    add.add_argument(
        "--replace",
        action="store_true",
        help="set a new password for an existing user (ends their current logins)",
    )
    rm = users_sub.add_parser("remove", help="remove a user")
    rm.add_argument("name")
    rm.add_argument("--auth-file", type=Path)
    rm.add_argument("--data-dir", type=Path)
    listed = users_sub.add_parser("list", help="list the users' names, one per line")
    listed.add_argument("--auth-file", type=Path)
    listed.add_argument("--data-dir", type=Path)
    return parser


COMMANDS = ("serve", "chat", "models", "users", "streamlit")
GLOBAL_OPTIONS = ("--config", "--log-level")


def with_default_command(argv: Sequence[str]) -> list[str]:
    """Insert `serve` when no command is named: `gui-agent --host X` means `serve --host X`.
    A global option left without its value (`gui-agent --config`) is left for argparse to
    report, not given `serve` as its value."""
    args = list(argv)
    index = 0
    while index < len(args):
        arg = args[index]
        if arg in COMMANDS or arg in ("-h", "--help"):
            return args
        if arg in GLOBAL_OPTIONS:
            if index + 1 == len(args):
                return args
            index += 2
        elif arg.split("=", 1)[0] in GLOBAL_OPTIONS:
            index += 1
        else:
            break
    return [*args[:index], "serve", *args[index:]]


def main(argv: Sequence[str] | None = None) -> int:
    """The `gui-agent` command; the process exit code."""
    try:
        code = _main(argv)
        sys.stdout.flush()  # a reader that left shows here, not as a message at exit
    except BrokenPipeError:  # `gui-agent chat | head`: whoever read the output has gone
        detach_output()
        return 128 + signal.SIGPIPE
    except OSError as exc:  # the output cannot be written: a full disk, /dev/full
        if exc.errno not in _NO_ROOM:
            raise
        with contextlib.suppress(OSError):
            sys.stderr.write(f"gui-agent: cannot write the output: {exc.strerror}\n")
            sys.stderr.flush()
        detach_output()  # (else the flush at exit fails again, with a traceback)
        return 1
    return code


def _plugged_agent(spec: str | None) -> Architecture | None:
    """The agent `--agent` names (ConfigError when it cannot be loaded), or None."""
    if spec is None:
        return None
    from connectors.agent_loading import load_agent

    agent = load_agent(spec)
    logger.info("your agent %s is offered as the role %s", spec, agent.name.value)
    return agent


LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def _log_handler(level: str) -> logging.Handler:
    """Where the log goes: standard error, a traceback written whole at DEBUG or when
    standard error is no terminal (`--log-level DEBUG`, `2>file`), else on its record's
    line (`log_text.shows_tracebacks_whole`; the chat says only its last line there)."""
    handler = logging.StreamHandler()
    whole = shows_tracebacks_whole(sys.stderr, debug=level == "DEBUG")
    handler.setFormatter(TracebackFormatter(LOG_FORMAT, whole=whole))
    return handler


_NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
"""Errors of an output with no room left (a traceback said only that)."""


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(with_default_command(sys.argv[1:] if argv is None else argv))
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    try:
        config, sources = load_config_with_sources(args.config, os.environ)
        level = args.log_level or config.log_level
        if args.command == "chat" and not args.log_level and "log_level" not in sources:
            level = "WARNING"  # INFO lines would land in the middle of the replies
        logging.basicConfig(level=level.upper(), handlers=[_log_handler(level.upper())])
        # the state machine library narrates every callback at INFO; our own
        # state_changed events already say what happened
        logging.getLogger("transitions").setLevel(logging.WARNING)
        command = args.command
        if command == "serve":
            config = config.with_overrides(
                host=args.host,
                port=args.port,
                root_path=args.root_path,
                models=tuple(args.model) if args.model else None,
                data_dir=args.data_dir,
                auth_file=args.auth_file,
                insecure_no_auth=args.insecure_no_auth or None,
                trusted_proxy_header=args.trusted_proxy_header,
                allowed_hosts=args.allowed_hosts,
                retention_days=args.retention_days,
                token_hours=args.token_hours,
                share=args.share or None,
            )
            from backends.server import serve
            from gui_agent.tools._sandbox import protect_process

            agent = _plugged_agent(args.agent)
            protect_process()  # code that run_python runs cannot read this process's /proc
            return serve(
                config,
                probe_local=not args.no_probe,
                with_api=args.api,
                models_source=_explicit_models(args, config, sources)[1],
                agent=agent,
            )
        if command == "streamlit":
            from backends.streamlit.launch import LaunchRefused, run_streamlit

            try:
                return run_streamlit(
                    args.url, args.host, args.port, insecure_no_auth=args.insecure_no_auth
                )
            except LaunchRefused as refused:
                logger.error("%s", refused)
                return 2
        if command == "chat":
            from gui_agent.repl import run_repl
            from gui_agent.tools._sandbox import protect_process

            agent = _plugged_agent(args.agent)
            protect_process()

            models, source = _explicit_models(args, config, sources)
            return asyncio.run(
                run_repl(
                    models,
                    source=source,
                    probe=not args.no_probe,
                    workdir=args.workdir,
                    auto=args.auto,
                    agent=agent,
                )
            )
        if command == "models":
            return asyncio.run(_show_models(args, config, sources))
        if command == "users":
            return _users(args, config)
    except GuiAgentError as exc:
        logger.debug("command failed: %s", loggable_traceback(exc))
        sys.stderr.write(printable(f"gui-agent: {exc}\n"))  # (it may quote a server, a file)
        return 2
    except KeyboardInterrupt:  # Ctrl-C before the chat's own handler, or at a password
        sys.stderr.write("\n")
        return 130
    return 0


def _explicit_models(
    args: argparse.Namespace, config: AppConfig, sources: dict[str, str]
) -> tuple[tuple[str, ...], str]:
    """The models named on purpose and where: `--model`, else the config file or variable."""
    if args.model:
        return tuple(args.model), "--model flag"
    return config.models, sources.get("models", "--model flag")


async def _show_models(args: argparse.Namespace, config: AppConfig, sources: dict[str, str]) -> int:
    from connectors.registry import resolve_models

    models, source = _explicit_models(args, config, sources)
    registry = await resolve_models(
        explicit=models, explicit_source=source, probe_local=not args.no_probe, announce=False
    )
    for info in registry.describe():
        mark = "*" if info.is_default else " "
        # the note says where from; a probed server names its models itself: shown, not obeyed
        sys.stdout.write(printable(f"{mark} {info.name}\n    {info.note}\n"))
    for why in registry.left_out:  # a key configures it, but its base URL cannot work
        sys.stdout.write(printable(f"! {why}\n"))
    sys.stdout.write(printable(f"\ndefault: {registry.default}\n"))
    return 0


def _users(args: argparse.Namespace, config: AppConfig) -> int:
    from gui_agent.auth.users import UserDB
    from gui_agent.store import default_data_dir

    data_dir = args.data_dir or config.data_dir or default_data_dir()
    path = args.auth_file or config.auth_file or (Path(data_dir) / "users.json")
    db = UserDB(path)
    try:
        if args.users_command == "list":
            return _list_users(db, path)
        if args.users_command == "remove":
            if not db.remove(args.name):
                raise InvalidRequest(f"there is no user {args.name!r} in {path}")
            sys.stdout.write(f"removed {args.name} from {path}\n")
            return 0
        password = _new_password(args)
        db.add(args.name, password, replace=args.replace)
    except OSError as exc:
        raise ConfigError(f"cannot use the users file {path}: {exc.strerror or exc}") from exc
    sys.stdout.write(f"saved {args.name} in {path}; serve with --auth-file {path}\n")
    return 0


def _list_users(db: UserDB, path: Path) -> int:
    """The names in the users file, sorted, one per line (nothing else on stdout, for
    scripts); how many, or that there are none, on stderr. A file that is missing is an
    error: the path is likely wrong."""
    from gui_agent.wording import counted  # (it loads the schema: not for every command)

    if not path.exists():
        raise InvalidRequest(
            f"there is no users file at {path}; add a user with `gui-agent users add NAME`"
        )
    names = db.names(missing_ok=False)
    sys.stdout.writelines(f"{name}\n" for name in names)
    sys.stderr.write(f"{counted(len(names), 'user')} in {path}\n")
    return 0


def _new_password(args: argparse.Namespace) -> str:
    """The password from standard input, or asked twice on a terminal."""
    if args.password_stdin or not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\n")
    try:
        password = getpass.getpass(f"password for {args.name}: ")
        again = getpass.getpass("again: ")
    except EOFError:  # Ctrl-D at the question
        raise InvalidRequest("no password given; nothing was saved") from None
    if again != password:
        raise InvalidRequest("the passwords differ")
    return password


class ReadEnd(enum.Enum):
    """Why `LineReader.readline` returned no line."""

    EOF = "end of input"
    INTERRUPT = "Ctrl-C"


class LineReader:
    """Reads stdin lines on a daemon thread so Ctrl-C and exit never wait for Enter.

    Lines are decoded with the terminal's encoding; bytes that do not decode become U+FFFD
    instead of ending the reader. From a pipe or file, end of input is final: once a
    `readline` has returned EOF, every later one does too, so a question that consumed the
    end (an approval) does not leave the next one waiting. On a terminal, Ctrl-D ends only
    the read it answers; the next prompt reads the terminal again.

    The thread reads a descriptor of its own (a copy of standard input's, closed when it
    stops): standard input closed by its owner meanwhile, its number taken by a file opened
    next, the thread would have read that file's bytes (a model's weights, a socket's).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._queue: asyncio.Queue[str | ReadEnd] = asyncio.Queue()
        self._loop = loop
        self._ended = False
        try:
            self._fd: int | None = os.dup(sys.stdin.fileno())
        except (AttributeError, ValueError, OSError):  # no stdin at all (started with <&-)
            self._fd = None
        self._terminal = self._fd is not None and os.isatty(self._fd)
        self._encoding = getattr(sys.stdin, "encoding", None) or "utf-8"
        self._kept: str | None = None  # a line given back (`keep`): the next one read
        threading.Thread(target=self._reading, daemon=True, name="stdin").start()

    def _reading(self) -> None:
        """The thread: `_pump` until it stops, then close the descriptor it read."""
        try:
            self._pump()
        finally:
            if self._fd is not None:
                os.close(self._fd)

    def _pump(self) -> None:
        # os.read on the descriptor, not sys.stdin: a thread blocked inside sys.stdin holds its
        # buffer's lock, and Python aborts at exit when it cannot take that lock
        decoder = codecs.getincrementaldecoder(self._encoding)(errors="replace")
        pending = ""
        while True:
            chunk = self._read_chunk(65536)
            pending += decoder.decode(chunk, final=not chunk)
            *lines, pending = pending.split("\n")
            if not chunk and pending:  # a last line without a newline
                lines.append(pending)
                pending = ""
            for line in lines:
                if not self._put(line.removesuffix("\r")):
                    return
            if not chunk and (not self._put(ReadEnd.EOF) or not self._terminal):
                return

    def _read_chunk(self, size: int) -> bytes:
        """The next bytes of standard input: b"" at its end, or once the terminal went away."""
        try:
            return os.read(self._fd, size) if self._fd is not None else b""
        except OSError as exc:
            logger.debug("standard input failed: %s", exc)
            self._terminal = False
            return b""

    def _put(self, item: str | ReadEnd) -> bool:
        """Hand `item` to the loop; False once the loop is closed (the chat is over)."""
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)
        except RuntimeError:
            return False
        return True

    def interrupt(self) -> None:
        """Answer the pending (or next) `readline` with ReadEnd.INTERRUPT."""
        self._queue.put_nowait(ReadEnd.INTERRUPT)

    @property
    def terminal(self) -> bool:
        """Whether a person types the lines (a terminal), rather than a pipe or a file."""
        return self._terminal

    def keep(self, line: str) -> None:
        """Give `line`, just read, back: the next `readline` returns it again."""
        self._kept = line

    async def readline(self, prompt: str) -> str | ReadEnd:
        """The next line without its newline, or why there is none. Cancelling the wait
        loses no line: the next call gets it."""
        write_out(prompt)
        if self._kept is not None:
            kept, self._kept = self._kept, None
            return kept
        if self._ended:
            return ReadEnd.EOF
        line = await self._queue.get()
        self._ended = line is ReadEnd.EOF and not self._terminal
        return line


# Control characters the terminal would obey instead of showing: C0 but newline and tab,
# DEL and C1. Carriage returns are dropped (a CR of a CRLF can end one streamed piece), the
# others shown as their Unicode control pictures (ESC as ␛) or, for C1, as U+FFFD.
_CONTROLS: dict[int, str | None] = {
    **{code: chr(0x2400 + code) for code in range(0x20) if chr(code) not in "\n\t"},
    ord("\r"): None,
    0x7F: "\u2421",
    **{code: "\ufffd" for code in range(0x80, 0xA0)},
}


def printable(text: str) -> str:
    """`text` with every terminal control character made harmless and visible, so what a
    model, a tool or a file says cannot move the cursor, erase a line, hide text (the code
    an approval shows) or send commands to the terminal."""
    return text.translate(_CONTROLS)


def write_out(text: str) -> None:
    """Show `text` on standard output now, as `printable` text. Characters its encoding
    cannot show (an ASCII or Latin-1 terminal) become `?` instead of ending the program.
    A terminal that hung up (its window closed) takes nothing more: the chat ends in order
    (SIGHUP) instead of failing on what it still had to say."""
    encoding = sys.stdout.encoding or "utf-8"
    try:
        sys.stdout.write(printable(text).encode(encoding, errors="replace").decode(encoding))
        sys.stdout.flush()
    except OSError as exc:
        if exc.errno != errno.EIO:
            raise
        detach_output()


def detach_output() -> None:
    """Send whatever is still written to standard output and error nowhere: the terminal
    hung up, or the pipe's reader left, and the program still has to end in order."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        try:
            os.dup2(devnull, stream.fileno())
        except (AttributeError, ValueError, OSError):  # closed, or not a real file
            continue
    os.close(devnull)


def install_interrupt(loop: asyncio.AbstractEventLoop, on_interrupt: Callable[[], object]) -> None:
    """Ctrl-C calls `on_interrupt` instead of raising KeyboardInterrupt."""
    try:
        loop.add_signal_handler(signal.SIGINT, on_interrupt)
    except (NotImplementedError, RuntimeError):  # pragma: no cover - non-Unix
        logger.debug("no SIGINT handler on this platform")


ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
"""`kill` and a closed terminal: the chat ends, but in order (running tools are stopped)."""


def install_ending(
    loop: asyncio.AbstractEventLoop, on_end: Callable[[signal.Signals], object]
) -> None:
    """SIGTERM and SIGHUP call `on_end(signal)` instead of ending the process on the spot,
    which would leave the code a tool runs (its own process group) running on its own."""
    for number in ENDING_SIGNALS:
        try:
            loop.add_signal_handler(number, on_end, number)
        except (NotImplementedError, RuntimeError):  # pragma: no cover - non-Unix
            logger.debug("no %s handler on this platform", number.name)
