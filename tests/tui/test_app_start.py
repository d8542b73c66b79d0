"""Start-up: the first frame comes before the SDK import; no credentials still gives a working app."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.fakeapi import FakeAnthropic
from tests.tui.conftest import chat_texts, wait_ready, wait_until
from widgets.card_editor import CardEditor

ROOT = Path(__file__).resolve().parents[2]

_FIRST_FRAME_PROBE = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from app.tui import PseudoClaudeApp

    seen = {}

    class Probe(PseudoClaudeApp):
        def _after_first_frame(self):
            seen["anthropic_at_first_frame"] = "anthropic" in sys.modules
            seen["runtime_at_first_frame"] = "app.runtime" in sys.modules
            # What costs more than the rest of the first frame waits for it too: the settings'
            # validation (pydantic), the memory core's contracts, the chat's Markdown.
            seen["slow_imports_at_first_frame"] = sorted(
                m for m in ("pydantic", "pydantic_settings", "memory.model", "markdown_it", "yaml")
                if m in sys.modules
            )
            seen["settings_at_first_frame"] = self.settings is not None
            super()._after_first_frame()

    async def main():
        # The command line's flags, as app.cli passes them: the app loads the settings itself.
        app = Probe({"model": "claude-probe-1"}, Path(sys.argv[1]))
        async with app.run_test(size=(120, 40)) as pilot:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 30
            while not (app.bridge.opened and app.ready):
                assert loop.time() < deadline, "the runtime never opened"
                await pilot.pause(0.02)
            seen["anthropic_when_ready"] = "anthropic" in sys.modules
            seen["prompt_enabled_when_ready"] = app.prompt.disabled_reason is None
            seen["model_when_ready"] = app.settings.model
            await app.bridge.close(0)
        print(seen)

    asyncio.run(main())
    """
)


def test_first_frame_is_painted_before_the_sdk_the_settings_and_markdown_are_imported(server: FakeAnthropic, ws: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")} | server.env()
    proc = subprocess.run([sys.executable, "-c", _FIRST_FRAME_PROBE, str(ws)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=90)
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


async def test_without_credentials_the_app_starts_shows_the_panel_and_says_how_to_configure(make_app, ws: Path) -> None:
    app = make_app()  # no server: no ANTHROPIC_* in the environment
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        text = "\n".join(chat_texts(app))
        for needed in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "config.toml"):
            assert needed in text
        assert app.panel.display and app.panel_shows >= 1
        assert app._status_note == "no model configured"
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
        await wait_until(pilot, lambda: any(p.name.startswith("project_knowledge_") for p in cards.glob("*.md")))
        await wait_until(pilot, lambda: any("saved new project card" in t for t in chat_texts(app)))
        await wait_until(pilot, lambda: any(c.title.startswith("The build command") for c in app.panel.state.project))
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
    import app.tui
    from app.cli import main

    opened: list[tuple[Path, str | None, bool]] = []

    def fake_run_app(settings, workspace, *, resume, continue_latest) -> int:
        opened.append((workspace, resume, continue_latest))
        return 0

    monkeypatch.setattr(app.tui, "run_app", fake_run_app)
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    assert main(["-C", str(ws), "--continue"]) == 0
    assert opened == [(ws.resolve(), None, True)]
    assert main(["-C", str(ws), "--status"]) == 0  # the status text on request, even on a terminal
    assert f"workspace {ws.resolve()}" in capsys.readouterr().out
    monkeypatch.setattr("sys.stdout.isatty", lambda: False)  # a pipe: nothing to draw on
    assert main(["-C", str(ws)]) == 0
    assert "ANTHROPIC_API_KEY" in capsys.readouterr().out and len(opened) == 1


async def test_the_setup_help_is_one_short_item_per_line_in_a_setup_block_with_a_bold_heading(make_app) -> None:
    from app.bridge import CONFIGURE_HELP

    lines = CONFIGURE_HELP.splitlines()
    assert all(len(line) <= 56 for line in lines)
    assert not any("   " in line.strip() for line in lines)  # no column alignment
    for needed in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "$PSEUDOCLAUDE_HOME/config.toml",
                   "model =", "memory_model =", "memory_mode ="):
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
    from app.tui import PseudoClaudeApp

    home = Path(os.environ["PSEUDOCLAUDE_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("max_iterations = 0\n", encoding="utf-8")
    app = PseudoClaudeApp({"model": None}, ws)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.return_code == 2, what="the app to end")
    assert app.startup_error is not None and "\n" not in app.startup_error
    assert "config.toml" in app.startup_error and "max_iterations" in app.startup_error


def test_run_app_prints_the_bad_setting_on_stderr_and_returns_2(ws: Path, monkeypatch, capsys) -> None:
    import app.tui
    from app.tui import PseudoClaudeApp, run_app

    home = Path(os.environ["PSEUDOCLAUDE_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text('memory_mode = "sometimes"\n', encoding="utf-8")
    run = PseudoClaudeApp.run
    monkeypatch.setattr(app.tui.PseudoClaudeApp, "run", lambda self: run(self, headless=True))
    assert run_app({"model": None}, ws) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("pseudoclaude: ") and "memory_mode" in err[0]


async def test_a_settings_warning_is_shown_in_the_chat(server: FakeAnthropic, ws: Path, monkeypatch) -> None:
    from app.tui import PseudoClaudeApp

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
