"""Start-up: the first frame comes before the SDK import; no credentials still gives a working app."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

from textual.screen import ModalScreen

from tests.support.fakeapi import FakeAnthropic, text
from tests.tui.conftest import MODEL, chat_texts, wait_ready, wait_until
from widgets.cards.editor import CardEditor
from widgets.chat.user_block import UserBlock

ROOT = Path(__file__).resolve().parents[2]

_FIRST_FRAME_PROBE = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from app.tui.app import PseudoClaudeApp

    seen = {}

    class Probe(PseudoClaudeApp):
        def _after_first_frame(self):
            seen["anthropic_at_first_frame"] = "anthropic" in sys.modules
            seen["runtime_at_first_frame"] = "app.agent.runtime" in sys.modules
            # What costs more than the rest of the first frame waits for it too: the settings'
            # validation (pydantic), the memory core's contracts, the chat's Markdown.
            seen["slow_imports_at_first_frame"] = sorted(
                m for m in ("pydantic", "pydantic_settings", "memory.model", "markdown_it", "yaml")
                if m in sys.modules
            )
            seen["settings_at_first_frame"] = self.bridge.settings is not None
            super()._after_first_frame()

    async def main():
        # The command line's flags, as app.cli passes them: the app loads the settings itself.
        app = Probe({"model": "claude-probe-1"}, Path(sys.argv[1]))
        async with app.run_test(size=(120, 40)) as pilot:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 30
            while not (app.state.phase.opened and app.state.phase.ready):
                assert loop.time() < deadline, "the runtime never opened"
                await pilot.pause(0.02)
            seen["anthropic_when_ready"] = "anthropic" in sys.modules
            seen["prompt_enabled_when_ready"] = app.prompt.disabled_reason is None
            seen["model_when_ready"] = app.bridge.settings.model
            await app.bridge.close(0)
        print(seen)

    asyncio.run(main())
    """
)


def test_first_frame_is_painted_before_the_sdk_the_settings_and_markdown_are_imported(
    server: FakeAnthropic, ws: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")} | server.env()
    proc = subprocess.run(
        [sys.executable, "-c", _FIRST_FRAME_PROBE, str(ws)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = eval(proc.stdout.strip().splitlines()[-1])  # a dict of booleans printed by the probe
    assert seen == {
        "anthropic_at_first_frame": False,
        "runtime_at_first_frame": False,
        "anthropic_when_ready": True,
        "prompt_enabled_when_ready": True,
        "slow_imports_at_first_frame": [],
        "settings_at_first_frame": False,
        "model_when_ready": "claude-probe-1",
    }


async def test_without_credentials_the_app_starts_shows_the_panel_and_says_how_to_configure(
    make_app, ws: Path
) -> None:
    app = make_app()  # no server: no ANTHROPIC_* in the environment
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        text = "\n".join(chat_texts(app))
        for needed in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "config.toml"):
            assert needed in text
        assert app.panel.display and app.memory.panel.shows >= 1
        assert app.status_model.info.note == "no model configured"
        # A message says it again instead of being sent; no request is ever made.
        app.prompt.text = "hello"
        await pilot.press("enter")
        await wait_until(pilot, lambda: sum("ANTHROPIC_API_KEY" in t for t in chat_texts(app)) == 2)
        # Memory works offline: /remember opens the editor, Ctrl+S writes the card, the panel shows it.
        app.prompt.text = "/remember The build command is make build"
        app.prompt.submit()
        await wait_until(pilot, lambda: isinstance(app.screen, CardEditor), what="the editor")
        await pilot.press("ctrl+s")
        cards = ws / ".PseudoClaude" / "memory"
        await wait_until(
            pilot, lambda: any(p.name.startswith("project_knowledge_") for p in cards.glob("*.md"))
        )
        await wait_until(pilot, lambda: any("saved new project card" in t for t in chat_texts(app)))
        await wait_until(
            pilot, lambda: any(c.title.startswith("The build command") for c in app.panel.state.project)
        )
    # A run that cannot ask a model creates no session.
    assert not list((Path(os.environ["PSEUDOCLAUDE_HOME"]) / "sessions").glob("*.jsonl"))


async def test_a_narrow_terminal_starts_with_the_panel_hidden_and_f2_shows_it(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_ready(pilot)
        assert not app.panel.display
        await pilot.press("f2")
        await wait_until(pilot, lambda: app.panel.display)
        await pilot.press("f2")
        await wait_until(pilot, lambda: not app.panel.display)


def test_pseudoclaude_without_p_opens_the_app_on_a_terminal_and_prints_the_status_otherwise(
    ws: Path, monkeypatch, capsys
) -> None:
    import app.tui.run_app
    from app.cli.main import main

    opened: list[tuple[Path, str | None, bool]] = []

    def fake_run_app(settings, workspace, *, resume, continue_latest) -> int:
        opened.append((workspace, resume, continue_latest))
        return 0

    monkeypatch.setattr(app.tui.run_app, "run_app", fake_run_app)
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    assert main(["-C", str(ws), "--continue"]) == 0
    assert opened == [(ws.resolve(), None, True)]
    assert main(["-C", str(ws), "--status"]) == 0  # the status text on request, even on a terminal
    assert f"workspace {ws.resolve()}" in capsys.readouterr().out
    monkeypatch.setattr("sys.stdout.isatty", lambda: False)  # a pipe: nothing to draw on
    assert main(["-C", str(ws)]) == 0
    assert "ANTHROPIC_API_KEY" in capsys.readouterr().out and len(opened) == 1


async def test_the_setup_help_is_one_short_item_per_line_in_a_setup_block_with_a_bold_heading(
    make_app,
) -> None:
    from app.tui.chat.chat_screen import CONFIGURE_HELP

    lines = CONFIGURE_HELP.splitlines()
    assert all(len(line) <= 56 for line in lines)
    assert not any("   " in line.strip() for line in lines)  # no column alignment
    for needed in (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
        "$PSEUDOCLAUDE_HOME/config.toml",
        "model =",
        "memory_model =",
        "memory_mode =",
    ):
        assert sum(needed in line for line in lines) >= 1, needed
    app = make_app()
    async with app.run_test(size=(100, 40)) as pilot:  # the chat beside the panel: 58 columns
        await wait_ready(pilot)
        [block] = [b for b in app.chat.blocks if b.has_class("-setup")]
        await wait_until(pilot, lambda: block.content_region.height > 0)
        await pilot.pause()
        # Drawn without a single wrapped line: one screen row per line of text.
        assert block.content_region.height == len(lines)
        region = block.content_region
        row = app.screen._compositor.render_strips()[region.y]
        heading = [seg for seg in row if seg.text.strip() and "Setup" in seg.text]
        assert heading and all(seg.style is not None and seg.style.bold for seg in heading)
        # A stronger look than a dim note: a coloured bar and background of its own.
        assert block.styles.border_left[0] != "" and block.styles.background.a > 0


async def test_a_bad_setting_ends_the_app_after_its_first_frame_with_one_line_and_exit_2(
    ws: Path, isolated_home: Path
) -> None:
    from app.tui.app import PseudoClaudeApp

    home = Path(os.environ["PSEUDOCLAUDE_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("max_iterations = 0\n", encoding="utf-8")
    app = PseudoClaudeApp({"model": None}, ws)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.return_code == 2, what="the app to end")
    assert app.startup.error is not None and "\n" not in app.startup.error
    assert "config.toml" in app.startup.error and "max_iterations" in app.startup.error


def test_run_app_prints_the_bad_setting_on_stderr_and_returns_2(ws: Path, monkeypatch, capsys) -> None:
    import app.tui.app
    from app.tui.app import PseudoClaudeApp
    from app.tui.run_app import run_app

    home = Path(os.environ["PSEUDOCLAUDE_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text('memory_mode = "sometimes"\n', encoding="utf-8")
    run = PseudoClaudeApp.run
    monkeypatch.setattr(app.tui.app.PseudoClaudeApp, "run", lambda self: run(self, headless=True))
    assert run_app({"model": None}, ws) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("pseudoclaude: ") and "memory_mode" in err[0]


async def test_a_settings_warning_is_shown_in_the_chat(server: FakeAnthropic, ws: Path, monkeypatch) -> None:
    from app.tui.app import PseudoClaudeApp

    for k, v in server.env().items():
        monkeypatch.setenv(k, v)
    home = Path(os.environ["PSEUDOCLAUDE_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text('colour = "blue"\n', encoding="utf-8")
    app = PseudoClaudeApp({}, ws)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_ready(pilot)
            assert any("unknown key 'colour' ignored" in t for t in chat_texts(app))
    finally:
        await app.bridge.close(0.0)


# -- the prompt from the first frame: queued prompts, commands that need no model -------------------


def _hold_open(app: Any) -> asyncio.Event:
    """Hold the runtime's opening (the session, after the SDK import) until the event is set."""
    release = asyncio.Event()
    real_open = app.bridge.open

    async def held_open(**kwargs: Any) -> Any:
        await release.wait()
        return await real_open(**kwargs)

    app.bridge.open = held_open
    return release


def _hold_build(app: Any) -> threading.Event:
    """Hold the runtime's construction (in its thread) until the event is set."""
    release = threading.Event()
    real_build = app.bridge.build

    def held_build() -> None:
        assert release.wait(30), "the test never released the build"
        real_build()

    app.bridge.build = held_build
    return release


def _user_blocks(app: Any) -> list[UserBlock]:
    return [b for b in app.chat.blocks if isinstance(b, UserBlock)]


async def test_a_prompt_sent_while_connecting_is_queued_shown_pending_and_sent_when_ready(
    make_app, server: FakeAnthropic
) -> None:
    server.script(MODEL, text("The queued prompt's answer."))
    app = make_app(server, memory_mode="off")
    release = _hold_open(app)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.state.built, what="the runtime object")
        assert app.state.phase.connecting and "connecting" in app.status_model.info.note
        await pilot.press(*"hello", "enter")  # real keys, while "connecting…"
        await wait_until(pilot, lambda: len(_user_blocks(app)) == 1, what="the queued prompt in the chat")
        [queued] = _user_blocks(app)
        assert queued.text == "hello" and queued.note.startswith("queued")
        assert "1 queued" in str(app.prompt.border_subtitle) and app.prompt.text == ""
        # /help needs no model: it answers at once, while the prompt is still waiting.
        await pilot.press(*"/help", "enter")
        await wait_until(pilot, lambda: any("/remember TEXT" in t for t in chat_texts(app)), what="/help")
        assert server.requests_for(MODEL) == [] and app.state.phase.connecting
        release.set()
        await wait_until(pilot, lambda: "The queued prompt's answer." in chat_texts(app), what="the answer")
        [request] = server.requests_for(MODEL)
        assert "hello" in json.dumps(request.body["messages"][-1])
        [sent] = _user_blocks(app)
        assert sent.text == "hello" and sent.note == ""  # no longer marked queued
        assert app.prompt.notice is None and app.chat_screen.queue.items == []


async def test_prompts_queued_while_connecting_are_sent_in_order_one_turn_after_the_other(
    make_app, server: FakeAnthropic
) -> None:
    server.script(MODEL, text("First answer."), text("Second answer."))
    app = make_app(server, memory_mode="off")
    release = _hold_open(app)
    async with app.run_test(size=(120, 40)) as pilot:
        for prompt in ("first", "second"):
            app.prompt.text = prompt
            assert app.prompt.submit()
            await wait_until(pilot, lambda p=prompt: any(b.text == p for b in _user_blocks(app)))
        assert "2 queued" in str(app.prompt.border_subtitle)
        release.set()
        await wait_until(pilot, lambda: "Second answer." in chat_texts(app), what="the second answer")
        first, second = server.requests_for(MODEL)
        assert "first" in json.dumps(first.body["messages"]) and "second" not in json.dumps(
            first.body["messages"]
        )
        assert "First answer." in json.dumps(second.body["messages"])  # sent after the first turn ended
        texts = chat_texts(app)
        assert texts.index("first") < texts.index("First answer.") < texts.index("second")


async def test_memory_commands_typed_before_the_stores_are_open_run_as_soon_as_they_are(make_app) -> None:
    from widgets.pending.screen import PendingScreen

    app = make_app()
    release = _hold_build(app)
    async with app.run_test(size=(120, 40)) as pilot:
        app.prompt.text = "/pending"
        assert app.prompt.submit()
        await wait_until(pilot, lambda: any("/pending runs in a moment" in t for t in chat_texts(app)))
        assert not app.state.built and not isinstance(app.screen, PendingScreen)
        release.set()
        await wait_until(pilot, lambda: isinstance(app.screen, PendingScreen), what="the pending screen")


async def test_memory_commands_work_while_the_model_is_still_connecting(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    from widgets.cards.browser import CardBrowser

    app = make_app(server, memory_mode="off")
    release = _hold_open(app)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.state.built, what="the runtime object")
        app.prompt.text = "/remember Releases are cut from main"
        assert app.prompt.submit()
        await wait_until(pilot, lambda: isinstance(app.screen, CardEditor), what="the editor")
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: any("saved new project card" in t for t in chat_texts(app)))
        await send_now(pilot, "/memory")
        await wait_until(pilot, lambda: isinstance(app.screen, CardBrowser), what="the card browser")
        await pilot.press("escape")
        await send_now(pilot, "/undo")
        await wait_until(pilot, lambda: any("undid the last memory batch" in t for t in chat_texts(app)))
        assert app.state.phase.connecting  # all of it before the session was open
        release.set()
        await wait_ready(pilot)


async def send_now(pilot: Any, command: str) -> None:
    """A command submitted as typed (the completion list may be open on its word)."""
    app = pilot.app
    await wait_until(pilot, lambda: not isinstance(app.screen, ModalScreen), what="the chat's screen")
    app.prompt.text = command
    assert app.prompt.submit()


async def test_esc_takes_back_a_queued_prompt_into_the_prompt_and_nothing_is_sent(
    make_app, server: FakeAnthropic
) -> None:
    app = make_app(server, memory_mode="off")
    release = _hold_open(app)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press(*"draft", "enter")
        await wait_until(pilot, lambda: len(_user_blocks(app)) == 1)
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.prompt.text == "draft", what="the text back in the prompt")
        [block] = _user_blocks(app)
        assert block.note == "not sent: cancelled (back in the prompt)" and app.chat_screen.queue.items == []
        release.set()
        await wait_ready(pilot)
        await pilot.pause()
        assert app.chat_screen.turn is None and server.requests_for(MODEL) == []


async def test_without_credentials_a_queued_prompt_is_kept_and_answered_with_the_setup_help(make_app) -> None:
    from app.services.prompt_history import PromptHistory

    app = make_app()  # no key
    release = _hold_open(app)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.state.built)
        app.prompt.text = "please build it"
        assert app.prompt.submit()
        await wait_until(pilot, lambda: len(_user_blocks(app)) == 1)
        release.set()
        await wait_ready(pilot)
        await wait_until(
            pilot, lambda: _user_blocks(app)[0].note.startswith("not sent: no model is configured")
        )
        [block] = _user_blocks(app)
        assert block.text == "please build it"
        assert any("ANTHROPIC_API_KEY" in t for t in chat_texts(app))
        # Typed after the start, the same: kept in the chat and the history, the help again.
        app.prompt.text = "and test it"
        assert app.prompt.submit()
        await wait_until(pilot, lambda: len(_user_blocks(app)) == 2)
        assert _user_blocks(app)[1].text == "and test it" and _user_blocks(app)[1].note.startswith("not sent")
        # Each unsent prompt is followed by the setup help (and the start showed it once).
        await wait_until(pilot, lambda: sum("ANTHROPIC_API_KEY" in t for t in chat_texts(app)) == 3)
        assert chat_texts(app)[-2] == "and test it" and "ANTHROPIC_API_KEY" in chat_texts(app)[-1]
        history = PromptHistory(Path(os.environ["PSEUDOCLAUDE_HOME"]), app.workspace)
        await wait_until(
            pilot,
            lambda: history.load() == ["please build it", "and test it"],
            what="the prompts in the history",
        )


async def test_a_prompt_queued_before_the_trust_question_waits_for_its_answer(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    from tests.support.clitools import system_text
    from widgets.dialogs.trust_modal import TrustModal

    folder = ws / ".PseudoClaude" / "memory"
    folder.mkdir(parents=True)
    (folder / "project_knowledge_deploy.md").write_text(
        "---\ntitle: Deploy on Fridays\nsummary: ok\ntype: project_knowledge\n"
        "created: '2026-01-01T00:00:00Z'\n"
        "updated: '2026-01-01T00:00:00Z'\nsource: manual\n---\nBody.\n"
    )
    (folder / "MEMORY.md").write_text(
        "- [project_knowledge] Deploy on Fridays — ok (project_knowledge_deploy.md)\n"
    )
    server.script(MODEL, text("noted"))
    app = make_app(server, memory_mode="off")
    release = _hold_open(app)
    async with app.run_test(size=(120, 40)) as pilot:
        app.prompt.text = "hello"
        assert app.prompt.submit()
        await wait_until(pilot, lambda: len(_user_blocks(app)) == 1)
        await wait_until(pilot, lambda: isinstance(app.screen, TrustModal), what="the trust modal")
        release.set()
        await wait_until(
            pilot, lambda: not app.state.phase.connecting, what="the runtime open, the question unanswered"
        )
        await pilot.pause()
        assert isinstance(app.screen, TrustModal)
        assert (
            app.chat_screen.turn is None and len(app.chat_screen.queue.items) == 1
        )  # still queued: not before the answer
        await pilot.press("y")
        await wait_until(pilot, lambda: "noted" in chat_texts(app), what="the answer")
        assert "Deploy on Fridays" in system_text(server.requests_for(MODEL)[0])


async def test_the_empty_first_screen_says_in_one_line_what_to_try(make_app, server: FakeAnthropic) -> None:
    from widgets.chat.log import EMPTY_HINT

    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_ready(pilot)
        assert app.chat.hint_shown
        rows = [strip.text for strip in app.screen._compositor.render_strips()]
        [row] = [r for r in rows if "/help" in r and "@file" in r and "F2" in r]  # one row, not wrapped
        assert EMPTY_HINT in row
        app.prompt.text = "/help"
        assert app.prompt.submit()
        await wait_until(pilot, lambda: not app.chat.hint_shown, what="the hint to go")
        await pilot.pause()
        assert not any(EMPTY_HINT in strip.text for strip in app.screen._compositor.render_strips())
