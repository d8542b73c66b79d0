"""An unknown model (404 not_found_error) names the way to choose another in the face that shows it:
``--model`` from the shell (print mode), ``/model`` in the app (tests/tui/test_app_sessions.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agent.conversation.blocks import Message, TextBlock
from app.agent.model.provider import MODEL_COMMAND, AnthropicProvider, ErrorEvent, ModelRequest
from tests.support.clitools import MODEL, run_cli
from tests.support.fakeapi import FakeAnthropic, http_error

pytestmark = pytest.mark.timeout(60)


def _not_found() -> object:
    return http_error(404, "not_found_error", f"model: {MODEL}")


def test_print_mode_names_the_model_flag(server: FakeAnthropic, ws: Path) -> None:
    server.script(MODEL, _not_found())
    res = run_cli(server, ws, "-p", "hi", "--memory", "off")
    assert res.code == 1
    last = res.err.strip().splitlines()[-1]
    assert last.startswith("pseudoclaude: ") and "unknown model" in last
    assert "choose one with --model" in last and "/model" not in last


@pytest.mark.parametrize(
    ("provider_kw", "named", "not_named"),
    [({}, "--model", "/model"), ({"model_switch": MODEL_COMMAND}, "/model", "--model")],
)
async def test_the_provider_names_what_its_face_offers(
    server: FakeAnthropic,
    monkeypatch: pytest.MonkeyPatch,
    provider_kw: dict[str, str],
    named: str,
    not_named: str,
) -> None:
    for k, v in server.env().items():
        monkeypatch.setenv(k, v)
    server.script(MODEL, _not_found())
    provider = AnthropicProvider(**provider_kw)  # type: ignore[arg-type]
    try:
        events = [
            ev
            async for ev in provider.stream(
                ModelRequest(MODEL, [], [Message(role="user", content=[TextBlock(text="hi")])])
            )
        ]
    finally:
        await provider.aclose()
    [err] = [ev for ev in events if isinstance(ev, ErrorEvent)]
    assert "404" in err.message and f"choose one with {named}" in err.message and not_named not in err.message
