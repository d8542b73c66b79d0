"""Fixtures for the App's Pilot tests: the fake Messages API, a git workspace, an app factory and
``wait_until`` (waits on a condition with a deadline, never on a count of pauses).

Other UI tests reuse them::

    async def test_x(make_app, server):
        server.script(MODEL, text("hi"))
        app = make_app(server)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_ready(pilot)
            ...
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from textual.css.query import NoMatches
from textual.pilot import Pilot
from textual.widget import Widget

from app.agent.config.settings import Settings, load_settings
from app.tui.app import PseudoClaudeApp
from tests.support.fakeapi import FakeAnthropic

if TYPE_CHECKING:
    from app.agent.model.provider import Provider
    from memory.extract.completion import Completion
    from memory.store.fs import FS

MODEL = "claude-sonnet-5-5"
MEMORY_MODEL = "claude-haiku-5-5"


@pytest.fixture(autouse=True)
def _decisions_answer_at_once(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Pilot presses a window's answer the moment it is up, which the typed-ahead rule refuses
    (a key is an answer only once the window was seen and the typing paused). Tests about other
    things answer at once; the rule's own tests (marked ``typed_ahead``) keep the real delays."""
    if request.node.get_closest_marker("typed_ahead") is None:
        from widgets.dialogs.decision import DecisionGate

        monkeypatch.setattr(DecisionGate, "SETTLE_S", 0.0)
        monkeypatch.setattr(DecisionGate, "QUIET_S", 0.0)


async def wait_until(
    pilot: Pilot[Any], predicate: Callable[[], object], timeout: float = 10.0, what: str = ""
) -> None:
    """Let the app run until ``predicate()`` is true; fail after ``timeout`` seconds.

    A predicate that queries a widget not mounted yet (a screen pushed but not composed on a busy
    machine) is simply not true yet.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not _holds(predicate):
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what or predicate}")
        await pilot.pause(0.02)


def _holds(predicate: Callable[[], object]) -> bool:
    try:
        return bool(predicate())
    except NoMatches:
        return False


async def wait_ready(pilot: Pilot[Any], timeout: float = 20.0) -> None:
    """Until the runtime is open (the prompt sends, or says how to configure a model)."""
    app = pilot.app
    assert isinstance(app, PseudoClaudeApp)
    await wait_until(
        pilot, lambda: app.state.phase.opened and app.memory.panel.shows > 0, timeout, "the runtime to open"
    )
    await wait_until(pilot, lambda: not app.state.phase.connecting, timeout, "connecting… to end")
    # The App moves the phase, then hands the news to the chat screen: its setup note and the
    # session's history come when the screen has handled it (its cost meter is made there).
    await wait_until(pilot, lambda: app.chat_screen.cost is not None, timeout, "the chat screen to be ready")


def block_text(block: Widget) -> str:
    """A chat block's text as the user reads it (answers: all received; tools: name + result)."""
    text = getattr(block, "text", None)
    if isinstance(text, str):
        return text
    name = getattr(block, "tool_name", None)
    if name is not None:
        return f"{name} {getattr(block, 'status', '')} {getattr(block, 'result_text', '') or ''}"
    return str(getattr(block, "content", ""))


def chat_texts(app: PseudoClaudeApp) -> list[str]:
    return [block_text(b) for b in app.chat.blocks]


async def send(pilot: Pilot[Any], text: str) -> None:
    """Type ``text`` into the prompt and press Enter (once the prompt takes it: no turn running)."""
    app = pilot.app
    assert isinstance(app, PseudoClaudeApp)
    await wait_until(pilot, lambda: app.prompt.disabled_reason is None, what="the prompt to be free")
    app.prompt.focus()
    app.prompt.text = text
    app.prompt.move_cursor(app.prompt.document.end)
    words = text.split()
    if words and words[-1][0] in "/@":
        # The word under the cursor may open the completion dropdown (where Enter accepts a
        # suggestion): send as typed, as Enter does with the dropdown closed.
        assert app.prompt.submit()
        return
    await pilot.press("enter")


def build_app(
    settings: Settings | Mapping[str, object],
    workspace: Path,
    *,
    resume: str | None = None,
    continue_latest: bool = False,
    fs: FS | None = None,
    provider: Provider | None = None,
    completion: Completion | None = None,
    home: Path | None = None,
    watch_debounce_ms: int = 50,
) -> PseudoClaudeApp:
    """The App as ``run_app`` makes it, with the runtime's adapters a test replaces: ``fs`` (the
    stores' file layer: slowed or faulted), ``provider`` / ``completion`` (the models),
    ``home`` (the app's folder; default: $PSEUDOCLAUDE_HOME) and the store watcher's debounce
    (short, so tests need not wait 300 ms for it). They are the bridge's: the App's constructor
    takes what the command line gives, nothing more."""
    app = PseudoClaudeApp(settings, workspace, resume=resume, continue_latest=continue_latest)
    app.bridge.use_adapters(
        home=home, provider=provider, completion=completion, fs=fs, watch_debounce_ms=watch_debounce_ms
    )
    return app


@pytest.fixture
async def make_app(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Callable[..., PseudoClaudeApp]]:
    """``make_app(server=None, *, workspace=ws, resume=None, continue_latest=False, fs=None, **settings)``.

    With a server, the SDK's environment points at it (the real SDK, a local socket); without
    one, no credentials are configured. Retries back off by 0 s. Every app's runtime is closed
    at the end of the test even when the test fails (no memory worker outlives its test)."""
    apps: list[PseudoClaudeApp] = []
    monkeypatch.setenv("PSEUDOCLAUDE_RETRY_DELAY", "0")

    def factory(
        server: FakeAnthropic | None = None,
        *,
        workspace: Path | None = None,
        resume: str | None = None,
        continue_latest: bool = False,
        watch_debounce_ms: int = 50,
        fs: Any | None = None,
        **flags: Any,
    ) -> PseudoClaudeApp:
        if server is not None:
            for k, v in server.env().items():
                monkeypatch.setenv(k, v)
        app = build_app(
            load_settings(flags),
            (workspace or ws).resolve(),
            resume=resume,
            continue_latest=continue_latest,
            watch_debounce_ms=watch_debounce_ms,
            fs=fs,
        )
        apps.append(app)
        return app

    yield factory
    for app in apps:
        await app.bridge.close(0.0)
