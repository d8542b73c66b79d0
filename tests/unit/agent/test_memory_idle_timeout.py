"""The memory model's idle timeout: the setting, its validation, the constructor's
keyword, the faces that pass it on, and the one-line reason of an idle attempt."""

from __future__ import annotations

from pathlib import Path

import anthropic
import httpx2
import pytest

from app.agent.config.settings import Settings, SettingsError, load_settings
from app.agent.memory_bridge.completion import AnthropicCompletion
from app.agent.runtime import Runtime
from app.tui.bridge import Bridge
from memory.extract.completion import CompletionError


def _error(**kw: object) -> str:
    flags = kw.pop("flags", None)
    with pytest.raises(SettingsError) as ei:
        load_settings(flags)  # type: ignore[arg-type]
    msg = str(ei.value)
    assert msg and "\n" not in msg
    return msg


def test_the_setting_defaults_to_60_s_and_comes_from_the_environment_or_the_config_file(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert load_settings().memory_idle_timeout == 60.0
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.toml").write_text("memory_idle_timeout = 90\n", encoding="utf-8")
    assert load_settings().memory_idle_timeout == 90.0
    monkeypatch.setenv("PSEUDOCLAUDE_MEMORY_IDLE_TIMEOUT", "0.5")
    assert load_settings().memory_idle_timeout == 0.5


@pytest.mark.parametrize(
    ("toml", "words"),
    [
        ("memory_idle_timeout = true", "not a boolean"),
        ("memory_idle_timeout = 0", "greater than 0"),
        ("memory_idle_timeout = -5", "greater than 0"),
        ("memory_idle_timeout = inf", "finite number"),
        ('memory_idle_timeout = "soon"', "valid number"),
    ],
)
def test_a_bad_config_value_is_refused_in_one_line(isolated_home: Path, toml: str, words: str) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    path = isolated_home / "config.toml"
    path.write_text(toml + "\n", encoding="utf-8")
    msg = _error()
    assert f"key 'memory_idle_timeout' in {path}" in msg and words in msg, msg


@pytest.mark.parametrize("value", ["0", "-1", "nan", "soon"])
def test_a_bad_environment_value_is_refused_in_one_line(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("PSEUDOCLAUDE_MEMORY_IDLE_TIMEOUT", value)
    assert "environment variable PSEUDOCLAUDE_MEMORY_IDLE_TIMEOUT" in _error()


@pytest.mark.parametrize("value", [True, 0, -1.0, float("inf"), float("nan")])
def test_the_constructor_refuses_a_bad_idle_timeout(value: float) -> None:
    with pytest.raises(ValueError, match="idle_timeout must be a positive number of seconds"):
        AnthropicCompletion("m", idle_timeout=value)


def test_every_read_waits_at_most_the_idle_timeout_and_connecting_keeps_the_sdks_bound() -> None:
    assert AnthropicCompletion("m").idle_timeout == 60.0
    long = AnthropicCompletion("m", idle_timeout=60)._timeout()
    assert (long.read, long.write, long.pool, long.connect) == (60.0, 60.0, 60.0, 5.0)
    short = AnthropicCompletion("m", idle_timeout=0.5)._timeout()
    assert (short.read, short.connect) == (0.5, 0.5)


def _api_timeout(cause: Exception) -> anthropic.APITimeoutError:
    err = anthropic.APITimeoutError(request=httpx2.Request("POST", "http://127.0.0.1/v1/messages"))
    err.__cause__ = cause
    return err


@pytest.mark.parametrize(
    ("err", "reason"),
    [
        (httpx2.ReadTimeout("x"), "no data from the memory model for 60 s"),  # mid-stream: bare
        (_api_timeout(httpx2.ReadTimeout("x")), "no data from the memory model for 60 s"),  # no headers
        (_api_timeout(httpx2.WriteTimeout("x")), "no data from the memory model for 60 s"),
        (_api_timeout(httpx2.ConnectTimeout("x")), "no connection to the memory model within 5 s"),
        (_api_timeout(httpx2.PoolTimeout("x")), "no connection to the memory model within 5 s"),
    ],
)
def test_an_idle_attempt_is_retryable_with_a_one_line_reason(err: Exception, reason: str) -> None:
    failure = AnthropicCompletion("m")._failure(err)
    assert isinstance(failure, CompletionError)
    assert (str(failure), failure.retryable) == (reason, True)


def test_a_stream_broken_mid_way_is_a_retryable_attempt() -> None:
    failure = AnthropicCompletion("m")._failure(httpx2.RemoteProtocolError("peer closed connection"))
    assert (str(failure), failure.retryable) == (
        "the memory model's stream broke: peer closed connection",
        True,
    )


def test_other_failures_keep_their_own_reason() -> None:
    failure = AnthropicCompletion("m")._failure(ValueError("odd"))
    assert (str(failure), failure.retryable) == ("ValueError: odd", False)


def test_the_apps_memory_model_gets_the_setting(tmp_path: Path) -> None:
    bridge = Bridge(Settings(memory_idle_timeout=7.5), tmp_path, lambda m: None, None)  # type: ignore[arg-type]
    completion = bridge._memory_completion()
    assert isinstance(completion, AnthropicCompletion) and completion.idle_timeout == 7.5


async def test_the_runtimes_memory_model_gets_the_setting_at_start_and_when_memory_is_turned_on(
    ws: Path,
) -> None:
    on = Runtime(Settings(memory_mode="auto", memory_idle_timeout=2.5), ws)
    assert (
        isinstance(on.manager.completion, AnthropicCompletion) and on.manager.completion.idle_timeout == 2.5
    )
    await on.close()
    off = Runtime(Settings(memory_mode="off", memory_idle_timeout=3.5), ws)
    assert off.manager.completion is None
    try:
        await off.set_memory_mode("review")
        completion = off.manager.completion
        assert isinstance(completion, AnthropicCompletion) and completion.idle_timeout == 3.5
    finally:
        await off.close()
