"""Session cost (app/agent/model/pricing.py): per-model prices, overrides from settings, memory
calls counted."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agent.config.settings import SettingsError, load_settings
from app.agent.memory_bridge.completion import AnthropicCompletion
from app.agent.model.pricing import PRICES, CostMeter, ModelPrice, cost, format_usage, price_for
from app.agent.model.provider import Usage
from memory.extract.completion import CompletionRequest
from tests.support.fakeapi import FakeAnthropic, text

M = 1_000_000


def test_the_settings_default_models_have_prices() -> None:
    s = load_settings()
    assert price_for(s.model) is not None
    assert price_for(s.memory_model) is not None


def test_cost_adds_input_output_and_cache_tokens_at_their_own_prices() -> None:
    p = PRICES["claude-sonnet-4-5"]
    usage = Usage(input_tokens=M, output_tokens=M, cache_read_input_tokens=M, cache_creation_input_tokens=M)
    assert cost("claude-sonnet-4-5", usage) == pytest.approx(
        p.input + p.output + p.cache_read + p.cache_write
    )
    assert cost("claude-sonnet-4-5", Usage(input_tokens=2 * M)) == pytest.approx(6.0)


def test_a_dated_snapshot_or_latest_alias_takes_the_price_of_its_model() -> None:
    assert price_for("claude-opus-4-1-20250805") == PRICES["claude-opus-4-1"]
    assert price_for("claude-opus-4-20250514") == PRICES["claude-opus-4"]
    assert price_for("claude-3-5-haiku-latest") == PRICES["claude-3-5-haiku"]
    assert price_for("claude-opus-4-1@20250805") == PRICES["claude-opus-4-1"]
    assert price_for("claude-opus-4-10") is None  # another model, not a snapshot of opus-4


def test_an_unknown_model_has_no_cost_rather_than_a_guessed_one() -> None:
    assert cost("llama3.1:8b", Usage(input_tokens=1000, output_tokens=10)) is None
    meter = CostMeter()
    meter.add("llama3.1:8b", Usage(input_tokens=1200, output_tokens=300))
    assert meter.describe() == "1.5k tok"


def test_settings_prices_override_a_default_and_price_an_unknown_model(isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.toml").write_text(
        '[prices."claude-sonnet-4-5"]\ninput = 1.0\noutput = 2.0\n\n'
        '[prices."local-model"]\ninput = 0.5\noutput = 0.5\ncache_read = 0.0\ncache_write = 0.0\n'
    )
    s = load_settings()
    assert s.warnings == []
    sonnet = price_for("claude-sonnet-4-5", s.prices)
    assert sonnet == ModelPrice(input=1.0, output=2.0, cache_read=0.1, cache_write=1.25)  # cache from input
    assert cost("local-model", Usage(input_tokens=M, output_tokens=M), s.prices) == pytest.approx(1.0)
    assert price_for("claude-haiku-4-5", s.prices) == PRICES["claude-haiku-4-5"]  # others keep defaults


def test_a_bad_price_in_config_is_a_one_line_settings_error(isolated_home: Path) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.toml").write_text('[prices."m"]\ninput = true\noutput = 1\n')
    with pytest.raises(SettingsError) as err:
        load_settings()
    assert "prices" in str(err.value) and "\n" not in str(err.value)


def test_the_meter_sums_main_and_memory_models_and_reports_unpriced_tokens_apart() -> None:
    meter = CostMeter()
    meter.add("claude-sonnet-4-5", Usage(input_tokens=M))  # $3
    meter.add("claude-haiku-4-5", Usage(output_tokens=M))  # $5
    assert meter.usd == pytest.approx(8.0)
    assert meter.describe() == "$8.00"
    meter.add("local", Usage(input_tokens=2500))
    assert meter.describe() == "$8.00 + 2.5k tok unpriced"
    report = meter.report()
    assert report[-1] == "total: $8.00 + 2.5k tok unpriced"
    assert any(line.startswith("local:") and "no price" in line for line in report)
    assert CostMeter().describe() == "$0.00"


def test_a_turns_usage_is_one_short_status_string() -> None:
    u = Usage(
        input_tokens=1200, output_tokens=340, cache_read_input_tokens=10_000, cache_creation_input_tokens=0
    )
    assert format_usage(u) == "11.2k in · 340 out · 10k cached"
    assert format_usage(Usage(input_tokens=5, output_tokens=7)) == "5 in · 7 out"


async def test_the_memory_model_reports_each_requests_usage_for_the_cost(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with FakeAnthropic() as server:
        for k, v in server.env().items():
            monkeypatch.setenv(k, v)
        server.script(
            "mem-model",
            text("[]", usage={"input_tokens": 1234, "output_tokens": 56, "cache_read_input_tokens": 7}),
        )
        seen: list[tuple[str, Usage]] = []
        completion = AnthropicCompletion("mem-model", on_usage=lambda m, u: seen.append((m, u)))
        answer = await completion(
            CompletionRequest(system="s", prompt="p", max_tokens=100, purpose="extract")
        )
        assert not server.errors
    assert answer == "[]"
    assert [(m, u.input_tokens, u.output_tokens, u.cache_read_input_tokens) for m, u in seen] == [
        ("mem-model", 1234, 56, 7)
    ]


async def test_a_failing_usage_callback_does_not_fail_the_memory_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(model: str, usage: Usage) -> None:
        raise RuntimeError("display bug")

    with FakeAnthropic() as server:
        for k, v in server.env().items():
            monkeypatch.setenv(k, v)
        server.script("mem-model", text("ok"))
        completion = AnthropicCompletion("mem-model", on_usage=broken)
        try:
            answer = await completion(
                CompletionRequest(system="s", prompt="p", max_tokens=100, purpose="extract")
            )
        finally:
            await completion.aclose()  # on this loop: left to the collector, a later test's loop would get it
    assert answer == "ok"


def test_prices_from_the_environment_are_json_and_bad_json_is_a_one_line_error(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PSEUDOCLAUDE_PRICES", '{"proxy-model": {"input": 2, "output": 4}}')
    assert cost("proxy-model", Usage(input_tokens=M), load_settings().prices) == pytest.approx(2.0)
    monkeypatch.setenv("PSEUDOCLAUDE_PRICES", "input=2")
    with pytest.raises(
        SettingsError, match=r"^invalid environment variable PSEUDOCLAUDE_PRICES: expected JSON$"
    ):
        load_settings()
