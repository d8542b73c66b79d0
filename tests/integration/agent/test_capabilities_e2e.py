"""Endpoint capabilities: a refusal of structured output is remembered per endpoint on disk, and
recognised from the error's parameter only (the real SDK against the fake Messages API)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from app.agent.config.settings import load_settings
from app.agent.memory_bridge.completion import CAPABILITIES_FILE, AnthropicCompletion, Capabilities
from app.agent.runtime import Runtime
from memory.extract.completion import CompletionError, CompletionRequest
from memory.extract.prompt import OPERATIONS_SCHEMA
from tests.support.clitools import MEMORY_MODEL, MODEL, run_cli
from tests.support.fakeapi import FakeAnthropic, http_error, reject_param, text

pytestmark = pytest.mark.timeout(120)

REQUEST = CompletionRequest(purpose="extract", system="s", prompt="p", json_schema=OPERATIONS_SCHEMA)


def _capabilities_path() -> Path:
    return Path(os.environ["PSEUDOCLAUDE_HOME"]) / CAPABILITIES_FILE


def _structured(server: FakeAnthropic) -> list[bool]:
    return ["output_config" in r.body for r in server.requests_for(MEMORY_MODEL)]


def test_two_print_mode_runs_against_an_endpoint_refusing_output_config_make_one_refused_request(
    server: FakeAnthropic, ws: Path
) -> None:
    # Before: the refusal was kept in process memory only, so every print-mode run paid it again.
    server.script(MODEL, text("first answer"), text("second answer"))
    server.script(MEMORY_MODEL, reject_param("output_config", sticky=True), text("[]"), text("[]"))
    for prompt in ("first", "second"):
        res = run_cli(server, ws, "-p", prompt, "--memory-wait", "30")
        assert res.code == 0, res.err
        assert "still" not in res.err  # the memory job finished within the run
    assert _structured(server) == [True, False, False]
    path = _capabilities_path()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    [entry] = json.loads(path.read_text())["refused_structured_output"]
    assert entry["base_url"] == server.base_url.rstrip("/") and entry["model"] == MEMORY_MODEL


async def test_two_runtimes_share_the_refusal_through_the_home(
    server: FakeAnthropic, ws: Path, sdk_env: None
) -> None:
    server.script(MEMORY_MODEL, reject_param("output_config", sticky=True), text("[]"), text("[]"))
    for _ in range(2):
        rt = Runtime(load_settings({}), ws)
        try:
            completion = rt.manager.completion
            assert isinstance(completion, AnthropicCompletion)
            assert await completion(REQUEST) == "[]"
        finally:
            await rt.close()
    assert _structured(server) == [True, False, False]


async def test_a_400_whose_message_merely_contains_format_is_not_taken_as_a_refusal(
    server: FakeAnthropic, sdk_env: None
) -> None:
    # Before: any 400 mentioning "format" turned structured output off (and retried the request).
    server.script(MEMORY_MODEL, http_error(400, message="invalid date format in messages"), text("[]"))
    completion = AnthropicCompletion(MEMORY_MODEL)
    with pytest.raises(CompletionError) as info:
        await completion(REQUEST)
    assert "invalid date format" in str(info.value) and not info.value.retryable
    assert not _capabilities_path().exists()
    assert await AnthropicCompletion(MEMORY_MODEL)(REQUEST) == "[]"
    assert _structured(server) == [True, True]


async def test_a_refusal_naming_output_config_format_is_recognised(
    server: FakeAnthropic, sdk_env: None
) -> None:
    server.script(MEMORY_MODEL, reject_param("output_config.format"), text("[]"))
    assert await AnthropicCompletion(MEMORY_MODEL)(REQUEST) == "[]"
    assert _structured(server) == [True, False]
    assert Capabilities(_capabilities_path()).refuses_structured(server.base_url, MEMORY_MODEL)


async def test_a_damaged_capabilities_file_counts_as_unknown_and_is_rewritten(
    server: FakeAnthropic, sdk_env: None
) -> None:
    path = _capabilities_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"version": 1, "refused_structured_output": [{"base_url": ')  # torn
    server.script(MEMORY_MODEL, reject_param("output_config"), text("[]"), text("[]"))
    assert await AnthropicCompletion(MEMORY_MODEL)(REQUEST) == "[]"
    assert await AnthropicCompletion(MEMORY_MODEL)(REQUEST) == "[]"
    assert _structured(server) == [True, False, False]
    [entry] = json.loads(path.read_text())["refused_structured_output"]
    assert entry["model"] == MEMORY_MODEL


async def test_a_refusal_is_remembered_for_its_model_only(server: FakeAnthropic, sdk_env: None) -> None:
    server.script(MEMORY_MODEL, reject_param("output_config"), text("[]"))
    server.script("other-memory-model", text("[]"))
    assert await AnthropicCompletion(MEMORY_MODEL)(REQUEST) == "[]"
    assert await AnthropicCompletion("other-memory-model")(REQUEST) == "[]"
    [other] = server.requests_for("other-memory-model")
    assert "output_config" in other.body


async def test_an_unknown_memory_model_names_the_memory_model_setting(
    server: FakeAnthropic, sdk_env: None
) -> None:
    server.script(MEMORY_MODEL, http_error(404, "not_found_error", f"model: {MEMORY_MODEL}"))
    with pytest.raises(CompletionError) as info:
        await AnthropicCompletion(MEMORY_MODEL)(REQUEST)
    assert "404" in str(info.value) and "--memory-model" in str(info.value)
    assert "with --model" not in str(info.value) and "/model" not in str(info.value)
