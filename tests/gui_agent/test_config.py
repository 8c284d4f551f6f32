"""Settings: defaults < TOML file < GUI_AGENT_* variables < command-line flags."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gui_agent.config import AppConfig, load_config
from gui_agent.exceptions import ConfigError


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "gui-agent.toml"
    path.write_text(text)
    return path


def test_the_defaults_are_safe_and_local() -> None:
    config = load_config(None, env={})
    assert config == AppConfig()
    assert (config.host, config.port, config.share, config.insecure_no_auth) == (
        "127.0.0.1",
        7860,
        False,
        False,
    )
    assert config.models == () and config.log_level == "INFO"


def test_a_toml_file_sets_values(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
host = "0.0.0.0"
port = 8000
root_path = "/chat/"
models = ["openai:gpt-4o-mini", "local:smollm2"]
data_dir = "~/gui-agent-data"
auth_file = "users.json"
trusted_proxy_header = "X-Forwarded-User"
retention_days = 30
token_hours = 168
log_level = "debug"
share = true
""",
    )
    config = load_config(path, env={})
    assert config.host == "0.0.0.0" and config.port == 8000
    assert config.root_path == "/chat"
    assert config.models == ("openai:gpt-4o-mini", "local:smollm2")
    assert config.data_dir == Path("~/gui-agent-data").expanduser()
    assert config.auth_file == Path("users.json")
    assert config.trusted_proxy_header == "X-Forwarded-User"
    assert config.retention_days == 30 and config.log_level == "DEBUG" and config.share
    assert config.token_hours == 168
    assert AppConfig().token_hours == 12  # (the default)


def test_a_single_model_key_is_accepted(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, 'model = "anthropic:claude-sonnet-4-5"\n'), env={})
    assert config.models == ("anthropic:claude-sonnet-4-5",)


def test_environment_variables_override_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, 'port = 8000\nmodels = ["local:smollm2"]\nhost = "127.0.0.1"\n')
    env = {
        "GUI_AGENT_PORT": "9000",
        "GUI_AGENT_MODEL": "openai:gpt-4o, scripted:echo",
        "GUI_AGENT_SHARE": "yes",
        "GUI_AGENT_INSECURE_NO_AUTH": "0",
        "GUI_AGENT_RETENTION_DAYS": "7",
        "GUI_AGENT_TOKEN_HOURS": "2",
        "GUI_AGENT_WORKSPACE_ROOT": "/srv/work",
        "GUI_AGENT_HOST": "",  # empty means unset: the file's value stays
    }
    config = load_config(path, env=env)
    assert config.port == 9000
    assert config.models == ("openai:gpt-4o", "scripted:echo")
    assert config.share is True and config.insecure_no_auth is False
    assert config.retention_days == 7 and config.workspace_root == Path("/srv/work")
    assert config.token_hours == 2
    assert config.host == "127.0.0.1"


def test_the_config_file_can_be_named_by_a_variable(tmp_path: Path) -> None:
    path = write(tmp_path, "port = 8123\n")
    assert load_config(None, env={"GUI_AGENT_CONFIG": str(path)}).port == 8123


def test_flags_override_everything_and_none_means_not_given() -> None:
    config = load_config(None, env={"GUI_AGENT_PORT": "9000", "GUI_AGENT_HOST": "::1"})
    merged = config.with_overrides(port=7000, host=None, models=["openai:gpt-4o"], data_dir=None)
    assert merged.port == 7000 and merged.host == "::1"
    assert merged.models == ("openai:gpt-4o",)
    assert config.with_overrides(port=None) is config


def test_a_config_cannot_be_changed_in_place() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        AppConfig().port = 1  # type: ignore[misc]


@pytest.mark.parametrize(
    ("env", "words"),
    [
        ({"GUI_AGENT_PORT": "eighty"}, ["port", "GUI_AGENT_PORT"]),
        ({"GUI_AGENT_PORT": "70000"}, ["port", "0-65535"]),
        ({"GUI_AGENT_SHARE": "maybe"}, ["share", "GUI_AGENT_SHARE"]),
        ({"GUI_AGENT_LOG_LEVEL": "loud"}, ["log_level", "INFO"]),
        ({"GUI_AGENT_RETENTION_DAYS": "0"}, ["retention_days"]),
        ({"GUI_AGENT_TOKEN_HOURS": "0"}, ["token_hours", "1 to 720"]),
        ({"GUI_AGENT_TOKEN_HOURS": "721"}, ["token_hours", "GUI_AGENT_TOKEN_HOURS"]),
        ({"GUI_AGENT_TOKEN_HOURS": "12h"}, ["token_hours", "12h"]),
        ({"GUI_AGENT_ROOT_PATH": "chat"}, ["root_path"]),
        ({"GUI_AGENT_TRUSTED_PROXY_HEADER": "X Bad"}, ["trusted_proxy_header"]),
        ({"GUI_AGENT_MODEL": "gpt-4o"}, ["models", "GUI_AGENT_MODEL"]),
        ({"GUI_AGENT_ALLOWED_HOSTS": "a.example, b.example:8443"}, ["allowed_hosts", "port"]),
    ],
)
def test_a_bad_variable_names_the_key_and_the_variable(
    env: dict[str, str], words: list[str]
) -> None:
    with pytest.raises(ConfigError) as error:
        load_config(None, env=env)
    for word in words:
        assert word in str(error.value)


def test_a_bad_file_value_names_the_key_and_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, 'port = "8000"\n')
    with pytest.raises(ConfigError) as error:
        load_config(path, env={})
    assert "port" in str(error.value) and str(path) in str(error.value)


def test_unknown_keys_are_refused_with_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as error:
        load_config(write(tmp_path, "prot = 8000\n"), env={})
    assert "prot" in str(error.value) and "port" in str(error.value)


def test_a_broken_or_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(write(tmp_path, "port = \n"), env={})
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "absent.toml", env={})


def test_bad_flags_are_refused_too() -> None:
    with pytest.raises(ConfigError, match=r"port \(from flag\)"):
        AppConfig().with_overrides(port=-1)
    with pytest.raises(ConfigError, match="unknown setting"):
        AppConfig().with_overrides(colour="blue")
    with pytest.raises(ConfigError, match="port"):
        AppConfig(port=True)


def test_allowed_hosts_come_as_a_list_or_comma_separated_and_are_normalised(
    tmp_path: Path,
) -> None:
    env = {"GUI_AGENT_ALLOWED_HOSTS": " Chat.Example.com., *.Team.Example.org,,[::1], 10.0.0.5 "}
    assert load_config(None, env=env).allowed_hosts == (
        "chat.example.com",
        "*.team.example.org",
        "::1",
        "10.0.0.5",
    )
    path = write(tmp_path, 'allowed_hosts = ["chat.example.com", "CHAT.example.com"]\n')
    assert load_config(path, env={}).allowed_hosts == ("chat.example.com",)
    assert AppConfig().with_overrides(allowed_hosts="a.example,b.example").allowed_hosts == (
        "a.example",
        "b.example",
    )
    assert AppConfig().allowed_hosts == ()


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ("https://chat.example.com", "without http://"),
        ("chat.example.com/chat", "without http://"),
        ("chat.example.com:443", "without a port"),
        ("*", "only as the first label"),
        ("chat.*.example.com", "only as the first label"),
        ("*.10.0.0.1", "not an address"),
        ("bücher.example", "xn--"),
        ("chat example.com", "such as chat.example.com"),
        ("-chat.example.com", "such as chat.example.com"),
    ],
)
def test_a_malformed_allowed_host_stops_startup_saying_what_is_wrong(entry: str, why: str) -> None:
    with pytest.raises(ConfigError) as error:
        load_config(None, env={"GUI_AGENT_ALLOWED_HOSTS": f"chat.example.com,{entry}"})
    message = str(error.value)
    assert message.startswith("allowed_hosts (from GUI_AGENT_ALLOWED_HOSTS): ")
    assert repr(entry) in message and why in message
