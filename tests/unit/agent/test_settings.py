"""Settings: flags > PSEUDOCLAUDE_* environment > $PSEUDOCLAUDE_HOME/config.toml > defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agent.config.settings import Settings, SettingsError, config_file_path, load_settings


def write_config(home: Path, text: str) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults(isolated_home: Path) -> None:
    s = load_settings()
    assert s.model == "claude-sonnet-5-5"
    assert s.memory_model == "claude-haiku-5-5"
    assert s.memory_mode == "auto"
    assert s.max_iterations == 50
    assert s.memory_wait == 15.0
    assert s.max_tokens == 16000
    assert s.bash_timeout == 120.0
    assert s.warnings == []


# (field, config.toml literal, env value, flag value, expected from file, from env, from flag)
LAYERS = [
    ("model", '"file-model"', "env-model", "flag-model", "file-model", "env-model", "flag-model"),
    ("memory_model", '"file-mm"', "env-mm", "flag-mm", "file-mm", "env-mm", "flag-mm"),
    ("memory_mode", '"review"', "off", "auto", "review", "off", "auto"),
    ("max_iterations", "7", "8", 9, 7, 8, 9),
    ("memory_wait", "0.5", "2.25", 0.0, 0.5, 2.25, 0.0),
    ("max_tokens", "1000", "2000", 3000, 1000, 2000, 3000),
    ("bash_timeout", "1", "2.5", 3.5, 1.0, 2.5, 3.5),
    ("checkpoint_max_mb", "100", "200", 300, 100, 200, 300),
    ("checkpoint_max_days", "7", "0.5", 90, 7.0, 0.5, 90.0),
]


@pytest.mark.parametrize(("name", "toml", "env", "flag", "from_file", "from_env", "from_flag"), LAYERS)
def test_precedence_flag_env_file_default(
    isolated_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    toml: str,
    env: str,
    flag: object,
    from_file: object,
    from_env: object,
    from_flag: object,
) -> None:
    default = Settings.model_fields[name].default
    assert getattr(load_settings(), name) == default

    write_config(isolated_home, f"{name} = {toml}\n")
    assert getattr(load_settings(), name) == from_file

    monkeypatch.setenv(f"PSEUDOCLAUDE_{name.upper()}", env)
    assert getattr(load_settings(), name) == from_env
    assert getattr(load_settings({name: None}), name) == from_env  # None = flag not given

    assert getattr(load_settings({name: flag}), name) == from_flag


def test_env_names_are_case_insensitive_and_empty_means_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("pseudoclaude_memory_mode", "review")
    assert load_settings().memory_mode == "review"
    monkeypatch.delenv("pseudoclaude_memory_mode")
    monkeypatch.setenv("PSEUDOCLAUDE_MODEL", "")
    assert load_settings().model == "claude-sonnet-5-5"


def test_config_path_follows_pseudoclaude_home_at_load_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    write_config(a, 'model = "from-a"\n')
    write_config(b, 'model = "from-b"\n')
    monkeypatch.setenv("PSEUDOCLAUDE_HOME", str(a))
    assert load_settings().model == "from-a"
    assert config_file_path() == a / "config.toml"
    monkeypatch.setenv("PSEUDOCLAUDE_HOME", str(b))
    assert load_settings().model == "from-b"
    assert Settings().model == "from-b"
    # An explicit home beats the environment variable.
    assert load_settings(home=a).model == "from-a"


def test_missing_config_file_is_fine(tmp_path: Path) -> None:
    assert load_settings(home=tmp_path / "nowhere").model == "claude-sonnet-5-5"


def test_unknown_config_keys_are_reported_not_fatal(isolated_home: Path) -> None:
    path = write_config(isolated_home, 'model = "m"\nfoo = 1\n[ui]\ntheme = "dark"\n')
    s = load_settings()
    assert s.model == "m"
    assert s.warnings == [f"{path}: unknown key 'foo' ignored", f"{path}: unknown key 'ui' ignored"]
    assert Settings().warnings == s.warnings  # direct construction reports them too
    assert not hasattr(s, "foo")


def one_line_error(**kw: object) -> str:
    flags = kw.pop("flags", None)
    with pytest.raises(SettingsError) as ei:
        load_settings(flags, **kw)  # type: ignore[arg-type]
    msg = str(ei.value)
    assert msg and "\n" not in msg
    return msg


def test_invalid_toml_names_the_file(isolated_home: Path) -> None:
    path = write_config(isolated_home, "model = \n")
    msg = one_line_error()
    assert str(path) in msg and "invalid TOML" in msg and "line 1" in msg


def test_non_utf8_config_names_the_file(isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True)
    (isolated_home / "config.toml").write_bytes(b'model = "\xff"\n')
    assert str(isolated_home / "config.toml") in one_line_error()


def test_config_that_is_a_folder_is_an_error(isolated_home: Path) -> None:
    (isolated_home / "config.toml").mkdir(parents=True)
    assert "not a regular file" in one_line_error()


@pytest.mark.parametrize(
    ("toml", "key", "words"),
    [
        ('memory_mode = "sometimes"', "memory_mode", "'auto', 'review' or 'off'"),
        ("max_iterations = 0", "max_iterations", "greater than or equal to 1"),
        ("max_tokens = 0", "max_tokens", "greater than 0"),
        ("memory_wait = -1", "memory_wait", "greater than or equal to 0"),
        ("bash_timeout = 0", "bash_timeout", "greater than 0"),
        ('max_iterations = "lots"', "max_iterations", "valid integer"),
        ("max_iterations = true", "max_iterations", "not a boolean"),
        ('model = "  "', "model", "at least 1 character"),
        ("memory_wait = inf", "memory_wait", "finite number"),
    ],
)
def test_invalid_config_value_names_file_and_key(
    isolated_home: Path, toml: str, key: str, words: str
) -> None:
    path = write_config(isolated_home, toml + "\n")
    msg = one_line_error()
    assert f"key '{key}' in {path}" in msg
    assert words in msg


def test_invalid_env_value_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PSEUDOCLAUDE_MAX_ITERATIONS", "many")
    msg = one_line_error()
    assert "environment variable PSEUDOCLAUDE_MAX_ITERATIONS" in msg and "'many'" in msg
    monkeypatch.delenv("PSEUDOCLAUDE_MAX_ITERATIONS")
    monkeypatch.setenv("PSEUDOCLAUDE_MEMORY_WAIT", "soon")
    assert "PSEUDOCLAUDE_MEMORY_WAIT" in one_line_error()
    monkeypatch.setenv("PSEUDOCLAUDE_MEMORY_WAIT", "1")
    monkeypatch.setenv("PSEUDOCLAUDE_MEMORY_MODE", "sometimes")
    assert "PSEUDOCLAUDE_MEMORY_MODE" in one_line_error()


def test_invalid_flag_names_the_flag() -> None:
    assert "flag --max-iterations" in one_line_error(flags={"max_iterations": 0})
    assert "flag --memory:" in one_line_error(flags={"memory_mode": "sometimes"})
    assert "flag --memory-wait" in one_line_error(flags={"memory_wait": "x"})
    both = one_line_error(flags={"max_iterations": 0, "memory_mode": "x"})
    assert "--max-iterations" in both and "--memory" in both


def test_error_names_the_source_that_won(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A bad value overridden by a higher source is not an error; the winning bad one is named.
    write_config(isolated_home, "max_iterations = 0\n")
    monkeypatch.setenv("PSEUDOCLAUDE_MAX_ITERATIONS", "3")
    assert load_settings().max_iterations == 3
    monkeypatch.setenv("PSEUDOCLAUDE_MAX_ITERATIONS", "-3")
    msg = one_line_error()
    assert "PSEUDOCLAUDE_MAX_ITERATIONS" in msg and "config.toml" not in msg


def test_unknown_flag_key_is_a_programming_error() -> None:
    with pytest.raises(TypeError, match="memory"):
        load_settings({"memory": "off"})
    assert load_settings({"workspace": None}).model  # None values are "not given", whatever the key


def test_secrets_and_home_are_not_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    monkeypatch.setenv("PSEUDOCLAUDE_API_KEY", "sk-ant-secret")
    dumped = load_settings().model_dump()
    assert set(dumped) == {
        "model",
        "memory_model",
        "web_model",
        "memory_mode",
        "max_iterations",
        "memory_wait",
        "max_tokens",
        "bash_timeout",
        "context_window",
        "compact_at",
        "offload_bytes",
        "prices",
        "consolidate_after",
        "consolidate_review",
        "user_memory_remote",
        "memory_worker",
        "memory_idle_timeout",
        "mcp_start_timeout",
        "mcp_call_timeout",
        "checkpoint_max_mb",
        "checkpoint_max_days",
        "tool_input_max_bytes",
        "permission_mode",
        "thinking",
        "thinking_budget",
    }
    assert "sk-ant-secret" not in repr(dumped)


def test_dotenv_in_the_current_folder_is_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".env").write_text("PSEUDOCLAUDE_MODEL=from-dotenv\n")
    monkeypatch.chdir(tmp_path)
    assert load_settings().model == "claude-sonnet-5-5"


def test_invalid_value_holding_a_secret_is_redacted_in_the_error(monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-ant-api03-" + "A1b2C3d4" * 8
    monkeypatch.setenv("PSEUDOCLAUDE_MEMORY_MODE", key)  # a key pasted into the wrong variable
    msg = one_line_error()
    assert "PSEUDOCLAUDE_MEMORY_MODE" in msg and key not in msg and "A1b2C3d4A1b2" not in msg
    monkeypatch.setenv("PSEUDOCLAUDE_MEMORY_MODE", "http://bob:hunter2secret@example.com\x1b]0;x\x07")
    msg = one_line_error()
    assert "hunter2secret" not in msg and "\x1b" not in msg


@pytest.mark.parametrize(
    "line",
    [
        "checkpoint_max_mb = 0",
        "checkpoint_max_mb = true",
        "checkpoint_max_days = 0",
        "checkpoint_max_days = nan",
    ],
)
def test_checkpoint_bounds_must_be_positive_numbers(isolated_home: Path, line: str) -> None:
    write_config(isolated_home, line + "\n")
    with pytest.raises(SettingsError, match="checkpoint_max_"):
        load_settings()
